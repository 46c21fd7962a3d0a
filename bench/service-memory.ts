/**
 * Where the query service's memory goes (issue 20: under 256 MB RSS). Loads edge events (or reuses a
 * prefix kept by an earlier run), then for each variant of the service's start (V8 and allocator
 * settings) starts it as its own process with bench/memory-probe.mjs inside and measures, in order:
 * idle, after its first sandboxed query (the SQL parser thread), and under a realistic mix (the 20
 * studio queries, logs.all, usage cached and uncached, LQL) at some concurrency; RSS is sampled from
 * /proc, heap/external/array buffers by the probe. Prints a table.
 *
 *   npx tsx bench/service-memory.ts [--events 200000] [--project-events 0] [--seconds 30] [--concurrency 8] [--variants node-defaults,shipped]
 *                                   [--data-prefix bench-query-...-] [--keep-data] [--compiled] [--mix quick|heavy]
 *                                   [--baseline /path/to/other/checkout] [--env NAME=value,...]
 *
 * --compiled runs dist/src/main.js (npm run build first) with plain node, as production does; default: the sources under tsx.
 * --project-events loads that many more edge events into the benchmark's project (the --events spread over 100 projects):
 * 200000 lets the heavy mix's queries reach their caps.
 * --mix heavy sends only the queries (studio queries and two that pull whole events) that read more events than
 * SANDBOX_MAX_SCAN_EVENTS over the whole loaded day (each ends 400 query_too_broad once it holds its cap: the most a query
 * holds, as at 10M events), found by sending each once first.
 * --baseline measures that checkout's service too (its own build), alternating with ours variant by variant, in one run.
 * --env sets more of the service's variables (e.g. SANDBOX_MAX_HELD_BYTES=...) for every variant; a variant is a named one
 * (node-defaults, shipped, ...) or node options, either followed by NAME=value words for that variant alone:
 * "shipped SANDBOX_MAX_HELD_BYTES=33554432,--max-semi-space-size=4 --max-old-space-size=256".
 */
import { answerHelp } from '../shared/command-help.ts';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig, repositoryRoot } from '../shared/config.ts';
import { createElasticsearchClient, elasticsearchConnection } from '../shared/elasticsearch.ts';
import { QUERY_SERVICE_ENV, QUERY_SERVICE_NODE_ARGS } from '../shared/query-service-start.ts';
import { KeyStore } from '../src/auth/key-store.ts';
import { runLoad, probe, type LoadTarget } from './load.ts';
import { BENCH_PROJECT, loadBenchProjectEdgeEvents, loadEdgeEvents, loadOtherSources } from './query-data.ts';
import { shiftStudioQuery } from './query-phase.ts';
import { benchServers } from './servers.ts';
import { startBenchProcess, type BenchProcess } from './service-process.ts';

answerHelp(`Usage: npx tsx bench/service-memory.ts [--events 200000] [--project-events 0] [--seconds 30] [--concurrency 8] [--variants node-defaults,shipped,...]
                                   [--data-prefix bench-query-...-] [--keep-data] [--compiled] [--mix quick|heavy]
                                   [--baseline <checkout>] [--env NAME=value,...]
The query service's memory for each start variant (idle, after the first sandboxed query, peak and steady under a mix of
requests). --project-events loads that many more edge events into the benchmark's project (200000 lets --mix heavy's
queries reach their caps). A variant is a named one or node options, either followed by NAME=value words: that variant's
own variables ("shipped SANDBOX_MAX_HELD_BYTES=33554432"). With KAFKA_BROKERS and ELASTICSEARCH_URL it uses those servers; without them it starts a stack of its own.`);

/** What bench/memory-probe.mjs samples, in bytes. */
interface MemorySample {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  /** V8's young generation as sized now (semi-spaces). */
  newSpace: number;
  /** The old generation's pages, and what live or not yet collected objects fill of them. */
  oldSpace: number;
  oldSpaceUsed: number;
  /** Objects too large for a page (e.g. a search page's text), each in its own. */
  largeObjects: number;
}

interface MemoryProbeFile {
  now: MemorySample;
  /** Each figure's largest value since the last reset. */
  peak: MemorySample;
  /** The whole sample taken when RSS was at its largest. */
  atPeakRss: MemorySample;
}

const probeFileOf = (pid: number) => path.join(tmpdir(), `service-memory-${pid}.json`);

interface Variant {
  name: string;
  nodeArgs: string[];
  env: Record<string, string>;
}

