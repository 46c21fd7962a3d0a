import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { Client, estypes } from '@elastic/elasticsearch';
import { findEndpoint, type Endpoint } from '../queries/index.ts';
import { loadConfig, repositoryRoot, type Config } from '../shared/config.ts';
import { createElasticsearchClient, elasticsearchConnection } from '../shared/elasticsearch.ts';
import { QUERY_SERVICE_ENV, QUERY_SERVICE_NODE_ARGS } from '../shared/query-service-start.ts';
import { KeyStore } from '../src/auth/key-store.ts';
import { validateParameters } from '../src/endpoints/request.ts';
import { planEndpointQuery } from '../src/planner/index.ts';
import { DatabasePool, directPipeline, measureInProcess, sandboxPlan, type DirectPipeline } from './direct-pipeline.ts';
import { benchServers, type BenchServers } from './servers.ts';
import { probe, runLoad, type LoadTarget } from './load.ts';
import { BENCH_PROJECT, loadEdgeEvents, loadOtherSources } from './query-data.ts';
import type { LoadPoint, QueryBenchResult, QuerySeries } from './results.ts';
import { startBenchProcess, type BenchProcess } from './service-process.ts';
import { productionBuild } from './production-build.ts';

export interface QueryPhaseOptions {
  /** Edge events per data set, ascending; each is loaded on top of the one before. */
  datasets: number[];
  /** Default 1, 16 and 64. */
  concurrencies?: number[];
  /** Concurrencies of the 20 studio SQL queries and the LQL queries (slow in the engine); default `concurrencies`. */
  sandboxConcurrencies?: number[];
  /** Seconds of load that warm each series up before its first point (after three probes); default 1, 0 for none. */
  warmUpSeconds?: number;
  /** Measure only the first N of the 20 studio SQL queries (a quick run); default all. */
  studioQueries?: number;
  /** Length of one load point; a series too slow for it runs a fixed count per connection instead. Default 10. */
  secondsPerPoint?: number;
  /** Only the series whose name matches (profiling one path); default every series. */
  only?: RegExp;
  /** The query service's log level; default info, as in production (the lines go to a file). */
  serviceLogLevel?: string;
  /** Writes V8 CPU profiles of the query services here (node --cpu-prof). */
  cpuProfileDir?: string;
  /** Keep the loaded indices at the end (their prefix is printed), for later runs with `dataPrefix`. */
  keepData?: boolean;
  /**
   * Measure the events a run with `keepData` left under this prefix: nothing is loaded or deleted,
   * and `datasets` must be the one size that run loaded last.
   */
  dataPrefix?: string;
  /**
   * A checkout of the code before a change (with its node_modules): the saved endpoints' and the sandboxed
   * queries' series are also measured against its service, as `<name> [before]`, in the same run as ours.
   */
  baseline?: string;
  /** Kafka and Elasticsearch to use; default KAFKA_BROKERS / ELASTICSEARCH_URL, else a local stack started for the phase. */
  servers?: { elasticsearchUrl: string; kafkaBrokers: string[] };
  progress?: (line: string) => void;
}

const INTERVALS = ['hourly', 'daily', 'minutely'] as const;
const HOUR_MS = 3600 * 1000;
const DAY_MS = 24 * HOUR_MS;
/** Issue 20's two queries, measured beside the studio queries: a record filter with newest-first LIMIT, and an hourly count. */
export const ISSUE_QUERIES: [string, string][] = [
  [
    'sql issue 20 errors, newest 100',
    'select id, timestamp, event_message, request.method, request.path, response.status_code from edge_logs cross join unnest(metadata) as m ' +
      'cross join unnest(m.request) as request cross join unnest(m.response) as response where response.status_code >= 400 order by timestamp desc limit 100',
  ],
  ['sql issue 20 hourly counts', 'select timestamp_trunc(timestamp, hour) as h, count(*) as n from edge_logs group by h order by h'],
];
/** Where the studio queries' dates are anchored: their windows end by 2024-01-02T00:00Z. */
const STUDIO_END_MS = Date.UTC(2024, 0, 2);

