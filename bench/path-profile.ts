import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { answerHelp } from '../shared/command-help.ts';
import { loadConfig, repositoryRoot } from '../shared/config.ts';
import { QUERY_SERVICE_ENV, QUERY_SERVICE_NODE_ARGS } from '../shared/query-service-start.ts';
import { KeyStore } from '../src/auth/key-store.ts';
import { readProfile, summarizeProfile, topRows } from './cpu-profile.ts';
import { probe, runLoad, type LoadTarget } from './load.ts';
import { BENCH_PROJECT, loadEdgeEvents, loadOtherSources } from './query-data.ts';
import { shiftStudioQuery } from './query-phase.ts';
import { withBenchStore } from './query-store.ts';
import { startBenchProcess, type BenchProcess } from './service-process.ts';

answerHelp(`Usage: npx tsx bench/path-profile.ts [--events 20000] [--seconds 10] [--concurrency 16] [--top 20] [--skip-build] [--service-node-args '<node options>'] [--only cached,logs,bare,bare-flags,sql:<studio id>] [--baseline <checkout>]

Profiles the compiled query service (npm run build, then node --cpu-prof dist/src/main.js) under
autocannon load on the cached path (usage.api-counts daily, cached), on logs.all (uncached), and a
bare fastify route sending the cached bytes (bare: node's defaults, as bench:endpoints starts it; bare-flags: the
service's node flags and environment, shared/query-service-start.ts), and (only when named: --only sql:<id>) a studio query's sandboxed SQL on
logs.all, moved onto the loaded days (test/fixtures/examples/studio-queries.json); prints where the CPU went, per request: by package,
by function (self time), and by function of our code (inclusive). --baseline runs another checkout's
compiled service (npm run build there first) before ours on each path, and a closing table puts them side by side.
--service-node-args runs our service with these node options instead of the production ones (the baseline keeps them). Needs KAFKA_BROKERS and
ELASTICSEARCH_URL (or starts a local stack).`);

/**
 * Where the service's CPU goes on the two saved-endpoint paths issue 20 sets targets for, measured
 * on the compiled service as production runs it (tsx adds its own cost). Only the samples taken
 * while the load ran are counted, so start-up and shutdown are left out.
 *
 *   KAFKA_BROKERS=... ELASTICSEARCH_URL=... npx tsx bench/path-profile.ts [--events 20000] [--seconds 10] [--concurrency 16]
 */
const argument = (name: string, fallback: number) => Number(process.argv[process.argv.indexOf(name) + 1] ?? 0) || fallback;
const EVENTS = argument('--events', 20_000);
const SECONDS = argument('--seconds', 10);
const CONCURRENCY = argument('--concurrency', 16);
const TOP = argument('--top', 20);
const ONLY = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1]!.split(',') : undefined;
/** The studio queries named with `--only sql:<id>`: their fixed cost per request (parse, plan, executor, encoding) is issue 20's. */
const STUDIO_IDS = (ONLY ?? []).filter((name) => name.startsWith('sql:')).map((name) => name.slice('sql:'.length));

const encodePath = (endpoint: string, params: Record<string, string>) => `/api/endpoints/query/${endpoint}?${new URLSearchParams(params)}`;
/** Node options for our service in place of the production ones (shared/query-service-start.ts), e.g. to try a young generation's size. */
const SERVICE_NODE_ARGS = process.argv.includes('--service-node-args')
  ? process.argv[process.argv.indexOf('--service-node-args') + 1]!.split(' ').filter((option) => option !== '')
  : QUERY_SERVICE_NODE_ARGS;
const BASELINE = process.argv.includes('--baseline') ? path.resolve(process.argv[process.argv.indexOf('--baseline') + 1]!) : undefined;

interface Run {
  name: string;
  label: string;
  start: () => Promise<BenchProcess>;
  path: () => string;
}

const nowMicros = () => Number(process.hrtime.bigint() / 1000n);