/** The starts compared: node's defaults, as shipped, and each setting the memory figures point at. */
const VARIANTS: Variant[] = [
  { name: 'node-defaults', nodeArgs: [], env: {} },
  { name: 'shipped', nodeArgs: [...QUERY_SERVICE_NODE_ARGS], env: { ...QUERY_SERVICE_ENV } },
  { name: 'semi-space-1', nodeArgs: ['--max-semi-space-size=1'], env: {} },
  { name: 'semi-space-2', nodeArgs: ['--max-semi-space-size=2'], env: {} },
  { name: 'semi-space-4', nodeArgs: ['--max-semi-space-size=4'], env: {} },
  { name: 'arena-2', nodeArgs: [], env: { MALLOC_ARENA_MAX: '2' } },
  { name: 'semi-space-4+arena-2', nodeArgs: ['--max-semi-space-size=4'], env: { MALLOC_ARENA_MAX: '2' } },
  // the start shipped before --optimize-for-size, and a hard old-generation cap (a crash when what is live passes it)
  { name: 'semi-space-4+arena-2+old-space-192', nodeArgs: ['--max-semi-space-size=4', '--max-old-space-size=192'], env: { MALLOC_ARENA_MAX: '2' } },
];

/**
 * A variant named by its node options (or a named variant first), each NAME=value among them one more of the
 * service's variables: `shipped SANDBOX_MAX_HELD_BYTES=33554432`.
 */
function variantOf(name: string): Variant {
  const words = name.split(' ').filter(Boolean);
  const named = VARIANTS.find((variant) => variant.name === words[0]);
  const isVariable = (word: string) => /^[A-Z][A-Z0-9_]*=/.test(word);
  const variables = words.filter(isVariable).map((word) => [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]);
  const options = words.slice(named ? 1 : 0).filter((word) => !isVariable(word));
  return { name, nodeArgs: [...(named?.nodeArgs ?? []), ...options], env: { ...named?.env, ...Object.fromEntries(variables) } };
}

const PARSER_IDLE_MS = 5000;
/** When RSS is read again after the load: past the parser thread's idle end. */
const AFTER_LOAD_MS = PARSER_IDLE_MS + 3000;

const argument = (name: string) => {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : undefined;
};
const say = (line: string) => console.error(line);
const mb = (bytes: number) => Math.round(bytes / (1024 * 1024));
const encodePath = (endpoint: string, params: Record<string, string>) => `/api/endpoints/query/${endpoint}?${new URLSearchParams(params)}`;

function rssMbOf(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Math.round(Number(match[1]) / 1024) : 0;
}

const probeOf = (pid: number) => JSON.parse(readFileSync(probeFileOf(pid), 'utf8')) as MemoryProbeFile;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function studioQueries(endMs: number) {
  return (
    JSON.parse(readFileSync(path.join(repositoryRoot, 'test/fixtures/examples/studio-queries.json'), 'utf8')) as {
      id: string;
      sql: string;
      params: Record<string, string>;
    }[]
  ).map((query) => shiftStudioQuery(query, endMs));
}

/**
 * Queries whose filter the store cannot run, so every event in scope is pulled whole (metadata too)
 * and held until the answer: the most memory a query can hold, which no studio query reaches since
 * their filters, sorts and limits are pushed down.
 */
const PULLING_QUERIES = [
  'select id, timestamp, event_message, metadata from edge_logs where length(event_message) > 100000',
  'select id, timestamp, metadata from edge_logs cross join unnest(metadata) as m where length(m.request[0].path) > 100000',
];

/** Each studio query and each pulling query over the whole loaded week: as broad as its SQL lets it be. */
function wholeDayPaths(endMs: number): string[] {
  const window = { iso_timestamp_start: new Date(endMs - 8 * 86_400_000).toISOString(), iso_timestamp_end: new Date(endMs).toISOString() };
  const pulling = PULLING_QUERIES.map((sql) => ({ params: { project: BENCH_PROJECT }, sql }));
  return [...studioQueries(endMs), ...pulling].map((query) => encodePath('logs.all', { ...query.params, ...window, sql: query.sql }));
}

/** The paths of `candidates` the service refuses as too broad: they hold their whole scan budget before the answer. */
async function capHitters(origin: string, key: string, candidates: string[]): Promise<string[]> {
  const hitters: string[] = [];
  for (const candidate of candidates) {
    const started = performance.now();
    const response = await fetch(`${origin}${candidate}`, { headers: { 'x-api-key': key } });
    const body = await response.text();
    say(
      `  ${response.status} ${Math.round(performance.now() - started)} ms ${body.length} B: ${decodeURIComponent(candidate).slice(0, 160).replace(/\s+/g, ' ')}`,
    );
    if (response.status === 400 && body.includes('query_too_broad')) hitters.push(candidate);
  }
  return hitters;
}

