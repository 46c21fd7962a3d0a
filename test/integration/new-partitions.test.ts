import { once } from 'node:events';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { partitionPeriodOf } from '../../shared/config.ts';
import { partitionIndexName, periodEnd, periodStart } from '../../shared/partitions.ts';
import { SOURCE_NAMES } from '../../shared/sources.ts';
import { startIngestWorker } from '../../ingest/worker.ts';
import { SHARD_START_RETRY_MS } from '../../src/executor/elasticsearch.ts';
import { BOOTSTRAP_KEY, edgeEvent, startEndpointServer, storedTimestamp, type EndpointTestServer } from '../support/endpoint-server.ts';
import { testConfig } from '../support/stack.ts';
import {
  documentCount,
  ingestTestConfig,
  produce,
  removeKafkaTestData,
  removeTestData,
  silentLogger,
  storeClient,
  storedById,
  waitFor,
} from '../support/ingest.ts';

const DAY = 86_400_000;
const NOW = Date.UTC(2024, 0, 1, 12, 0);
const headers = { 'x-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' };
const rest = [{ url: 'https://abc.supabase.co/rest/v1/t', path: '/rest/v1/t' }];

describe("the ingest worker creates each source's current and next partition ahead of their events", () => {
  const config = ingestTestConfig('partitions-ahead', { PARTITION_PERIODS: 'auth_logs=hourly,storage_logs=weekly' });
  const client = storeClient(config);

  afterAll(async () => {
    await removeTestData(client, config.INDEX_PREFIX);
    await removeKafkaTestData(config);
    await client.close();
  });

  it("once started, every source has its current and next period's partition with a started primary and no event; the next period's first event lands in it", async () => {
    const before = Date.now();
    const worker = await startIngestWorker(config, silentLogger);
    try {
      const after = Date.now();
      // the worker's pass ran between the two: whatever boundary passed meanwhile, these two are there
      const ahead = SOURCE_NAMES.flatMap((source) => {
        const period = partitionPeriodOf(config, source);
        return [
          partitionIndexName(config.INDEX_PREFIX, source, period, after),
          partitionIndexName(config.INDEX_PREFIX, source, period, periodEnd(period, periodStart(period, before))),
        ];
      });
      const shards = (await client.cat.shards({ index: `${config.INDEX_PREFIX}*`, format: 'json', h: 'index,prirep,state' })) as {
        index: string;
        prirep: string;
        state: string;
      }[];
      for (const index of ahead) {
        expect(
          shards.filter((shard) => shard.index === index && shard.prirep === 'p').map((shard) => shard.state),
          index,
        ).toEqual(['STARTED']);
      }
      expect(await documentCount(client, `${config.INDEX_PREFIX}*`)).toBe(0);
      const metrics = await (await fetch(`http://127.0.0.1:${worker.port}/metrics`)).text();
      expect(metrics).toMatch(/^ingest_partitions_created_ahead_total\{source="edge_logs"\} 2$/m);

      const next = periodEnd('daily', periodStart('daily', after));
      const nextIndex = partitionIndexName(config.INDEX_PREFIX, 'edge_logs', 'daily', next);
      const indicesBefore = Object.keys(await client.indices.get({ index: `${config.INDEX_PREFIX}edge_logs-*` })).sort();
      expect(indicesBefore).toContain(nextIndex);
      await produce(config, 'edge_logs', [
        { id: 'first-of-next-day', timestamp: new Date(next + 1000).toISOString(), event_message: 'tomorrow', project: 'p' },
      ]);
      const stored = await waitFor('the event in its partition', async () => {
        const found = await storedById(client, `${config.INDEX_PREFIX}edge_logs-*`, 'first-of-next-day');
        return found.found ? found : undefined;
      });
      expect(stored._index).toBe(nextIndex);
      expect(Object.keys(await client.indices.get({ index: `${config.INDEX_PREFIX}edge_logs-*` })).sort()).toEqual(indicesBefore);
    } finally {
      await worker.stop();
    }
  });
});

