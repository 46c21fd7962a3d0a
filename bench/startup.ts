import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';
import { loadConfig } from '../shared/config.ts';
import { createElasticsearchClient } from '../shared/elasticsearch.ts';
import { eventIndexTemplateName } from '../shared/event-index.ts';
import { createLogger } from '../shared/logger.ts';
import { repositoryRoot } from '../shared/module-runtime.ts';
import { createKafka } from '../ingest/kafka.ts';
import { sourceRoutes } from '../ingest/topics.ts';
import type { LocalStack } from '../stack/index.ts';
import { benchServers } from './servers.ts';
import { percentile } from './latency.ts';
import { kafkaConnection } from '../shared/kafka-connection.ts';
import { answerHelp } from '../shared/command-help.ts';

answerHelp(`Usage: npm run bench:startup [-- --runs N] [--skip-build]
Start time and memory of the query service and the ingest worker, compiled (npm run build) and run with tsx.
  --runs N       starts of each (default 5)
  --skip-build   use the dist/ already built
Uses KAFKA_BROKERS and ELASTICSEARCH_URL when both are set, else starts its own stack.`);

/**
 * `npm run bench:startup [-- --runs N]`: start time and memory of the query service and the ingest
 * worker, compiled (`npm run build`, then plain node on dist/) against the TypeScript sources run
 * with tsx (`node --import tsx`). Ready = the process's /health answers 200 (the worker: joined its
 * consumer group), timed from spawn. RSS read from /proc 3 s after ready (the query service's DuckDB
 * engine process starts with the first sandboxed query, so it is not part of it). Uses
 * KAFKA_BROKERS / ELASTICSEARCH_URL when both are set, else starts its own stack.
 */
const { values: options } = parseArgs({ options: { runs: { type: 'string', default: '5' }, 'skip-build': { type: 'boolean', default: false } } });
const RUNS = Number(options.runs);
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error(`--runs must be a positive integer, got ${options.runs}`);
const SETTLE_MS = 3000;
const config = loadConfig(process.env);
const say = (line: string) => console.error(`bench: ${line}`);
const run = promisify(execFile);

type Mode = 'compiled' | 'tsx';
type Role = 'query' | 'ingest';
const ENTRIES: Record<Role, string> = { query: 'src/main', ingest: 'ingest/main' };

interface Sample {
  readyMs: number;
  rssMb: number;
}

function command(mode: Mode, role: Role): string[] {
  return mode === 'compiled' ? [`dist/${ENTRIES[role]}.js`] : ['--import', 'tsx', `${ENTRIES[role]}.ts`];
}

/** Resident memory of a process in MB, from /proc (0 once it is gone). */
function rssMb(pid: number): number {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return Number(kb ?? 0) / 1024;
  } catch {
    return 0;
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}