interface StudioQuery {
  id: string;
  sql: string;
  params: Record<string, string>;
}

/** How one series is sent: to our service, straight to Elasticsearch, or to the bare route. */
interface Side {
  side: QuerySeries['side'];
  target: LoadTarget;
  /** The direct side's i-th search request, as our planner builds it. */
  search?: (i: number) => estypes.SearchRequest;
  /** A direct side run in this process instead of over HTTP (a sandboxed query's direct pipeline). */
  pipeline?: DirectPipeline;
}

interface SeriesGroup {
  name: string;
  sides: Side[];
  concurrencies: number[];
}

const encodePath = (endpoint: string, params: Record<string, string>) => `/api/endpoints/query/${endpoint}?${new URLSearchParams(params)}`;

const hasResult = (body: string) => (body.startsWith('{"result":[') ? undefined : `expected {"result":[...]}, got ${body.slice(0, 200)}`);
const searchAnswered = (body: string) =>
  body.includes('"timed_out":false') || body.includes('"hits"') ? undefined : `expected a search response, got ${body.slice(0, 200)}`;

/**
 * The studio queries moved in time onto the benchmark's data: each date shifts by whole days so
 * their 2024-01-02 becomes the day the data ends, and they ask for the benchmark's project.
 */
export function shiftStudioQuery(query: StudioQuery, endMs: number): StudioQuery {
  const days = Math.round((Math.floor(endMs / DAY_MS) * DAY_MS - STUDIO_END_MS) / DAY_MS);
  const shift = (text: string) =>
    text.replace(/\b(\d{4}-\d{2}-\d{2})(?=[T' ]|\b)/g, (date) => new Date(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10));
  const params = Object.fromEntries(Object.entries(query.params).map(([name, value]) => [name, name === 'project' ? BENCH_PROJECT : shift(value)]));
  return { id: query.id, sql: shift(query.sql), params };
}

/**
 * A search request as the Elasticsearch client sends it (index in the path, the URL parameters our
 * plans use in the query string, the rest as the JSON body), so autocannon can send the very same.
 */
export function searchHttpRequest(search: estypes.SearchRequest): { path: string; body: string } {
  const { index, ignore_unavailable, allow_no_indices, filter_path, ...body } = search;
  const names = Array.isArray(index) ? index.join(',') : (index ?? '_all');
  const query = new URLSearchParams();
  if (ignore_unavailable !== undefined) query.set('ignore_unavailable', String(ignore_unavailable));
  if (allow_no_indices !== undefined) query.set('allow_no_indices', String(allow_no_indices));
  if (filter_path !== undefined) query.set('filter_path', Array.isArray(filter_path) ? filter_path.join(',') : filter_path);
  return { path: `/${encodeURIComponent(names)}/_search?${query}`, body: JSON.stringify(body) };
}

/** Fails unless the client sends `search` exactly as searchHttpRequest writes it: the direct side must be our request. */
async function assertSameAsClient(elasticsearch: Client, search: estypes.SearchRequest): Promise<void> {
  const sent = new Promise<{ path: string; querystring: string; body: string }>((resolve) => {
    elasticsearch.diagnostic.once('request', (_error, event) => resolve(event?.meta.request.params as never));
  });
  await elasticsearch.search(search);
  const client = await sent;
  const ours = searchHttpRequest(search);
  const [oursPath, oursQuery = ''] = ours.path.split('?');
  const same =
    client.path === oursPath &&
    new URLSearchParams(client.querystring).toString() === oursQuery &&
    isDeepStrictEqual(JSON.parse(client.body), JSON.parse(ours.body));
  if (!same) throw new Error(`the direct request differs from the client's: ${JSON.stringify(client)} against ${JSON.stringify(ours)}`);
}

function savedSearch(endpoint: Endpoint, params: Record<string, string>, prefix: string): estypes.SearchRequest {
  const plan = planEndpointQuery(endpoint, validateParameters(endpoint, params), { now: Date.now(), projects: null, indexPrefix: prefix });
  const scan = plan.scans[0]!;
  if (!('search' in scan)) throw new Error(`${endpoint.name}: its saved selection has no search`);
  return scan.search;
}

/**
 * The query half of `npm run bench`: loads each data set, starts the query service as its own
 * process (one with the result cache, one without, both with auth and rate limiting on), and
 * measures every series with autocannon at each concurrency, ours side by side with the same
 * Elasticsearch request sent directly and with a bare fastify route sending the cached bytes.
 */
export async function runQueryPhase(options: QueryPhaseOptions): Promise<QueryBenchResult> {
  const say = options.progress ?? ((line: string) => console.error(line));
  const concurrencies = options.concurrencies ?? [1, 16, 64];
  const sandboxConcurrencies = options.sandboxConcurrencies ?? concurrencies;
  const seconds = options.secondsPerPoint ?? 10;
  const base = loadConfig(process.env);
  let servers: BenchServers | undefined;
  const urls =
    options.servers ??
    (await (async () => {
      servers = await benchServers(base, (line) => say(`stack: ${line}`));
      return { elasticsearchUrl: servers.elasticsearchUrl, kafkaBrokers: servers.brokers };
    })());
  const elasticsearch = createElasticsearchClient({ ...elasticsearchConnection(base, urls.elasticsearchUrl), requestTimeoutMs: 600_000 });
  // the data's end time is part of the prefix, so a later run over the same data knows it
  const prefix = options.dataPrefix ?? `bench-query-${Date.now()}-${randomBytes(4).toString('hex')}-`;
  const endMs = Number(/^bench-query-(\d+)-/.exec(prefix)?.[1]);
  if (!Number.isFinite(endMs)) throw new Error(`${prefix} is not a prefix this benchmark wrote (bench-query-<end ms>-<hex>-)`);
  const reused = options.dataPrefix !== undefined;
  if (reused && options.datasets.length !== 1) throw new Error('with dataPrefix, give the one data set size that run loaded last');
  const scratch = mkdtempSync(path.join(tmpdir(), 'bench-query-'));
  const processes: BenchProcess[] = [];
  // the direct pipelines' DuckDB, in this process as a client of the store would run it
  const databases = new DatabasePool({ memoryLimit: base.SANDBOX_ENGINE_MEMORY_LIMIT, threads: base.SANDBOX_ENGINE_THREADS });
  const result: QueryBenchResult = { datasets: [], series: [], loadNote: '', serviceMemory: [] };
  try {
    const keys = new KeyStore(elasticsearch, prefix, base.ELASTICSEARCH_INDEX_REPLICAS);
    await keys.ensureIndex();
    const { key } = await keys.create({ account: 'bench', endpoints: 'all', projects: null });
    const headers = { 'x-api-key': key };
    if (!reused) {
      say('loading the other sources (10,000 events each) for the studio queries');
      await loadOtherSources(elasticsearch, prefix, endMs);
    }
    const studio = (JSON.parse(readFileSync(path.join(repositoryRoot, 'test/fixtures/examples/studio-queries.json'), 'utf8')) as StudioQuery[])
      .slice(0, options.studioQueries)
      .map((query) => shiftStudioQuery(query, endMs));
    let loaded = 0;
    for (const events of options.datasets) {
      if (!reused) {
        say(`loading edge events ${loaded.toLocaleString('en')} to ${events.toLocaleString('en')}`);
        await loadEdgeEvents(elasticsearch, prefix, loaded, events, endMs);
      }
      loaded = events;
      result.datasets.push(events);
      const serviceEnv = (cache: boolean): Record<string, string> => ({
        KAFKA_BROKERS: urls.kafkaBrokers.join(','),
        ELASTICSEARCH_URL: urls.elasticsearchUrl,
        INDEX_PREFIX: prefix,
        HOST: '127.0.0.1',
        PORT: '0',
        LOG_LEVEL: options.serviceLogLevel ?? 'info',
        // the longest the service allows below its connection timeout: slow sandboxed queries at c=64 queue for long
        QUERY_TIMEOUT_MS: '110000',
        CACHE_MAX_BYTES: cache ? String(base.CACHE_MAX_BYTES) : '0',
        // rate limiting stays on (its cost is part of every request) with a bucket this load never empties
        RATE_LIMIT_PER_MINUTE: '100000000',
        RATE_LIMIT_BURST: '100000000',
        // one key sends every request here: its engine share is the whole engine, so what is measured is capacity, not fairness
        SANDBOX_ENGINE_PER_KEY: String(base.SANDBOX_ENGINE_PROCESSES),
        SANDBOX_ENGINE_QUEUE_PER_KEY: '1000',
        SANDBOX_ENGINE_QUEUE_MAX: '1000',
      });
      const service = async (name: string, cache: boolean, root?: string) => {
        // the compiled build, as npm start and the image run it: under tsx the service holds its
        // transpiled sources and their source maps too (some 45 MB idle, bench:startup)
        await productionBuild(root ?? repositoryRoot);
        const started = await startBenchProcess({
          script: 'dist/src/main.js',
          compiled: true,
          root,
          env: { ...serviceEnv(cache), ...QUERY_SERVICE_ENV },
          nodeArgs: QUERY_SERVICE_NODE_ARGS,
          announces: /^query: (http:\/\/\S+)$/,
          cpuProfileDir: options.cpuProfileDir,
          logFile: path.join(scratch, `${name}-${events}.log`),
        });
        processes.push(started);
        return started;
      };
      const uncached = await service('uncached', false);
      const cached = await service('cached', true);
      const before =
        options.baseline === undefined
          ? undefined
          : { uncached: await service('uncached-before', false, options.baseline), cached: await service('cached-before', true, options.baseline) };
      const groups = await seriesGroups({
        uncached,
        cached,
        headers,
        prefix,
        endMs,
        studio,
        elasticsearch,
        elasticsearchUrl: urls.elasticsearchUrl,
        concurrencies,
        sandboxConcurrencies,
        only: options.only,
        config: base,
        databases,
        before,
      });
      const bare = await startBare(groups, scratch, events, processes);
      for (const group of groups) {
        const measured = new Map<string, QuerySeries>();
        const counters = new Map<string, { next: number }>();
        for (const concurrency of group.concurrencies) {
          for (const { side, target, pipeline } of group.sides) {
            const resolved = side === 'bare' ? { ...target, origin: bare!.address } : target;
            const series = measured.get(side) ?? { name: group.name, side, events, points: [] as LoadPoint[] };
            measured.set(side, series);
            const counter = counters.get(side) ?? { next: side === 'direct' ? 500_000_000 : 1 };
            counters.set(side, counter);
            const knownRate = Math.max(0, ...series.points.map((point) => point.requestsPerSecond));
            let point: LoadPoint;
            if (pipeline) {
              if (series.points.length === 0) for (let i = 0; i < 3; i += 1) await pipeline.run();
              point = await measureInProcess(pipeline.run, { concurrency, seconds, minPerLoop: 2 });
            } else {
              if (series.points.length === 0) await warmUp(resolved, side, counter, options.warmUpSeconds ?? 1);
              point = await runLoad(
                resolved,
                { concurrency, seconds, minPerConnection: 2, knownRate: series.points.length > 0 ? knownRate : undefined },
                counter,
              );
            }
            series.points.push(point);
            say(
              `${events.toLocaleString('en')} | ${group.name} | ${side} | c=${concurrency} | ${point.requestsPerSecond.toFixed(0)} req/s | p50 ${point.p50Ms.toFixed(2)} ms | p99 ${point.p99Ms.toFixed(2)} ms | ${point.requests} requests | ${point.errors} errors`,
            );
          }
        }
        result.series.push(...measured.values());
      }
      const peak = Math.max(uncached.peakRssMb(), cached.peakRssMb());
      result.serviceMemory!.push({ events, peakRssMb: peak, cachedPeakRssMb: cached.peakRssMb(), uncachedPeakRssMb: uncached.peakRssMb() });
      say(`${events.toLocaleString('en')} | query service peak RSS: ${uncached.peakRssMb()} MB without the cache, ${cached.peakRssMb()} MB with it`);
      for (const running of processes.splice(0)) await running.stop();
    }
    result.loadNote = `edge events bulk-loaded straight into daily partitions (not through Kafka), spread over the 7 days before the run across 100 projects; every request asks for ${BENCH_PROJECT}; 10,000 events in each other source; studio query dates shifted by whole days onto the data`;
    return result;
  } finally {
    for (const running of processes) await running.stop().catch(() => undefined);
    if (options.keepData || reused) {
      say(`data kept under index prefix ${prefix}`);
    } else {
      const indices = Object.keys(await elasticsearch.indices.get({ index: `${prefix}*`, allow_no_indices: true }).catch(() => ({})));
      if (indices.length > 0) await elasticsearch.indices.delete({ index: indices }).catch(() => undefined);
    }
    databases.close();
    await elasticsearch.close();
    await servers?.stack?.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** First requests of a series: they must succeed; a cached series fills the cache, and a short run warms the JIT. */
async function warmUp(target: LoadTarget, side: QuerySeries['side'], counter: { next: number }, seconds: number): Promise<void> {
  for (let i = 0; i < 3; i += 1) {
    await probe(target, counter.next);
    counter.next += 1;
  }
  if (side !== 'direct' && seconds > 0) await runLoad(target, { concurrency: 4, seconds, minPerConnection: 1, knownRate: 0 }, counter);
}

interface SeriesContext {
  uncached: BenchProcess;
  cached: BenchProcess;
  headers: Record<string, string>;
  prefix: string;
  endMs: number;
  studio: StudioQuery[];
  elasticsearch: Client;
  elasticsearchUrl: string;
  concurrencies: number[];
  sandboxConcurrencies: number[];
  only?: RegExp;
  config: Config;
  databases: DatabasePool;
  /** The baseline's services, when one is measured. */
  before?: { uncached: BenchProcess; cached: BenchProcess };
}

/** The cached series' bare side serves what ours answered to its first request, byte for byte. */
async function startBare(groups: SeriesGroup[], scratch: string, events: number, processes: BenchProcess[]): Promise<BenchProcess | undefined> {
  const files: string[] = [];
  for (const group of groups) {
    const bare = group.sides.find((side) => side.side === 'bare');
    if (!bare) continue;
    const ours = group.sides.find((side) => side.side === 'ours')!;
    const position = files.length;
    const file = path.join(scratch, `bare-${events}-${position}.json`);
    writeFileSync(file, await probe(ours.target));
    bare.target = { ...bare.target, request: () => ({ path: `/bare/${position}` }) };
    files.push(file);
  }
  if (files.length === 0) return undefined;
  const bare = await startBenchProcess({ script: 'bench/bare-server.ts', args: files, env: {}, announces: /^bare: (http:\/\/\S+)$/ });
  processes.push(bare);
  return bare;
}

async function seriesGroups(context: SeriesContext): Promise<SeriesGroup[]> {
  const usage = findEndpoint('usage.api-counts')!;
  const logs = findEndpoint('logs.all')!;
  const ours = (service: BenchProcess, request: LoadTarget['request']): Side => ({
    side: 'ours',
    target: { origin: service.address, method: 'GET', headers: context.headers, request, expect: hasResult },
  });
  const direct = (search: (i: number) => estypes.SearchRequest): Side => ({
    side: 'direct',
    search,
    target: {
      origin: context.elasticsearchUrl,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      request: (i) => searchHttpRequest(search(i)),
      expect: searchAnswered,
    },
  });
  const groups: SeriesGroup[] = [];
  const pattern = `${BENCH_PROJECT}\\.supabase\\.co`;
  for (const interval of INTERVALS) {
    const fixed = encodePath('usage.api-counts', { interval, project: pattern });
    groups.push({
      name: `usage.api-counts ${interval} cached`,
      sides: [
        ours(context.cached, () => ({ path: fixed })),
        { side: 'bare', target: { origin: '', method: 'GET', headers: {}, request: () => ({ path: '/bare' }), expect: hasResult } },
      ],
      concurrencies: context.concurrencies,
    });
    // a never-matching alternative per request: neither our cache, nor its single flight, nor Elasticsearch's request cache answers
    const distinct = (i: number) => ({ interval, project: `${pattern}|zq${i}zq` });
    groups.push({
      name: `usage.api-counts ${interval} uncached`,
      sides: [
        ours(context.uncached, (i) => ({ path: encodePath('usage.api-counts', distinct(i)) })),
        direct((i) => savedSearch(usage, distinct(i), context.prefix)),
      ],
      concurrencies: context.concurrencies,
    });
  }
  const hourWindow = { iso_timestamp_start: new Date(context.endMs - HOUR_MS).toISOString(), iso_timestamp_end: new Date(context.endMs).toISOString() };
  for (const [name, params] of [
    ['logs.all', { project: BENCH_PROJECT }],
    ['logs.all 1h', { project: BENCH_PROJECT, ...hourWindow }],
  ] as const) {
    const search = savedSearch(logs, params, context.prefix);
    groups.push({
      name,
      sides: [ours(context.uncached, () => ({ path: encodePath('logs.all', params) })), direct(() => search)],
      concurrencies: context.concurrencies,
    });
  }
  const sandboxed = [
    ...context.studio.map((query) => ({ name: `sql ${query.id}`, params: { ...query.params, sql: query.sql } })),
    ...ISSUE_QUERIES.map(([name, sql]) => ({ name, params: { project: BENCH_PROJECT, sql } })),
  ];
  for (const { name, params } of sandboxed) {
    if (context.only && !context.only.test(name)) continue;
    const request = encodePath('logs.all', params);
    const plan = await sandboxPlan({ endpoint: logs, params, indexPrefix: context.prefix }, context.elasticsearch, context.config);
    const pipeline = await directPipeline(plan, context.elasticsearch, context.databases);
    const direct: Side = { side: 'direct', pipeline, target: { origin: '', method: 'GET', headers: {}, request: () => ({ path: '' }) } };
    groups.push({ name, sides: [ours(context.uncached, () => ({ path: request })), direct], concurrencies: context.sandboxConcurrencies });
  }
  // every series so far (the saved endpoints' and the sandboxed queries') again against the baseline's services,
  // each beside its own direct, bare or pipeline side; the LQL series below have no other side and are left out
  const before = context.before;
  if (before) {
    const origins = new Map([
      [context.uncached.address, before.uncached.address],
      [context.cached.address, before.cached.address],
    ]);
    groups.push(
      ...groups.map((group) => ({
        ...group,
        name: `${group.name} [before]`,
        sides: group.sides.map((side) =>
          side.side === 'ours' ? { ...side, target: { ...side.target, origin: origins.get(side.target.origin) ?? side.target.origin } } : { ...side },
        ),
      })),
    );
  }
  const lql: [string, Record<string, string>][] = [
    ['lql filter 1h', { project: BENCH_PROJECT, ...hourWindow, lql: 'f:edge_logs m.request.path:~"^/rest" m.response.status_code:>=500' }],
    ['lql chart 7d', { project: BENCH_PROJECT, lql: 'f:edge_logs c:count(*) c:group_by(t::hour) m.response.status_code:>=500' }],
  ];
  for (const [name, params] of lql)
    groups.push({ name, sides: [ours(context.uncached, () => ({ path: encodePath('logs.all', params) }))], concurrencies: context.sandboxConcurrencies });
  const chosen = groups.filter((group) => !context.only || context.only.test(group.name));
  // the direct side must be the very request our service sends
  for (const group of chosen) {
    const search = group.sides.find((candidate) => candidate.side === 'direct')?.search;
    if (search) await assertSameAsClient(context.elasticsearch, search(1));
  }
  return chosen;
}
