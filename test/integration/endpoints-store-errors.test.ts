import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BOOTSTRAP_KEY, edgeEvent, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';

const NOW = Date.UTC(2024, 0, 1, 12, 0);
const headers = { 'x-api-key': BOOTSTRAP_KEY };

describe('log store failures', () => {
  describe('Elasticsearch unreachable', () => {
    let server: EndpointTestServer;

    beforeAll(async () => {
      // port 1 on loopback: nothing listens, the connection is refused at once
      server = await startEndpointServer({ now: NOW, elasticsearchUrl: 'http://127.0.0.1:1' });
    });

    afterAll(async () => {
      await server.close();
    });

    it.each(['/api/endpoints/query/logs.all?project=abc', '/api/endpoints/query/usage.api-counts?interval=hourly&project=abc'])('%s: 503 store_unavailable', async (url) => {
      const response = await server.app.inject({ url, headers });
      expect(response.statusCode).toBe(503);
      expect(response.json()).toMatchObject({ error: { code: 'store_unavailable' } });
      expect((response.json() as { error: { message: string } }).error.message).toMatch(/unreachable/);
    });
  });

  describe('query over QUERY_TIMEOUT_MS', () => {
    let server: EndpointTestServer;

    beforeAll(async () => {
      server = await startEndpointServer({ now: NOW, overrides: { QUERY_TIMEOUT_MS: '1' } });
      await server.index(
        'edge_logs',
        Array.from({ length: 20_000 }, (_, i) =>
          edgeEvent(`e${i}`, `2024-01-01T11:${String(30 + (i % 30)).padStart(2, '0')}:00.${String(i).padStart(6, '0')}Z`, 'abc', [
            { url: `https://p${i}.supabase.co/rest/v1/t${i}?q=${i * 7919}`, path: `/rest/v1/t${i}` },
            { url: `https://p${i}.supabase.co/auth/v1/u${i}`, path: `/auth/v1/u${i}` },
          ]),
        ),
      );
    });

    afterAll(async () => {
      await server.close();
    });

    it('504 query_timeout for a heavy aggregation', async () => {
      const url = '/api/endpoints/query/usage.api-counts?interval=minutely&project=p(1|2|3)+\\d*\\.supabase\\.co/(rest|auth)/v1/[a-z]\\d%2B';
      const response = await server.app.inject({ url, headers });
      expect(response.statusCode).toBe(504);
      expect(response.json()).toMatchObject({ error: { code: 'query_timeout' } });
    });
  });

  describe('a partition whose shard has not started yet', () => {
    let server: EndpointTestServer;

    beforeAll(async () => {
      server = await startEndpointServer({ now: NOW });
      // yesterday's partition holds the events and stays available; today's is created by each test
      await server.index('edge_logs', [
        edgeEvent('e0', '2023-12-31T23:40:00.000000Z', 'abc', [{ url: 'https://abc.supabase.co/rest/v1/t', path: '/rest/v1/t' }]),
        edgeEvent('e1', '2023-12-31T23:50:00.000000Z', 'abc', [{ url: 'https://abc.supabase.co/rest/v1/t', path: '/rest/v1/t' }]),
      ]);
    });

    afterAll(async () => {
      await server.close();
    });

    /**
     * Today's partition as the worker creates it for a new day's first event, with its shard held
     * unassigned until `release` (a new, empty primary cannot start on a node its filter excludes).
     */
    async function heldPartition(): Promise<{ release: () => Promise<void> }> {
      const index = `${server.config.INDEX_PREFIX}edge_logs-2024.01.01`;
      await server.elasticsearch.indices.create({ index, settings: { 'index.routing.allocation.require._name': 'no-such-node' }, wait_for_active_shards: 0 });
      return {
        release: async () => {
          await server.elasticsearch.indices.putSettings({ index, settings: { 'index.routing.allocation.require._name': null } });
        },
      };
    }

    afterEach(async () => {
      await server.elasticsearch.indices.delete({ index: `${server.config.INDEX_PREFIX}edge_logs-2024.01.01` }, { ignore: [404] });
    });

    // first, while no answer for this request can be in the result cache
    it('answers 503 naming the cause once the budget is spent, never the other partitions\' events alone', async () => {
      const { release } = await heldPartition();
      try {
        // Elasticsearch on its own answers 200 with the shard missing: the failure is only in _shards
        const direct = await server.elasticsearch.search({ index: `${server.config.INDEX_PREFIX}edge_logs-*`, size: 0 });
        expect(direct._shards.failed).toBe(1);
        const started = Date.now();
        const response = await server.app.inject({ url: '/api/endpoints/query/logs.all?project=abc', headers });
        expect(response.statusCode).toBe(503);
        expect(response.json()).toMatchObject({ error: { code: 'store_unavailable', message: expect.stringMatching(/not available yet/) } });
        // the budget is 1 s; generous for a loaded machine, but far from the 30 s query timeout
        expect(Date.now() - started).toBeLessThan(5000);
      } finally {
        await release();
      }
    });

    it('is searched again while the shard starts, and answers 200 when it does within the retry budget', async () => {
      const { release } = await heldPartition();
      const answer = server.app.inject({ url: '/api/endpoints/query/logs.all?project=abc', headers });
      await new Promise((resolve) => setTimeout(resolve, 150));
      await release();
      const response = await answer;
      expect(response.statusCode).toBe(200);
      expect((response.json() as { result: Array<{ id: string }> }).result.map((row) => row.id).sort()).toEqual(['e0', 'e1']);
    });
  });
});