async function measure(mode: Mode, role: Role, env: NodeJS.ProcessEnv): Promise<Sample> {
  const started = performance.now();
  const child = spawn(process.execPath, command(mode, role), {
    cwd: repositoryRoot,
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    let stdout = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    let readyMs: number | undefined;
    while (readyMs === undefined) {
      if (child.exitCode !== null) throw new Error(`${mode} ${role} exited with ${child.exitCode}`);
      if (performance.now() - started > 180_000) throw new Error(`${mode} ${role} not ready within 180 s`);
      const url = /^(?:query|ingest): (http:\/\/\S+)$/m.exec(stdout)?.[1];
      if (url) {
        const health = role === 'query' ? `${url}/health` : url;
        const ok = await fetch(health, { signal: AbortSignal.timeout(2000) }).then(
          (response) => response.ok,
          () => false,
        );
        if (ok) readyMs = performance.now() - started;
      }
      if (readyMs === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    return { readyMs, rssMb: rssMb(child.pid!) };
  } finally {
    await stop(child);
  }
}

let stack: LocalStack | undefined;

async function main(): Promise<void> {
  if (!options['skip-build']) {
    say('npm run build');
    await run('npm', ['run', 'build'], { cwd: repositoryRoot });
  }
  const servers = await benchServers(config, say);
  stack = servers.stack;
  const { brokers, elasticsearchUrl } = servers;
  const prefix = `bench${randomBytes(3).toString('hex')}`;
  const env: NodeJS.ProcessEnv = {
    KAFKA_BROKERS: brokers.join(','),
    ELASTICSEARCH_URL: elasticsearchUrl,
    INDEX_PREFIX: `${prefix}-`,
    TOPIC_PREFIX: `${prefix}.`,
    INGEST_GROUP_ID: `${prefix}-ingest`,
    PORT: '0',
    INGEST_PORT: '0',
    BOOTSTRAP_API_KEY: `${prefix}-bootstrap-key-0123456789`,
    LOG_LEVEL: 'warn',
  };
  const samples = new Map<string, Sample[]>();
  try {
    // the first worker creates the topics and indices; later starts find them, as in production
    say('warm-up: one start of each process');
    await measure('compiled', 'ingest', env);
    await measure('compiled', 'query', env);
    for (let round = 1; round <= RUNS; round += 1) {
      // alternate the order, so neither mode always runs on a warmer machine
      const modes: Mode[] = round % 2 === 1 ? ['compiled', 'tsx'] : ['tsx', 'compiled'];
      for (const role of ['query', 'ingest'] as Role[]) {
        for (const mode of modes) {
          const sample = await measure(mode, role, env);
          samples.set(`${role} ${mode}`, [...(samples.get(`${role} ${mode}`) ?? []), sample]);
          say(`round ${round}/${RUNS}: ${role} ${mode} ready in ${sample.readyMs.toFixed(0)} ms, RSS ${sample.rssMb.toFixed(0)} MB`);
        }
      }
    }
  } finally {
    await cleanUp(brokers, elasticsearchUrl, env);
    await stack?.stop();
  }

  const median = (values: number[]) =>
    percentile(
      [...values].sort((a, b) => a - b),
      50,
    );
  console.log(`\n${RUNS} starts of each, median; ready = /health 200 from spawn; RSS ${SETTLE_MS / 1000} s after ready\n`);
  console.log('| process | ready compiled | ready tsx | compiled / tsx | RSS compiled | RSS tsx | compiled / tsx |');
  console.log('|---|---|---|---|---|---|---|');
  for (const role of ['query', 'ingest'] as Role[]) {
    const compiled = samples.get(`${role} compiled`)!;
    const tsx = samples.get(`${role} tsx`)!;
    const [readyC, readyT] = [median(compiled.map((s) => s.readyMs)), median(tsx.map((s) => s.readyMs))];
    const [rssC, rssT] = [median(compiled.map((s) => s.rssMb)), median(tsx.map((s) => s.rssMb))];
    const name = role === 'query' ? 'query service' : 'ingest worker';
    console.log(
      `| ${name} | ${readyC.toFixed(0)} ms | ${readyT.toFixed(0)} ms | ${(readyC / readyT).toFixed(2)} | ${rssC.toFixed(0)} MB | ${rssT.toFixed(0)} MB | ${(rssC / rssT).toFixed(2)} |`,
    );
  }
}

/** Deletes the benchmark's indices, template, topics and consumer group. */
async function cleanUp(brokers: string[], elasticsearchUrl: string, env: NodeJS.ProcessEnv): Promise<void> {
  const runConfig = loadConfig(env);
  const client = createElasticsearchClient({ url: elasticsearchUrl });
  try {
    // wildcard deletes are refused by default (action.destructive_requires_name): name each index
    const indices = Object.keys(await client.indices.get({ index: `${runConfig.INDEX_PREFIX}*`, allow_no_indices: true }));
    if (indices.length > 0) await client.indices.delete({ index: indices });
    await client.indices.deleteIndexTemplate({ name: eventIndexTemplateName(runConfig.INDEX_PREFIX) }, { ignore: [404] });
  } finally {
    await client.close();
  }
  const admin = createKafka(kafkaConnection(runConfig, brokers), 'logplatform-bench', createLogger('bench', 'silent')).admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const topics = sourceRoutes(runConfig)
      .flatMap((route) => [route.topic, route.deadLetterTopic])
      .filter((topic) => existing.has(topic));
    if (topics.length > 0) await admin.deleteTopics({ topics });
    await admin.deleteGroups([runConfig.INGEST_GROUP_ID]).catch(() => undefined);
  } finally {
    await admin.disconnect();
  }
}

main().catch(async (error: unknown) => {
  console.error(error instanceof Error ? error.stack : error);
  await stack?.stop();
  process.exit(1);
});