/** CPU seconds a process has used so far, all its threads, user and system (Linux /proc). */
function cpuSecondsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  // utime and stime, the 14th and 15th fields of the whole line, in clock ticks (100 a second on Linux)
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function main(): Promise<void> {
  const base = loadConfig(process.env);
  if (!process.argv.includes('--skip-build')) execFileSync('npm', ['run', 'build'], { cwd: repositoryRoot, stdio: ['ignore', 'ignore', 'inherit'] });
  const scratch = mkdtempSync(path.join(tmpdir(), 'path-profile-'));
  const totals: string[] = [];
  await withBenchStore(base, 'profile', async ({ elasticsearch, elasticsearchUrl, kafkaBrokers, indexPrefix }) => {
    const endMs = Date.now();
    await loadEdgeEvents(elasticsearch, indexPrefix, 0, EVENTS, endMs);
    if (STUDIO_IDS.length > 0) await loadOtherSources(elasticsearch, indexPrefix, endMs);
    const keys = new KeyStore(elasticsearch, indexPrefix, 0);
    await keys.ensureIndex();
    const { key } = await keys.create({ account: 'bench', endpoints: 'all', projects: null });
    const headers = { 'x-api-key': key };
    const service = (name: string, cache: boolean, root?: string) =>
      startBenchProcess({
        script: 'dist/src/main.js',
        compiled: true,
        root,
        // as the benchmark runs it: rate limiting on with a bucket this load never empties, the access line at info
        env: {
          ...QUERY_SERVICE_ENV,
          KAFKA_BROKERS: kafkaBrokers.join(','),
          ELASTICSEARCH_URL: elasticsearchUrl,
          INDEX_PREFIX: indexPrefix,
          HOST: '127.0.0.1',
          PORT: '0',
          LOG_LEVEL: 'info',
          CACHE_MAX_BYTES: cache ? String(base.CACHE_MAX_BYTES) : '0',
          RATE_LIMIT_PER_MINUTE: '100000000',
          RATE_LIMIT_BURST: '100000000',
        },
        nodeArgs: root === undefined ? SERVICE_NODE_ARGS : QUERY_SERVICE_NODE_ARGS,
        announces: /^query: (http:\/\/\S+)$/,
        cpuProfileDir: path.join(scratch, name),
        logFile: path.join(scratch, `${name}.log`),
      });
    const usagePath = encodePath('usage.api-counts', { interval: 'daily', project: `${BENCH_PROJECT}\\.supabase\\.co` });
    let cachedBody: string | undefined;
    const logsPath = encodePath('logs.all', { project: BENCH_PROJECT });
    const before = (name: string, cache: boolean, label: string, path: () => string): Run[] =>
      BASELINE === undefined ? [] : [{ name: `${name}-before`, label: `${label} [baseline]`, start: () => service(`${name}-before`, cache, BASELINE), path }];
    const studio: { id: string; sql: string; params: Record<string, string> }[] = JSON.parse(
      readFileSync(path.join(repositoryRoot, 'test/fixtures/examples/studio-queries.json'), 'utf8'),
    );
    const sqlRuns: Run[] = STUDIO_IDS.flatMap((id) => {
      const query = studio.find((candidate) => candidate.id === id);
      if (!query) throw new Error(`--only sql:${id}: no studio query has that id`);
      const shifted = shiftStudioQuery(query, endMs);
      const sqlPath = encodePath('logs.all', { ...shifted.params, sql: shifted.sql });
      const label = `sql ${id} (uncached)`;
      // the service's profile folder is named after the run, without the colon
      const baseline = before(`sql-${id}`, false, label, () => sqlPath).map((run) => ({ ...run, name: `sql:${id}-before` }));
      return [...baseline, { name: `sql:${id}`, label, start: () => service(`sql-${id}`, false), path: () => sqlPath }];
    });
    // the bare route as bench:endpoints starts it (node's defaults), and with the service's node flags and environment
    const bareRun = (name: string, label: string, serviceFlags: boolean): Run => ({
      name,
      label,
      start: async () => {
        const file = path.join(scratch, `${name}.json`);
        writeFileSync(file, cachedBody ?? '{"result":[]}');
        return startBenchProcess({
          script: 'bench/bare-server.ts',
          args: [file],
          env: serviceFlags ? { ...QUERY_SERVICE_ENV } : {},
          nodeArgs: serviceFlags ? QUERY_SERVICE_NODE_ARGS : [],
          announces: /^bare: (http:\/\/\S+)$/,
          cpuProfileDir: path.join(scratch, name),
        });
      },
      path: () => '/bare/0',
    });
    const runs: Run[] = [
      ...before('cached', true, 'usage.api-counts daily, cached', () => usagePath),
      { name: 'cached', label: 'usage.api-counts daily, cached', start: () => service('cached', true), path: () => usagePath },
      ...before('logs', false, 'logs.all (uncached)', () => logsPath),
      { name: 'logs', label: 'logs.all (uncached)', start: () => service('logs', false), path: () => logsPath },
      bareRun('bare', 'bare fastify route, the cached bytes (under tsx, node defaults)', false),
      bareRun('bare-flags', "bare fastify route, the cached bytes (under tsx, the service's node flags)", true),
      ...sqlRuns,
    ];
    for (const run of runs) {
      if (ONLY !== undefined && !ONLY.includes(run.name.replace(/-before$/, ''))) continue;
      const started = await run.start();
      try {
        const target: LoadTarget = { origin: started.address, method: 'GET', headers, request: () => ({ path: run.path() }) };
        const body = await probe(target);
        if (run.name === 'cached') cachedBody = body;
        // a sandboxed query's own statistics, asked once beside the load: whether its answer needed the engine, and what it read
        const stats = run.name.startsWith('sql:')
          ? (JSON.parse(await probe({ ...target, request: () => ({ path: `${run.path()}&stats=true` }) })).stats ?? {})
          : undefined;
        await runLoad(target, { concurrency: CONCURRENCY, seconds: 2, minPerConnection: 1 });
        const from = nowMicros();
        const cpuBefore = cpuSecondsOf(started.pid);
        const point = await runLoad(target, { concurrency: CONCURRENCY, seconds: SECONDS, minPerConnection: 1 });
        const to = nowMicros();
        const cpu = cpuSecondsOf(started.pid) - cpuBefore;
        await started.stop();
        const summary = summarizeProfile(readProfile(path.join(scratch, run.name.replace(':', '-'))), from, to);
        const requests = point.requests;
        totals.push(`| ${run.label} | ${point.requestsPerSecond.toFixed(0)} | ${point.p50Ms.toFixed(2)} | ${((cpu * 1e6) / requests).toFixed(0)} |`);
        console.log(
          [
            `\n## ${run.label}: ${requests.toLocaleString('en')} requests at c=${CONCURRENCY} in ${SECONDS} s, ${point.errors} errors, ` +
              (stats ? `engine ran: ${stats.engine?.ran}, events scanned: ${JSON.stringify(stats.events_scanned)}, ` : '') +
              `${((cpu * 1e6) / requests).toFixed(0)} us CPU per request (all threads, /proc), ${(summary.busyMicros / requests).toFixed(0)} us ` +
              "busy per request on the main thread (sampled wall time: a write's share includes being preempted by the reader it woke)",
            '\n| package | us per request | share |\n|---|---|---|',
            ...topRows(summary.packages, summary, requests, TOP),
            '\n| function (self) | us per request | share |\n|---|---|---|',
            ...topRows(summary.functions, summary, requests, TOP),
            '\n| our function (inclusive) | us per request | share |\n|---|---|---|',
            ...topRows(summary.ours, summary, requests, TOP),
          ].join('\n'),
        );
      } finally {
        await started.stop();
      }
    }
  });
  console.log(`\n| run (c=${CONCURRENCY}) | req/s | p50 ms | CPU us per request |\n|---|---|---|---|\n${totals.join('\n')}`);
  console.log(`\nprofiles and logs in ${scratch}`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.stack : error);
  process.exit(1);
});
