import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsRegistry } from '../../src/metrics.ts';
import { BOOTSTRAP_KEY, edgeEvent, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';

/** 2024-06-01T12:30:00Z: the hourly window covers 11:30 on; the event below sits at 12:00. */
const NOW = Date.UTC(2024, 5, 1, 12, 30);
const WARM_PERIOD_MS = 300_000;
const BUDGET = 5;
const DISTINCT = 30;

async function counter(name: string, labels: Record<string, string>, series = name): Promise<number> {
  const metric = (await metricsRegistry.getMetricsAsJSON()).find((m) => m.name === name);
  const values = (metric?.values ?? []) as { value: number; labels: Record<string, unknown>; metricName?: string }[];
  return values
    .filter((v) => (v.metricName ?? name) === series && Object.entries(labels).every(([k, l]) => v.labels[k] === l))
    .reduce((sum, v) => sum + v.value, 0);
}

const warmingRuns = async () =>
  (await counter('result_cache_warming_runs_total', { outcome: 'ok' })) + (await counter('result_cache_warming_runs_total', { outcome: 'failed' }));
const usageSearches = () => counter('elasticsearch_query_duration_seconds', { endpoint: 'usage.api-counts' }, 'elasticsearch_query_duration_seconds_count');

/** Many distinct usage.api-counts requests cached at once, warmed through the route on real Elasticsearch, the clock moved by the test. */
describe('warming is bounded: CACHE_WARM_MAX_ENTRIES runs per period, the most recently read first', () => {
  let server: EndpointTestServer;
  const pattern = (n: number) => `warm\\.supabase|never-${n}`;
  const usage = async (n: number) => {
    const response = await server.app.inject({
      method: 'GET',
      url: '/api/endpoints/query/usage.api-counts',
      query: { interval: 'hourly', project: pattern(n) },
      headers: { 'x-api-key': BOOTSTRAP_KEY },
    });
    return { status: response.statusCode, cache: response.headers['x-cache'], age: Number(response.headers.age) };
  };

  beforeAll(async () => {
    server = await startEndpointServer({
      now: NOW,
      overrides: { CACHE_WARM_MAX_ENTRIES: String(BUDGET), CACHE_WARM_CONCURRENCY: '2', RATE_LIMIT_PER_MINUTE: '0' },
    });
    await server.index('edge_logs', [
      edgeEvent('w1', '2024-06-01T12:00:00.000000Z', 'warm', { url: 'https://warm.supabase.co/rest/v1/t', path: '/rest/v1/t' }),
    ]);
  });

  afterAll(async () => {
    await server?.close();
  });

  it(`${DISTINCT} distinct requests lead to at most ${BUDGET} warming searches a period, and the last read are the ones warmed`, async () => {
    for (let n = 0; n < DISTINCT; n += 1) expect(await usage(n)).toMatchObject({ status: 200, cache: 'MISS' });
    await server.clock.advance(60_000);
    // read again: the last five read are the most recent
    for (let n = 0; n < DISTINCT; n += 1) expect((await usage(n)).cache).toBe('HIT');
    const runsBefore = await warmingRuns();
    const searchesBefore = await usageSearches();
    // through the whole first warming period, one step at a time
    for (let at = 60_000; at < 2 * WARM_PERIOD_MS - 10_000; at += 10_000) await server.clock.advance(10_000);
    expect((await warmingRuns()) - runsBefore).toBe(BUDGET);
    expect((await usageSearches()) - searchesBefore).toBe(BUDGET);
    // warmed during the period: younger than it; the others are as old as their first run
    const ages = [];
    for (let n = 0; n < DISTINCT; n += 1) ages.push((await usage(n)).age);
    expect(ages.slice(0, DISTINCT - BUDGET).every((age) => age === 590)).toBe(true);
    expect(ages.slice(DISTINCT - BUDGET).every((age) => age < 300)).toBe(true);
  });
});