/** The mix's i-th request path: every studio query, logs.all (7 days and 1 hour), usage cached and never cached, LQL. */
function mixPaths(endMs: number): (i: number) => string {
  const studio = studioQueries(endMs);
  const hour = { iso_timestamp_start: new Date(endMs - 3600_000).toISOString(), iso_timestamp_end: new Date(endMs).toISOString() };
  const pattern = `${BENCH_PROJECT}\\.supabase\\.co`;
  const fixed = [
    ...studio.map((query) => encodePath('logs.all', { ...query.params, sql: query.sql })),
    encodePath('logs.all', { project: BENCH_PROJECT }),
    encodePath('logs.all', { project: BENCH_PROJECT, ...hour }),
    encodePath('usage.api-counts', { interval: 'hourly', project: pattern }),
    encodePath('logs.all', { project: BENCH_PROJECT, ...hour, lql: 'f:edge_logs m.request.path:~"^/rest" m.response.status_code:>=500' }),
    encodePath('logs.all', { project: BENCH_PROJECT, lql: 'f:edge_logs c:count(*) c:group_by(t::hour) m.response.status_code:>=500' }),
  ];
  // one slot in the cycle is a usage request no cache answers
  return (i) =>
    i % (fixed.length + 1) === fixed.length
      ? encodePath('usage.api-counts', { interval: 'minutely', project: `${pattern}|zq${i}zq` })
      : fixed[i % (fixed.length + 1)]!;
}

interface VariantResult {
  name: string;
  idleRss: number;
  afterParseRss: number;
  peakRss: number;
  steadyRss: number;
  afterLoadRss: number;
  atPeak: MemorySample;
  peaks: MemorySample;
  cacheBytes: number | undefined;
  p50Ms: number;
  requestsPerSecond: number;
  errors: number;
}

async function resultCacheBytes(service: BenchProcess): Promise<number | undefined> {
  const response = await fetch(`${service.address}/metrics`).catch(() => undefined);
  if (!response?.ok) return undefined;
  const match = /^result_cache_bytes (\d+)/m.exec(await response.text());
  return match ? Number(match[1]) : undefined;
}

interface MeasureSettings {
  seconds: number;
  concurrency: number;
  script: string;
  compiled: boolean;
  /** Another checkout whose service is measured (a baseline); default this one. */
  root?: string;
}

async function measure(
  variant: Variant,
  env: Record<string, string>,
  target: (origin: string) => LoadTarget,
  settings: MeasureSettings,
): Promise<VariantResult> {
  const service = await startBenchProcess({
    script: settings.script,
    compiled: settings.compiled,
    root: settings.root,
    env: { ...env, ...variant.env },
    nodeArgs: [...variant.nodeArgs, '--import', path.join(repositoryRoot, 'bench/memory-probe.mjs')],
    announces: /^query: (http:\/\/\S+)$/,
    logFile: path.join(tmpdir(), `service-memory-${variant.name}.log`),
  });
  try {
    const load = target(service.address);
    await sleep(2000);
    const idleRss = rssMbOf(service.pid);
    say(`${variant.name}: idle ${idleRss} MB`);
    // a heavy mix's queries all end 400 query_too_broad: the first one starts the parser thread all the same
    await probe(load, 0).catch((error: Error) => {
      if (!/status 400: .*query_too_broad/.test(error.message)) throw error;
    });
    await sleep(2000);
    const afterParseRss = rssMbOf(service.pid);
    say(`${variant.name}: after the first sandboxed query (parser thread started) ${afterParseRss} MB`);
    process.kill(service.pid, 'SIGUSR2');
    const samples: number[] = [];
    const sampler = setInterval(() => samples.push(rssMbOf(service.pid)), 250);
    const point = await runLoad(load, { concurrency: settings.concurrency, seconds: settings.seconds, minPerConnection: 1 }, { next: 1 });
    clearInterval(sampler);
    const probed = probeOf(service.pid);
    const cacheBytes = await resultCacheBytes(service);
    const second = samples.slice(Math.floor(samples.length / 2)).sort((a, b) => a - b);
    await sleep(AFTER_LOAD_MS);
    const result: VariantResult = {
      name: variant.name,
      idleRss,
      afterParseRss,
      peakRss: service.peakRssMb(),
      steadyRss: second[Math.floor(second.length / 2)] ?? 0,
      afterLoadRss: rssMbOf(service.pid),
      atPeak: probed.atPeakRss,
      peaks: probed.peak,
      cacheBytes,
      p50Ms: point.p50Ms,
      requestsPerSecond: point.requestsPerSecond,
      errors: point.errors,
    };
    say(
      `${variant.name}: peak ${result.peakRss} MB, steady ${result.steadyRss} MB, ${point.requests} requests, p50 ${point.p50Ms.toFixed(1)} ms, ${point.errors} errors`,
    );
    return result;
  } finally {
    await service.stop();
    rmSync(probeFileOf(service.pid), { force: true });
  }
}

