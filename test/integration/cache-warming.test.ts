import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsRegistry } from '../../src/metrics.ts';
import { BOOTSTRAP_KEY, edgeEvent, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';

/** 2024-06-01T12:30:00Z: the hourly window covers 11:30 on; the events below sit at 12:00-12:10. */
const NOW = Date.UTC(2024, 5, 1, 12, 30);
const WARM_PERIOD_MS = 300_000;
const rest = (n: number) => ({ url: `https://cache.supabase.co/rest/v1/t${n}`, path: `/rest/v1/t${n}` });

/** The value of one series; `series` names a histogram's _count or _sum. */
async function metricValue(name: string, labels: Record<string, string>, series = name): Promise<number> {
  const metric = (await metricsRegistry.getMetricsAsJSON()).find((m) => m.name === name);
  const values = (metric?.values ?? []) as { value: number; labels: Record<string, unknown>; metricName?: string }[];
  return values.find((v) => (v.metricName ?? name) === series && Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value ?? 0;
}

/** The result cache behind usage.api-counts, driven through the route against real Elasticsearch, with the clock moved by the test. */
describe('result cache and warming through the endpoint route', () => {
  let server: EndpointTestServer;

  const usage = async (project: string, headers: Record<string, string> = {}) => {
    const response = await server.app.inject({
      method: 'GET',
      url: '/api/endpoints/query/usage.api-counts',
      query: { interval: 'hourly', project },
      headers: { 'x-api-key': BOOTSTRAP_KEY, ...headers },
    });
    const rows = (response.json() as { result?: { total_rest_requests: number }[] }).result ?? [];
    return {
      status: response.statusCode,
      cache: response.headers['x-cache'],
      age: response.headers.age,
      restRequests: rows.reduce((sum, row) => sum + row.total_rest_requests, 0),
    };
  };

  beforeAll(async () => {
    server = await startEndpointServer({ now: NOW });
    await server.index('edge_logs', [edgeEvent('e1', '2024-06-01T12:00:00.000000Z', 'cache', rest(1))]);
  });

  afterAll(async () => {
    await server.close();
  });

  it('misses, then hits with the age of the result, while new events wait for the next warming', async () => {
    expect(await usage('cache\\.supabase')).toEqual({ status: 200, cache: 'MISS', age: '0', restRequests: 1 });
    await server.index('edge_logs', [edgeEvent('e2', '2024-06-01T12:05:00.000000Z', 'cache', rest(2))]);
    await server.clock.advance(61_000);
    expect(await usage('cache\\.supabase')).toEqual({ status: 200, cache: 'HIT', age: '61', restRequests: 1 });
  });

  it('warms the result in the background every 300 s, so readers get fresh rows from the cache', async () => {
    const okBefore = await metricValue('result_cache_warming_runs_total', { outcome: 'ok' });
    await server.clock.advance(WARM_PERIOD_MS - 61_000);
    expect(await metricValue('result_cache_warming_runs_total', { outcome: 'ok' })).toBe(okBefore + 1);
    expect(await usage('cache\\.supabase')).toEqual({ status: 200, cache: 'HIT', age: '0', restRequests: 2 });
  });

  it('keeps one cache entry per declared parameters and redaction setting', async () => {
    expect((await usage('cache\\.supabase', { 'svc-endpoint-redact-pii': 'true' })).cache).toBe('MISS');
    expect((await usage('cache\\.supabase', { 'svc-endpoint-redact-pii': 'true' })).cache).toBe('HIT');
    expect((await usage('cache\\.supabase\\.co')).cache).toBe('MISS');
  });

  it('runs one Elasticsearch query for concurrent misses on one key', async () => {
    const queries = () => metricValue('elasticsearch_query_duration_seconds', { endpoint: 'usage.api-counts' }, 'elasticsearch_query_duration_seconds_count');
    const before = await queries();
    const responses = await Promise.all(Array.from({ length: 8 }, () => usage('cache\\.supabase\\.co/rest')));
    expect(responses.map((r) => [r.status, r.cache, r.restRequests])).toEqual(Array(8).fill([200, 'MISS', 2]));
    expect((await queries()) - before).toBe(1);
  });

  it('keeps serving the cached rows when warming runs fail, until their TTL', async () => {
    // computed at the 300 s tick; from here every run fails in Elasticsearch
    expect(await usage('cache\\.supabase')).toEqual({ status: 200, cache: 'HIT', age: '0', restRequests: 2 });
    await server.elasticsearch.indices.putSettings({ index: `${server.config.INDEX_PREFIX}edge_logs*`, settings: { 'index.blocks.read': true } });
    const failedBefore = await metricValue('result_cache_warming_runs_total', { outcome: 'failed' });
    await server.clock.advance(WARM_PERIOD_MS);
    expect(await metricValue('result_cache_warming_runs_total', { outcome: 'failed' })).toBeGreaterThan(failedBefore);
    expect(await usage('cache\\.supabase')).toEqual({ status: 200, cache: 'HIT', age: '300', restRequests: 2 });
    await server.clock.advance(899_000 - WARM_PERIOD_MS);
    expect(await usage('cache\\.supabase')).toEqual({ status: 200, cache: 'HIT', age: '899', restRequests: 2 });
    await server.clock.advance(1_000);
    // past the TTL the failure reaches the caller: stale rows are never served, errors never cached
    const expired = await usage('cache\\.supabase');
    // a read-blocked index is the store's state, not the caller's fault
    expect(expired.status).toBe(503);
    expect(expired.cache).toBeUndefined();
  });
});