describe('a partition that cannot hold an event yet never makes a query answer 503', () => {
  let server: EndpointTestServer;
  const partition = (ms: number) => partitionIndexName(server.config.INDEX_PREFIX, 'edge_logs', 'daily', ms);
  const made: string[] = [];

  const ask = async (payload: Record<string, string>) => {
    const response = await server.app.inject({ method: 'POST', url: '/api/endpoints/query/logs.all', headers, payload: { project: 'abc', ...payload } });
    return { status: response.statusCode, body: response.body };
  };
  /** The three kinds of query the soak saw answer 503: the saved logs.all, a pushed-down SQL aggregation and an LQL filter. */
  const queries = () => [
    ask({}),
    ask({ sql: 'select timestamp_trunc(timestamp, minute) as t, count(*) as n from edge_logs group by t order by t' }),
    ask({ lql: 'f:edge_logs m.request.path:~"^/rest"' }),
  ];

  beforeAll(async () => {
    server = await startEndpointServer({ now: NOW, overrides: { RATE_LIMIT_PER_MINUTE: '0' } });
    await server.index('edge_logs', [edgeEvent('e0', '2024-01-01T11:40:00.000000Z', 'abc', rest), edgeEvent('e1', '2024-01-01T11:50:00.000000Z', 'abc', rest)]);
  });

  afterEach(async () => {
    for (const index of made.splice(0)) await server.elasticsearch.indices.delete({ index }, { ignore: [404] });
  });

  afterAll(async () => {
    await server?.close();
  });

  /** The partition's primary unassigned, no node allowed to hold it, after it was closed and opened again (INDEX_REOPENED, not INDEX_CREATED). */
  async function heldReopened(index: string): Promise<void> {
    await server.elasticsearch.indices.close({ index, wait_for_active_shards: 0 });
    await server.elasticsearch.indices.putSettings({ index, settings: { 'index.routing.allocation.require._name': 'no-such-node' } });
    await server.elasticsearch.indices.open({ index, wait_for_active_shards: 0 });
    const [primary] = (await server.elasticsearch.cat.shards({ index, format: 'json', h: 'prirep,state,unassigned.reason' })) as Record<string, string>[];
    expect(primary).toEqual({ prirep: 'p', state: 'UNASSIGNED', 'unassigned.reason': 'INDEX_REOPENED' });
  }

  it('a partition whose primary has never started, unassigned for another reason than its creation, is left out at once', async () => {
    const index = partition(Date.UTC(2023, 11, 30));
    made.push(index);
    await server.elasticsearch.indices.create({ index, settings: { 'index.routing.allocation.require._name': 'no-such-node' }, wait_for_active_shards: 0 });
    await heldReopened(index);
    for (const answer of await Promise.all(queries())) expect(answer.status, answer.body).toBe(200);
    expect((await ask({})).body).toContain('"e1"');
  });

  it('queries sent while new partitions are being created answer 200, round after round', async () => {
    const statuses: number[] = [];
    for (let round = 0; round < 12; round += 1) {
      const day = Date.UTC(2023, 10, 1) + round * DAY;
      made.push(partition(day));
      // the first event of a new day creates its partition, as the worker's bulk write does; the queries go out with it
      const created = server.index('edge_logs', [edgeEvent(`new-${round}`, storedTimestamp(day + 60_000), 'abc', rest)]);
      const answers = await Promise.all([...queries(), ...queries()]);
      await created;
      statuses.push(...answers.map((answer) => answer.status));
    }
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    expect(statuses).toHaveLength(72);
  });
});

/**
 * An HTTP relay in front of Elasticsearch that holds the first shard listing until `onListing` has
 * run: a loaded node answering the listing late, while the shard it is asked about starts.
 */
async function startListingRelay(target: string): Promise<{ url: string; onListing?: () => Promise<void>; close(): Promise<void> }> {
  const relay: { url: string; onListing?: () => Promise<void>; close(): Promise<void> } = { url: '', close: async () => {} };
  const server = createServer((request, response) => {
    const hold = request.url?.startsWith('/_cat/shards') && relay.onListing ? relay.onListing() : Promise.resolve();
    if (request.url?.startsWith('/_cat/shards')) relay.onListing = undefined;
    void hold.then(() => {
      const upstream = httpRequest(new URL(request.url ?? '/', target), { method: request.method, headers: request.headers }, (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      });
      upstream.on('error', () => response.destroy());
      request.pipe(upstream);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  relay.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  relay.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return relay;
}

describe('a new partition whose shard starts while a loaded node lists the shards', () => {
  let relay: Awaited<ReturnType<typeof startListingRelay>>;
  let server: EndpointTestServer;

  beforeAll(async () => {
    relay = await startListingRelay(testConfig().ELASTICSEARCH_URL!);
    server = await startEndpointServer({ now: NOW, elasticsearchUrl: relay.url, overrides: { RATE_LIMIT_PER_MINUTE: '0' } });
    await server.index('edge_logs', [edgeEvent('e0', '2024-01-01T11:40:00.000000Z', 'abc', rest)]);
  });

  afterAll(async () => {
    await server?.close();
    await relay?.close();
  });

  it.each([
    ['logs.all', {}],
    ['a pushed-down SQL aggregation', { sql: 'select timestamp_trunc(timestamp, minute) as t, count(*) as n from edge_logs group by t order by t' }],
    ['an LQL filter', { lql: 'f:edge_logs m.request.path:~"^/rest"' }],
  ])('%s answers 200: the search refused for the new shard is made again once the listing finds every shard started', async (_, sandbox) => {
    const index = partitionIndexName(server.config.INDEX_PREFIX, 'edge_logs', 'daily', Date.UTC(2023, 11, 31));
    await server.elasticsearch.indices.create({ index, settings: { 'index.routing.allocation.require._name': 'no-such-node' }, wait_for_active_shards: 0 });
    try {
      relay.onListing = async () => {
        // by the time the node answers, the shard has started and the request has used up its wait for shards
        await server.elasticsearch.indices.putSettings({ index, settings: { 'index.routing.allocation.require._name': null } });
        await server.elasticsearch.cluster.health({ index, wait_for_status: 'green' });
        await new Promise((resolve) => setTimeout(resolve, SHARD_START_RETRY_MS));
      };
      const response = await server.app.inject({ method: 'POST', url: '/api/endpoints/query/logs.all', headers, payload: { project: 'abc', ...sandbox } });
      expect(response.statusCode, response.body).toBe(200);
      expect(relay.onListing).toBeUndefined();
    } finally {
      relay.onListing = undefined;
      await server.elasticsearch.indices.delete({ index }, { ignore: [404] });
    }
  });
});
