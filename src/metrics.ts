/**
 * The query service's Prometheus metrics, served at /metrics.
 *
 * For the endpoint route: wrap every Elasticsearch call in
 *   const stop = elasticsearchQuerySeconds.startTimer({ endpoint: 'usage.api-counts' }); ... stop();
 * Request counts and latency per endpoint are recorded by src/plugins/metrics.ts; the result cache
 * records its own counters.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export const httpRequestsTotal = new Counter({
  name: 'http_requests_total',
  help: 'HTTP requests answered, by endpoint (saved endpoint name or route) and status code',
  labelNames: ['endpoint', 'status'] as const,
  registers: [metricsRegistry],
});

export const httpRequestDurationSeconds = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'Time from receiving a request to sending its response, by endpoint',
  labelNames: ['endpoint'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [metricsRegistry],
});

export const elasticsearchQuerySeconds = new Histogram({
  name: 'elasticsearch_query_duration_seconds',
  help: 'Time spent in Elasticsearch requests made to answer an endpoint',
  labelNames: ['endpoint'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [metricsRegistry],
});

export const cacheLookupsTotal = new Counter({
  name: 'result_cache_lookups_total',
  help: 'Result cache lookups, by result (hit or miss)',
  labelNames: ['result'] as const,
  registers: [metricsRegistry],
});

export const cacheWarmingRunsTotal = new Counter({
  name: 'result_cache_warming_runs_total',
  help: 'Background re-runs of cached results, by outcome (ok or failed)',
  labelNames: ['outcome'] as const,
  registers: [metricsRegistry],
});

export const cacheEvictionsTotal = new Counter({
  name: 'result_cache_evictions_total',
  help: 'Cached results dropped to stay within CACHE_MAX_BYTES (least recently used first)',
  registers: [metricsRegistry],
});

export const cacheBytes = new Gauge({
  name: 'result_cache_bytes',
  help: 'Bytes of JSON rows held by the result cache',
  registers: [metricsRegistry],
});

export const cacheEntries = new Gauge({
  name: 'result_cache_entries',
  help: 'Results held by the result cache',
  registers: [metricsRegistry],
});

// every labelled series exists from the start, so rates and dashboards see zeros rather than gaps
for (const result of ['hit', 'miss']) cacheLookupsTotal.inc({ result }, 0);
for (const outcome of ['ok', 'failed']) cacheWarmingRunsTotal.inc({ outcome }, 0);

export const httpRateLimitedTotal = new Counter({
  name: 'http_rate_limited_total',
  help: 'Requests refused with 429 because their API key spent its rate limit, by endpoint',
  labelNames: ['endpoint'] as const,
  registers: [metricsRegistry],
});

export const authFailuresTotal = new Counter({
  name: 'http_auth_failures_total',
  help: 'Requests under /api/ refused at authentication: unauthorized (401) or rate_limited (429, the client address failed too often)',
  labelNames: ['outcome'] as const,
  registers: [metricsRegistry],
});
for (const outcome of ['unauthorized', 'rate_limited']) authFailuresTotal.inc({ outcome }, 0);

export const sandboxScansTotal = new Counter({
  name: 'sandbox_scans_total',
  help: 'Scans run for sandboxed queries, by how the store answered: aggregation (pushed-down GROUP BY), aggregation_fallback (irregular events: pulled instead), limited (LIMIT pushed down), pulled (every matching event), request_counts, constant',
  labelNames: ['kind'],
  registers: [metricsRegistry],
});

export const sandboxScannedEventsTotal = new Counter({
  name: 'sandbox_scanned_events_total',
  help: 'Events pulled from Elasticsearch into the embedded engine by sandboxed queries',
  registers: [metricsRegistry],
});
