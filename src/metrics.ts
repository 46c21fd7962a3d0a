/**
 * The query service's Prometheus metrics, served at /metrics.
 *
 * For the endpoint route: wrap every Elasticsearch call in
 *   const stop = elasticsearchQuerySeconds.startTimer({ endpoint: 'usage.api-counts' }); ... stop();
 * Request counts and latency per endpoint are recorded by src/plugins/metrics.ts; the result cache
 * records its own counters.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import { CountedCounter, CountedHistogram } from './metrics-series.ts';

export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** A metric counted on the request path (src/metrics-series.ts), registered to be read at scrape time. */
function registered<T extends CountedCounter | CountedHistogram>(metric: T): T {
  metricsRegistry.registerMetric(metric as unknown as Metric);
  return metric;
}

export const httpRequestsTotal = registered(
  new CountedCounter('http_requests_total', 'HTTP requests answered, by endpoint (saved endpoint name or route) and status code', ['endpoint', 'status']),
);

export const httpRequestDurationSeconds = registered(
  new CountedHistogram('http_request_duration_seconds', 'Time from receiving a request to sending its response, by endpoint', ['endpoint'], LATENCY_BUCKETS),
);

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
  help: 'Events fetched from Elasticsearch by the scans of sandboxed queries, counted as pages arrive (a query refused as too broad counts what it fetched)',
  registers: [metricsRegistry],
});

export const sandboxEngineResultRowsTotal = new Counter({
  name: 'sandbox_engine_result_rows_total',
  help: 'Result rows the embedded engine sent to the query service (it reads no more than the row cap of each query)',
  registers: [metricsRegistry],
});

export const sandboxEngineTruncatedResultsTotal = new Counter({
  name: 'sandbox_engine_truncated_results_total',
  help: 'Engine results cut at the row cap: the query had more rows, which the engine did not read',
  registers: [metricsRegistry],
});

/** What each saved endpoint serves, and to whom: labelled by endpoint and API key id (never the key), both bounded (BoundedLabel). */
const USAGE_LABELS = ['endpoint', 'key_id'] as const;

export const endpointRequestsTotal = registered(
  new CountedCounter('endpoint_requests_total', 'Requests to the query route, by endpoint, API key id and status code (errors are the codes from 400)', [
    ...USAGE_LABELS,
    'status',
  ]),
);

export const endpointRequestDurationSeconds = registered(
  new CountedHistogram(
    'endpoint_request_duration_seconds',
    'Time from receiving a query request to sending its response, by endpoint and API key id',
    USAGE_LABELS,
    LATENCY_BUCKETS,
  ),
);

export const endpointRowsReturnedTotal = registered(
  new CountedCounter('endpoint_rows_returned_total', 'Result rows sent by the query route, by endpoint and API key id', USAGE_LABELS),
);

export const endpointBytesReturnedTotal = registered(
  new CountedCounter(
    'endpoint_bytes_returned_total',
    'Response body bytes sent by the query route (answers and errors), by endpoint and API key id',
    USAGE_LABELS,
  ),
);

/** The label value for every value past a BoundedLabel's first ones. */
export const OTHER_LABEL = 'other';

/**
 * One label's values, at most `max` distinct ones (the first seen); the rest are `other`, so callers
 * cannot grow the series without bound (each key id, each endpoint made).
 */
export class BoundedLabel {
  private readonly seen = new Set<string>();

  constructor(private readonly max: number) {}

  valueOf(value: string): string {
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.max) return OTHER_LABEL;
    this.seen.add(value);
    return value;
  }
}

/** How often the event loop is sampled; each sample is the time between two ticks of this period. */
const EVENT_LOOP_RESOLUTION_MS = 10;
const EVENT_LOOP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/**
 * `event_loop_delay_seconds`: a Prometheus histogram of how late the event loop ran a timer due
 * every 10 ms, since start (Node's perf_hooks.monitorEventLoopDelay, tick interval subtracted).
 * A request that keeps the loop busy for 50 ms shows up above the 0.05 bucket. Bucket counts are
 * read from the monitor's HDR histogram at scrape time.
 */
export function eventLoopDelayMetric(): Metric & { get(): Promise<unknown> } {
  const monitor = monitorEventLoopDelay({ resolution: EVENT_LOOP_RESOLUTION_MS });
  monitor.enable();
  const name = 'event_loop_delay_seconds';
  const delaySeconds = (nanoseconds: number) => Math.max(0, nanoseconds / 1e9 - EVENT_LOOP_RESOLUTION_MS / 1000);
  /** Samples at most `bound` late: the highest percentile whose delay is within it (binary search). */
  const countWithin = (bound: number): number => {
    if (monitor.count === 0) return 0;
    if (delaySeconds(monitor.max) <= bound) return monitor.count;
    let low = 0;
    let high = 100;
    for (let step = 0; step < 24; step += 1) {
      const middle = (low + high) / 2;
      if (delaySeconds(monitor.percentile(Math.max(middle, 1e-9))) <= bound) low = middle;
      else high = middle;
    }
    return Math.floor((monitor.count * low) / 100);
  };
  const metric = {
    name,
    help: 'How late the event loop ran a timer due every 10 ms (perf_hooks.monitorEventLoopDelay), since start',
    type: 'histogram',
    aggregator: 'sum',
    labelNames: [],
    async get() {
      const values = EVENT_LOOP_BUCKETS.map((bound) => ({ metricName: `${name}_bucket`, labels: { le: bound }, value: countWithin(bound) }));
      values.push({ metricName: `${name}_bucket`, labels: { le: '+Inf' as unknown as number }, value: monitor.count });
      const sum = monitor.count === 0 ? 0 : delaySeconds(monitor.mean) * monitor.count;
      return {
        name,
        help: metric.help,
        type: 'histogram',
        aggregator: 'sum',
        values: [...values, { metricName: `${name}_sum`, labels: {}, value: sum }, { metricName: `${name}_count`, labels: {}, value: monitor.count }],
      };
    },
    reset() {
      monitor.reset();
    },
  };
  return metric as unknown as Metric & { get(): Promise<unknown> };
}

metricsRegistry.registerMetric(eventLoopDelayMetric());

export const sandboxHeldEvents = new Gauge({
  name: 'sandbox_held_events',
  help: 'Events the sandboxed queries in flight hold in memory together (bounded by SANDBOX_MAX_HELD_EVENTS)',
  registers: [metricsRegistry],
});

export const sandboxHeldBytes = new Gauge({
  name: 'sandbox_held_bytes',
  help: 'Bytes of rows the sandboxed queries in flight hold in the heap together, pages in flight as reckoned (bounded by SANDBOX_MAX_HELD_BYTES)',
  registers: [metricsRegistry],
});
