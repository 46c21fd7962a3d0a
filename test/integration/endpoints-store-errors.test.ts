import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
});
