import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadConfig, repositoryRoot, type Config } from '../shared/config.ts';
import { productionBuild } from './production-build.ts';

/** Where a benchmark's worker reads and writes: its own topics, indices and consumer group. */
export interface BenchLocations {
  indexPrefix: string;
  topicPrefix: string;
}

export interface WorkerProcess {
  child: ChildProcess;
  port: number;
  stop(): Promise<void>;
}

/** The worker tuning a benchmark passes on when set, so a run measures the configuration it was given. */
const TUNING = [
  'INGEST_TOPIC_PARTITIONS',
  'INGEST_CONCURRENT_PARTITIONS',
  'INGEST_BULK_MAX_BYTES',
  'INGEST_BULK_MAX_EVENTS',
  'INGEST_BULK_MAX_IN_FLIGHT',
  'INGEST_FETCH_MAX_BYTES',
  'INGEST_FETCH_PARTITION_MAX_BYTES',
  'INGEST_FETCH_MIN_BYTES',
  'INGEST_BULK_LINGER_MS',
  'INGEST_FETCH_MAX_WAIT_MS',
  'INGEST_MEMORY_BUDGET_BYTES',
] as const;

/**
 * A real worker process on the given servers and locations, run as operators run it: the checkout's
 * production build (`npm run build`, then `node dist/ingest/main.js`; docs/operations.md "Production build"),
 * built once per checkout per benchmark run. Under tsx the loader alone holds some 30 MB more, which
 * is not the worker's, with the node flags and environment of the checkout's own start
 * (ingest/worker-start.ts, where it has one). Resolves once it serves /health. `root` runs the
 * worker of another checkout (a before/after comparison).
 */