function printTable(results: VariantResult[]): void {
  const rows: [string, (result: VariantResult) => string][] = [
    ['idle RSS MB', (r) => String(r.idleRss)],
    ['after first SQL parse RSS MB', (r) => String(r.afterParseRss)],
    ['peak RSS MB (VmHWM)', (r) => String(r.peakRss)],
    ['steady RSS MB (median, 2nd half)', (r) => String(r.steadyRss)],
    [`RSS ${AFTER_LOAD_MS / 1000} s after the load MB (parser thread ended)`, (r) => String(r.afterLoadRss)],
    ['at peak RSS: heap used / total MB', (r) => `${mb(r.atPeak.heapUsed)} / ${mb(r.atPeak.heapTotal)}`],
    ['at peak RSS: external / arrayBuffers MB', (r) => `${mb(r.atPeak.external)} / ${mb(r.atPeak.arrayBuffers)}`],
    ['at peak RSS: new space MB', (r) => String(mb(r.atPeak.newSpace))],
    ['at peak RSS: old space used / size MB', (r) => `${mb(r.atPeak.oldSpaceUsed)} / ${mb(r.atPeak.oldSpace)}`],
    ['at peak RSS: large objects MB', (r) => String(mb(r.atPeak.largeObjects))],
    ['at peak RSS: outside the JS heap MB', (r) => String(mb(r.atPeak.rss - r.atPeak.heapTotal - r.atPeak.external))],
    ['peak heap used / total MB', (r) => `${mb(r.peaks.heapUsed)} / ${mb(r.peaks.heapTotal)}`],
    ['peak external / arrayBuffers MB', (r) => `${mb(r.peaks.external)} / ${mb(r.peaks.arrayBuffers)}`],
    ['result cache MB at the end', (r) => (r.cacheBytes === undefined ? '?' : String(mb(r.cacheBytes)))],
    ['mix p50 ms', (r) => r.p50Ms.toFixed(1)],
    ['mix req/s', (r) => r.requestsPerSecond.toFixed(1)],
    ['errors', (r) => String(r.errors)],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  const columns = results.map((result) => Math.max(result.name.length, ...rows.map(([, cell]) => cell(result).length)));
  console.log(`| ${''.padEnd(width)} | ${results.map((result, i) => result.name.padEnd(columns[i]!)).join(' | ')} |`);
  console.log(`|${'-'.repeat(width + 2)}|${columns.map((column) => '-'.repeat(column + 2)).join('|')}|`);
  for (const [label, cell] of rows) console.log(`| ${label.padEnd(width)} | ${results.map((result, i) => cell(result).padEnd(columns[i]!)).join(' | ')} |`);
}

/** The heavy mix's paths, found with a service of this checkout started for the purpose. */
async function capHittersOf(env: Record<string, string>, key: string, candidates: string[], script: string, compiled: boolean): Promise<string[]> {
  const service = await startBenchProcess({ script, compiled, env, announces: /^query: (http:\/\/\S+)$/ });
  try {
    return await capHitters(service.address, key, candidates);
  } finally {
    await service.stop();
  }
}

async function main(): Promise<void> {
  const events = Number(argument('--events') ?? 200_000);
  const projectEvents = Number(argument('--project-events') ?? 0);
  const seconds = Number(argument('--seconds') ?? 30);
  const concurrency = Number(argument('--concurrency') ?? 8);
  const compiled = process.argv.includes('--compiled');
  const script = compiled ? 'dist/src/main.js' : 'src/main.ts';
  const baseline = argument('--baseline');
  const heavy = argument('--mix') === 'heavy';
  const extraEnv = Object.fromEntries(
    (argument('--env') ?? '')
      .split(',')
      .filter(Boolean)
      .map((pair) => pair.split('=', 2) as [string, string]),
  );
  const chosen = (argument('--variants') ?? VARIANTS.map((variant) => variant.name).join(',')).split(',');
  const variants = chosen.map((name) => VARIANTS.find((variant) => variant.name === name) ?? variantOf(name));
  const base = loadConfig(process.env);
  const servers = await benchServers(base, (line) => say(`stack: ${line}`));
  const elasticsearch = createElasticsearchClient({ ...elasticsearchConnection(base, servers.elasticsearchUrl), requestTimeoutMs: 600_000 });
  const reused = argument('--data-prefix');
  const prefix = reused ?? `bench-query-${Date.now()}-${randomBytes(4).toString('hex')}-`;
  const endMs = Number(/^bench-query-(\d+)-/.exec(prefix)?.[1]);
  try {
    const keys = new KeyStore(elasticsearch, prefix, base.ELASTICSEARCH_INDEX_REPLICAS);
    await keys.ensureIndex();
    const { key } = await keys.create({ account: 'bench', endpoints: 'all', projects: null });
    if (!reused) {
      say(`loading the other sources and ${events.toLocaleString('en')} edge events under ${prefix}`);
      await loadOtherSources(elasticsearch, prefix, endMs);
      await loadEdgeEvents(elasticsearch, prefix, 0, events, endMs);
      if (projectEvents > 0) {
        say(`loading ${projectEvents.toLocaleString('en')} more edge events of ${BENCH_PROJECT}`);
        await loadBenchProjectEdgeEvents(elasticsearch, prefix, events, projectEvents, endMs);
      }
    }
    const env = {
      KAFKA_BROKERS: servers.brokers.join(','),
      ELASTICSEARCH_URL: servers.elasticsearchUrl,
      INDEX_PREFIX: prefix,
      HOST: '127.0.0.1',
      PORT: '0',
      QUERY_TIMEOUT_MS: '110000',
      RATE_LIMIT_PER_MINUTE: '100000000',
      RATE_LIMIT_BURST: '100000000',
      SANDBOX_ENGINE_PER_KEY: String(base.SANDBOX_ENGINE_PROCESSES),
      SANDBOX_ENGINE_QUEUE_PER_KEY: '1000',
      SANDBOX_ENGINE_QUEUE_MAX: '1000',
      // short, so the reading after the load shows what the parser thread gives back when it ends
      SANDBOX_PARSER_IDLE_MS: String(PARSER_IDLE_MS),
      ...extraEnv,
    };
    let paths = mixPaths(endMs);
    if (heavy) {
      const hitters = await capHittersOf(env, key, wholeDayPaths(endMs), script, compiled);
      if (hitters.length === 0) throw new Error('no studio query reads more than its scan budget here: load more events or lower SANDBOX_MAX_SCAN_EVENTS');
      say(`heavy mix: ${hitters.length} studio queries reach their scan budget`);
      paths = (i) => hitters[i % hitters.length]!;
    }
    const target = (origin: string): LoadTarget => ({ origin, method: 'GET', headers: { 'x-api-key': key }, request: (i) => ({ path: paths(i) }) });
    const results: VariantResult[] = [];
    const settings = { seconds, concurrency, script, compiled };
    for (const variant of variants) {
      if (baseline) results.push({ ...(await measure(variant, env, target, { ...settings, root: baseline })), name: `baseline ${variant.name}` });
      results.push(await measure(variant, env, target, settings));
    }
    const mix = heavy ? 'heavy mix (studio queries at their scan budget)' : 'mix';
    const extra = Object.keys(extraEnv).length > 0 ? `, ${argument('--env')}` : '';
    const data = reused ? `the edge events kept under ${prefix}` : `${(events + projectEvents).toLocaleString('en')} edge events`;
    console.log(`\n${data}, ${mix} at c=${concurrency} for ${seconds} s per variant, ${script}${extra}\n`);
    printTable(results);
  } finally {
    if (process.argv.includes('--keep-data') || reused) {
      say(`data kept under index prefix ${prefix}`);
    } else {
      const indices = Object.keys(await elasticsearch.indices.get({ index: `${prefix}*`, allow_no_indices: true }).catch(() => ({})));
      if (indices.length > 0) await elasticsearch.indices.delete({ index: indices }).catch(() => undefined);
    }
    await elasticsearch.close();
    await servers.stack?.stop();
  }
}

await main();
