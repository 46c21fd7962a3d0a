import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadConfig, repositoryRoot, type Config } from '../shared/config.ts';
import type { StoredEvent } from '../shared/event-index.ts';
import { eventShape } from '../shared/event-shape.ts';
import { createLogger } from '../shared/logger.ts';
import { legacyIndexName } from '../shared/partitions.ts';
import { SOURCE_NAMES } from '../shared/sources.ts';
import { formatMicros } from '../shared/stored-timestamp.ts';
import { findEndpoint } from '../queries/index.ts';
import { buildServer } from '../src/server.ts';
import { DatabasePool, directPipeline, measureInProcess, sandboxPlan } from './direct-pipeline.ts';
import { ISSUE_QUERIES } from './query-phase.ts';
import { OTHER_SOURCE_EVENTS, otherSourceEvent } from './query-data.ts';
import { bulkLoad, withBenchStore, type BenchStore } from './query-store.ts';
import { measureHttp, percentile } from './latency.ts';
import { markdownTable, pipelineTable } from './report.ts';
import type { LoadPoint, QuerySeries } from './results.ts';
import { answerHelp } from '../shared/command-help.ts';

answerHelp(`Usage: npm run bench:sandbox [-- --events 1000000] [--requests 20] [--only <regex>]
p50 / p99 of the studio queries (sandboxed SQL of one dashboard client), uncached, over an edge index of
--events events bulk-loaded directly; --requests sequential requests per query; --only runs only the series
whose names match (e.g. 'single_log_by_id|unified').
Uses KAFKA_BROKERS and ELASTICSEARCH_URL when both are set, else starts its own stack.`);

/**
 * p50 / p99 of the 20 studio queries (shared examples: real sandboxed SQL from one dashboard client),
 * uncached (logs.all is never cached), over an edge index of 1,000,000 events bulk-loaded directly
 * for speed: 7 days ending 2024-01-02T00:00Z (the examples' windows fall inside), half of them of
 * project `default` (the project the examples send), one request and one response record each, so
 * charts are answered by pushed-down aggregations. The other sources have 10,000 events each.
 * Each studio query and issue 20's two queries are also run as their direct pipeline (the plan's
 * Elasticsearch requests sent straight, DuckDB in this process: bench/direct-pipeline.ts), at
 * concurrency 1 (p50) and 16 (req/s), and printed side by side with ours.
 *
 *   npm run bench:sandbox [-- --events 1000000 --requests 20]
 *
 * Starts its own Kafka and Elasticsearch unless KAFKA_BROKERS and ELASTICSEARCH_URL are set.
 */
const argument = (name: string, fallback: number) => Number(process.argv[process.argv.indexOf(name) + 1] ?? 0) || fallback;
const EVENTS = argument('--events', 1_000_000);
const REQUESTS = argument('--requests', 20);
const ONLY = process.argv.includes('--only') ? new RegExp(process.argv[process.argv.indexOf('--only') + 1] ?? '') : undefined;
const selected = (name: string) => !ONLY || ONLY.test(name);
const BOOTSTRAP = `bench-bootstrap-${randomBytes(16).toString('hex')}`;
const END = Date.UTC(2024, 0, 2);
const WEEK_MS = 7 * 24 * 3600 * 1000;
const PATHS = ['/rest/v1/items', '/auth/v1/token', '/storage/v1/object/a', '/realtime/v1/websocket', '/rest/v1/rpc/f'];
const STATUS = [200, 200, 200, 201, 204, 304, 400, 401, 404, 500, 503];