export async function startWorkerProcess(options: {
  config: Config;
  brokers: string[];
  elasticsearchUrl: string;
  locations: BenchLocations;
  root?: string;
  env?: Record<string, string>;
  nodeOptions?: string[];
  /** Run the checkout's dist/ as it is (built already) instead of building it first. */
  built?: boolean;
  /** A file that receives the worker's stdout too (its logs, and V8's traces when asked for with --trace-gc). */
  stdoutFile?: string;
}): Promise<WorkerProcess> {
  const root = options.root ?? repositoryRoot;
  // only what this run set: a worker of another checkout keeps its own defaults
  const defaults = loadConfig({}) as unknown as Record<string, unknown>;
  const tuning: Record<string, string> = {};
  for (const name of TUNING) {
    const value = (options.config as unknown as Record<string, unknown>)[name];
    if (value !== undefined && value !== defaults[name]) tuning[name] = String(value);
  }
  const main = options.built ? path.join(root, 'dist', 'ingest', 'main.js') : path.join(await productionBuild(root), 'ingest', 'main.js');
  const start = await workerStart(root);
  const child = spawn(process.execPath, [...start.nodeArgs, ...(options.nodeOptions ?? []), main], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      KAFKA_BROKERS: options.brokers.join(','),
      ELASTICSEARCH_URL: options.elasticsearchUrl,
      INDEX_PREFIX: options.locations.indexPrefix,
      TOPIC_PREFIX: options.locations.topicPrefix,
      INGEST_GROUP_ID: `${options.locations.topicPrefix}ingest`,
      INGEST_PORT: '0',
      LOG_LEVEL: 'warn',
      ...start.env,
      ...tuning,
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  if (options.stdoutFile) child.stdout!.pipe(createWriteStream(options.stdoutFile));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the worker exited with ${child.exitCode} during start-up`);
    const match = /ingest: http:\/\/[^:]+:(\d+)\/health/.exec(output);
    if (match) return { child, port: Number(match[1]), stop };
    await sleep(100);
  }
  await stop();
  throw new Error('the worker did not start within 120 s');
}

/** The checkout's worker start (ingest/worker-start.ts); a checkout from before it starts with Node's defaults. */
async function workerStart(root: string): Promise<{ nodeArgs: readonly string[]; env: Readonly<Record<string, string>> }> {
  const file = path.join(root, 'ingest', 'worker-start.ts');
  if (!existsSync(file)) return { nodeArgs: [], env: {} };
  const start = (await import(pathToFileURL(file).href)) as { INGEST_WORKER_NODE_ARGS: readonly string[]; INGEST_WORKER_ENV: Readonly<Record<string, string>> };
  return { nodeArgs: start.INGEST_WORKER_NODE_ARGS, env: start.INGEST_WORKER_ENV };
}

/** Where the worker's memory is, from its /metrics (prom-client's process and heap gauges), in bytes. */
export interface WorkerMemory {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
}

export async function workerMemory(port: number): Promise<WorkerMemory | undefined> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const gauge = (name: string) => Number(new RegExp(`^ingest_${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)`, 'm').exec(text)?.[1] ?? NaN);
    return {
      rss: gauge('process_resident_memory_bytes'),
      heapUsed: gauge('nodejs_heap_size_used_bytes'),
      heapTotal: gauge('nodejs_heap_size_total_bytes'),
      external: gauge('nodejs_external_memory_bytes'),
    };
  } catch {
    return undefined;
  }
}

export const describeMemory = (memory: WorkerMemory) =>
  `rss ${mb(memory.rss)}, heap used ${mb(memory.heapUsed)} of ${mb(memory.heapTotal)}, external ${mb(memory.external)} MB`;
/** Bytes as whole (decimal) megabytes, as the bench tables print them. */
export const mb = (bytes: number) => (bytes / 1e6).toFixed(0);

/** The worker's /metrics text. */
async function metricsText(port: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
}

/** The sum of every sample in `text` whose line starts with `series` (a regular expression: the name and its labels). */
function sumOf(text: string, series: string): number {
  return [...text.matchAll(new RegExp(`^${series} ([0-9.e+-]+)`, 'gm'))].reduce((total, match) => total + Number(match[1]), 0);
}

/** Sum over sources of one of the worker's counters, read from its /metrics (0 while it does not answer). */
export async function workerCounter(
  port: number,
  name: 'ingest_events_consumed_total' | 'ingest_events_indexed_total' | 'ingest_batches_deferred_total',
): Promise<number> {
  try {
    return sumOf(await metricsText(port), `${name}\\{[^}]*\\}`);
  } catch {
    return 0;
  }
}

/** The worker's garbage collections so far (prom-client's GC histogram): their pauses summed in seconds, and how many were major. */
export async function workerGc(port: number): Promise<{ seconds: number; major: number }> {
  const text = await metricsText(port);
  return {
    seconds: sumOf(text, 'ingest_nodejs_gc_duration_seconds_sum\\{[^}]*\\}'),
    major: sumOf(text, 'ingest_nodejs_gc_duration_seconds_count\\{kind="major"[^}]*\\}'),
  };
}

/** The worker's bulk requests so far (every outcome): how many, and their summed duration in seconds. */
export async function workerBulkTotals(port: number): Promise<{ requests: number; seconds: number }> {
  const text = await metricsText(port);
  return { requests: sumOf(text, 'ingest_bulk_duration_seconds_count\\{[^}]*\\}'), seconds: sumOf(text, 'ingest_bulk_duration_seconds_sum\\{[^}]*\\}') };
}

function statusField(pid: number, field: 'VmHWM' | 'VmRSS' | 'RssAnon' | 'RssFile'): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith(`${field}:`));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? 0) * 1024;
}

/** User + system CPU time of a process, all its threads (/proc/<pid>/stat fields 14 and 15, in ticks of 1/100 s). */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
export const peakRssBytes = (pid: number) => statusField(pid, 'VmHWM');

/**
 * The kernel's account of a process's resident memory now (/proc/<pid>/status), in bytes: anonymous
 * pages (V8's heap, malloc's arenas, buffers) and file-backed ones (node's binary, shared libraries).
 * Read from outside the worker, so sampling it often costs the worker nothing.
 */
export function residentMemory(pid: number): { rss: number; anonymous: number; files: number } {
  return { rss: statusField(pid, 'VmRSS'), anonymous: statusField(pid, 'RssAnon'), files: statusField(pid, 'RssFile') };
}

/** Minor page faults of a process so far (/proc/<pid>/stat field 10): pages of fresh memory it has touched. */
export function minorFaults(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[7]);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