/** An LQL filter query and an LQL chart, over the same edge events. */
const LQL_CASES: [string, string, Record<string, string>][] = [
  [
    'filter, 1 hour',
    'f:edge_logs m.request.path:~"^/rest" m.response.status_code:>=500',
    { project: 'default', iso_timestamp_start: '2024-01-01T00:00:00.000Z', iso_timestamp_end: '2024-01-01T01:00:00.000Z' },
  ],
  ['filter, 7 days (newest 1000)', 'f:edge_logs m.request.path:~"^/rest" m.response.status_code:>=500', { project: 'default' }],
  ['chart, 7 days by hour', 'f:edge_logs c:count(*) c:group_by(t::hour) m.response.status_code:>=500', { project: 'default' }],
  ['chart p95, 7 days by day', 'f:edge_logs c:p95(m.response.origin_time) c:group_by(t::day)', { project: 'default' }],
];

const DASHBOARD =
  'select id, timestamp, event_message, request.method, request.path, response.status_code from edge_logs cross join unnest(metadata) as m ' +
  'cross join unnest(m.request) as request cross join unnest(m.response) as response where response.status_code >= 400 order by timestamp desc limit 100';
/**
 * Issue 20's dashboard query, and the same query planned as before record-field filters were pushed
 * down by the stored shape: a condition no rule translates (`(...) IS TRUE`, TRUE on every row) makes
 * the planner fall back to the old plan (the status filter as a superset, every matching event pulled).
 */
const PUSHDOWN_CASES: [string, string][] = [
  ['dashboard query, record filter + limit pushed (after)', DASHBOARD],
  ['dashboard query, old plan (before)', DASHBOARD.replace(' order by', ' and (id is not null) is true order by')],
];

interface StudioQuery {
  id: string;
  sql: string;
  params: Record<string, string>;
}

function edgeEvent(n: number, total: number): StoredEvent {
  const micros = (END - Math.floor((((n * 7919) % total) / total) * WEEK_MS)) * 1000 - (n % 1000);
  const project = n % 2 === 0 ? 'default' : `proj${String(n % 99).padStart(3, '0')}`;
  const path = PATHS[n % PATHS.length]!;
  const status = STATUS[(n * 31) % STATUS.length]!;
  const metadata = {
    request: {
      method: n % 3 === 0 ? 'POST' : 'GET',
      path,
      search: n % 4 === 0 ? '?select=*' : '',
      url: `https://${project}.supabase.co${path}`,
      headers: { user_agent: 'bench' },
      cf: { country: ['DE', 'US', 'FR', 'BR'][n % 4] },
    },
    response: { status_code: status, origin_time: n % 400, headers: { content_type: 'application/json' } },
  };
  return {
    id: `edge-${n}`,
    timestamp: formatMicros(micros),
    event_message: `${metadata.request.method} | ${status} | ${metadata.request.url}`,
    project,
    metadata,
    shape: eventShape(metadata),
  };
}

/** REQUESTS requests from `concurrency` loops over HTTP, as a load point. */
async function httpPoint(url: string, concurrency: number): Promise<LoadPoint> {
  const started = performance.now();
  const latencies = await measureHttp({ url: () => url, headers: { 'x-api-key': BOOTSTRAP }, requests: Math.max(REQUESTS, concurrency * 2), concurrency });
  const seconds = (performance.now() - started) / 1000;
  return {
    concurrency,
    requestsPerSecond: latencies.length / seconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    requests: latencies.length,
    errors: 0,
  };
}

/** One query's row count (from a first request that must succeed), then REQUESTS sequential latencies. */
async function measureQuery(url: string, label: string): Promise<{ rows: number; latencies: number[] }> {
  const first = await fetch(url, { headers: { 'x-api-key': BOOTSTRAP } });
  const body = (await first.json()) as { result?: unknown[] };
  if (first.status !== 200) throw new Error(`${label}: status ${first.status}: ${JSON.stringify(body).slice(0, 300)}`);
  const latencies = await measureHttp({ url: () => url, headers: { 'x-api-key': BOOTSTRAP }, requests: REQUESTS, concurrency: 1 });
  return { rows: body.result?.length ?? 0, latencies };
}

/** The dashboard query's work as one search: project and status filter, newest first, 100 hits, `_source` only the fields it returns. */
async function measureDirect(elasticsearch: BenchStore['elasticsearch'], index: string): Promise<{ rows: number; p50: number; p99: number }> {
  const request = {
    index,
    size: 100,
    track_total_hits: false,
    query: { bool: { filter: [{ term: { project: 'default' } }, { range: { 'metadata.response.status_code': { gte: 400 } } }] } },
    sort: [{ timestamp: { order: 'desc' as const } }],
    _source: ['id', 'timestamp', 'event_message', 'metadata.request.method', 'metadata.request.path', 'metadata.response.status_code'],
  };
  const rows = (await elasticsearch.search(request)).hits.hits.length;
  const latencies: number[] = [];
  for (let i = 0; i < REQUESTS; i += 1) {
    const started = performance.now();
    await elasticsearch.search(request);
    latencies.push(performance.now() - started);
  }
  latencies.sort((a, b) => a - b);
  return { rows, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function main(): Promise<void> {
  const base = loadConfig(process.env);
  const studio: StudioQuery[] = JSON.parse(readFileSync(`${repositoryRoot}/test/fixtures/examples/studio-queries.json`, 'utf8'));
  const table: string[] = [];
  const lqlTable: string[] = [];
  const pushdownTable: { label: string; rows: number; p50: number; p99: number }[] = [];
  const all: number[] = [];
  const pipelines: QuerySeries[] = [];
  await withBenchStore(base, 'sandbox', async ({ elasticsearch, kafkaBrokers, indexPrefix: prefix }) => {
    await bulkLoad(elasticsearch, legacyIndexName(prefix, 'edge_logs'), EVENTS, (n) => edgeEvent(n, EVENTS));
    for (const source of SOURCE_NAMES.filter((name) => name !== 'edge_logs'))
      await bulkLoad(elasticsearch, legacyIndexName(prefix, source), OTHER_SOURCE_EVENTS, (n) => otherSourceEvent(source, n, END, 'default'));
    const config: Config = {
      ...base,
      INDEX_PREFIX: prefix,
      BOOTSTRAP_API_KEY: BOOTSTRAP,
      LOG_LEVEL: 'silent',
      QUERY_TIMEOUT_MS: 120_000,
      RATE_LIMIT_PER_MINUTE: 0,
      // one key sends every request at c=16: its engine share is the whole engine, so what is measured is capacity, not fairness
      SANDBOX_ENGINE_PER_KEY: base.SANDBOX_ENGINE_PROCESSES,
      SANDBOX_ENGINE_QUEUE_PER_KEY: 1000,
      SANDBOX_ENGINE_QUEUE_MAX: 1000,
    };
    const app = await buildServer({ config, logger: createLogger('bench', 'silent'), elasticsearch, kafkaBrokers });
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    const databases = new DatabasePool({ memoryLimit: config.SANDBOX_ENGINE_MEMORY_LIMIT, threads: config.SANDBOX_ENGINE_THREADS });
    const logsAll = findEndpoint('logs.all')!;
    try {
      const sandboxed = [
        ...studio.map((query) => ({ name: `sql ${query.id}`, params: { ...query.params, sql: query.sql } })),
        ...ISSUE_QUERIES.map(([name, sql]) => ({ name, params: { project: 'default', sql } })),
      ].filter(({ name }) => selected(name));
      for (const { name, params } of sandboxed) {
        const url = `${address}/api/endpoints/query/logs.all?${new URLSearchParams(params)}`;
        const pipeline = await directPipeline(
          await sandboxPlan({ endpoint: logsAll, params, indexPrefix: prefix }, elasticsearch, config),
          elasticsearch,
          databases,
        );
        const ours: QuerySeries = { name, side: 'ours', events: EVENTS, points: [await httpPoint(url, 1), await httpPoint(url, 16)] };
        const direct: QuerySeries = { name, side: 'direct', events: EVENTS, points: [] };
        // a first run that must succeed: the measured runs count failures, they do not stop on one
        await pipeline.run();
        for (const concurrency of [1, 16])
          direct.points.push(await measureInProcess(pipeline.run, { concurrency, requests: Math.max(REQUESTS, concurrency * 2) }));
        pipelines.push(ours, direct);
        console.error(
          `| ${name} | ${pipeline.describe} | ours p50 ${ours.points[0]!.p50Ms.toFixed(1)} ms | direct p50 ${direct.points[0]!.p50Ms.toFixed(1)} ms |`,
        );
      }
      for (const query of studio.filter(({ id }) => selected(`sql ${id}`))) {
        const { rows, latencies } = await measureQuery(
          `${address}/api/endpoints/query/logs.all?${new URLSearchParams({ ...query.params, sql: query.sql })}`,
          query.id,
        );
        all.push(...latencies);
        table.push(`| ${query.id} | ${rows} | ${percentile(latencies, 50).toFixed(1)} | ${percentile(latencies, 99).toFixed(1)} |`);
        console.error(table[table.length - 1]);
      }
      for (const [label, sql] of PUSHDOWN_CASES.filter(([label]) => !ONLY || selected(label))) {
        const { rows, latencies } = await measureQuery(`${address}/api/endpoints/query/logs.all?${new URLSearchParams({ project: 'default', sql })}`, label);
        pushdownTable.push({ label, rows, p50: percentile(latencies, 50), p99: percentile(latencies, 99) });
        console.error(`| ${label} | ${rows} | ${percentile(latencies, 50).toFixed(1)} |`);
      }
      if (!ONLY)
        pushdownTable.push({
          label: 'the same work sent to Elasticsearch directly',
          ...(await measureDirect(elasticsearch, legacyIndexName(prefix, 'edge_logs'))),
        });
      for (const [label, lql, params] of LQL_CASES.filter(([label]) => selected(label))) {
        const { rows, latencies } = await measureQuery(`${address}/api/endpoints/query/logs.all?${new URLSearchParams({ ...params, lql })}`, label);
        lqlTable.push(`| ${label} | \`${lql}\` | ${rows} | ${percentile(latencies, 50).toFixed(1)} | ${percentile(latencies, 99).toFixed(1)} |`);
        console.error(lqlTable[lqlTable.length - 1]);
      }
    } finally {
      databases.close();
      await app.close();
    }
  });
  all.sort((a, b) => a - b);
  console.log(
    `\n${EVENTS.toLocaleString('en')} edge events over 7 days (half of project default), ${OTHER_SOURCE_EVENTS.toLocaleString('en')} per other source; ${REQUESTS} sequential uncached requests per query, HTTP on 127.0.0.1\n`,
  );
  console.log('| query | rows | p50 ms | p99 ms |\n|---|---|---|---|');
  for (const row of table) console.log(row);
  console.log(`| all 20 | | ${percentile(all, 50).toFixed(1)} | ${percentile(all, 99).toFixed(1)} |`);
  const before = pushdownTable.find((row) => row.label.endsWith('(before)')) ?? pushdownTable[0]!;
  if (pushdownTable.length > 0)
    console.log(`\n\`${DASHBOARD}\`, project default, 7 days\n\n| plan | rows | p50 ms | p99 ms | p50 / before |\n|---|---|---|---|---|`);
  for (const row of pushdownTable)
    console.log(`| ${row.label} | ${row.rows} | ${row.p50.toFixed(1)} | ${row.p99.toFixed(1)} | ${(row.p50 / before.p50).toFixed(3)} |`);
  console.log('\n| LQL | query | rows | p50 ms | p99 ms |\n|---|---|---|---|---|');
  for (const row of lqlTable) console.log(row);
  const comparison = pipelineTable(pipelines);
  if (comparison) console.log(`\n${markdownTable(comparison)}`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.stack : error);
  process.exit(1);
});
