import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { answerHelp } from '../shared/command-help.ts';
import { loadConfig } from '../shared/config.ts';
import { createElasticsearchClient, elasticsearchConnection } from '../shared/elasticsearch.ts';
import { kafkaConnection } from '../shared/kafka-connection.ts';
import { createLogger } from '../shared/logger.ts';
import { eventIndexTemplateName } from '../shared/event-index.ts';
import type { SourceName } from '../shared/sources.ts';
import { demoEvents } from '../scripts/demo-events.ts';
import { createKafka } from '../ingest/kafka.ts';
import { ensureTopics, sourceRoutes } from '../ingest/topics.ts';
import { readProfile } from './cpu-profile.ts';
import { fullCollectionRows, fullCollections, GC_TRACE_FLAGS } from './gc-trace.ts';
import { FEED_HEADER, feedCells, readFeed, writePool } from './ingest-feed.ts';
import { ingestProfileGroups, ingestProfileRows } from './ingest-profile.ts';
import {
  cpuSeconds,
  describeMemory,
  mb,
  minorFaults,
  peakRssBytes,
  residentMemory,
  sleep,
  startWorkerProcess,
  workerCounter,
  workerGc,
  workerMemory,
  type WorkerMemory,
} from './worker-process.ts';

answerHelp(`Usage: npx tsx bench/ingest-worker.ts [--events N] [--codec none|gzip|snappy|lz4|zstd] [--baseline <checkout>]
                                  [--node-args=<flags>] [--env NAME=VALUE,...] [--cpu-prof <dir>] [--skip-build]
                                  [--gc-trace <file>]
The worker's own cost, without the rest of the ingest benchmark: N demo events are produced once by kcat in
the codec given, then drained by this checkout's production worker (and the baseline's first, when given),
each into indices and a consumer group of its own; prints CPU s per 100k events, GC pauses and major collections,
peak RSS, where the memory is at its highest sample and minor page faults (pages of fresh memory touched) for
each, and who limits the drain: the worker's and Elasticsearch's CPU, the
machine's idle CPU, bulks in flight, and the time with no bulk in flight, bulks wait for a slot and the fetch waits.
  --events N        events (default 100000)
  --codec C         the producer's compression (default none)
  --baseline DIR    also measure the worker of another checkout, with Node's defaults
  --node-args=S     node flags for this checkout's worker, after its own start's (--node-args=--max-semi-space-size=8)
  --env LIST        environment for this checkout's worker (for example MALLOC_ARENA_MAX=2)
  --cpu-prof DIR    run this checkout's worker with node --cpu-prof, its profile written under DIR, and print its
                    CPU per group (kafkajs decoding, our decoding, JSON, bulk, Elasticsearch client, GC ...)
  --skip-build      run each checkout's dist/ as built already (npm run build), to repeat a measurement sooner
  --gc-trace FILE    run this checkout's worker with V8's GC trace, kept in FILE, and print why each full
                    collection started, with the objects promoted and external memory grown before it
Needs KAFKA_BROKERS and ELASTICSEARCH_URL.`);

/**
 * `npx tsx bench/ingest-worker.ts`: one worker process draining a backlog, as `npm run bench:ingest`
 * measures ours, but alone: no ceiling, peer or freshness phases, so flags and changes can be compared
 * in a few minutes. The clock runs from the first consumed event to the last one indexed.
 */
const { values: options } = parseArgs({
  options: {
    events: { type: 'string', default: '100000' },
    codec: { type: 'string', default: 'none' },
    baseline: { type: 'string' },
    'node-args': { type: 'string', default: '' },
    env: { type: 'string', default: '' },
    'cpu-prof': { type: 'string' },
    'skip-build': { type: 'boolean', default: false },
    'gc-trace': { type: 'string' },
  },
});
const EVENTS = Number(options.events);
if (!Number.isInteger(EVENTS) || EVENTS < 1) throw new Error(`--events must be a positive integer, got ${options.events}`);
if (!['none', 'gzip', 'snappy', 'lz4', 'zstd'].includes(options.codec!)) throw new Error(`--codec: unknown codec "${options.codec}"`);
const env = Object.fromEntries(
  options
    .env!.split(',')
    .filter(Boolean)
    .map((pair) => {
      const at = pair.indexOf('=');
      if (at < 1) throw new Error(`--env: expected NAME=VALUE, got "${pair}"`);
      return [pair.slice(0, at), pair.slice(at + 1)];
    }),
);
const run = `bench${randomBytes(3).toString('hex')}`;
// a folder of this run's own: the profile read back is this worker's, not an earlier run's
const profileFolder = options['cpu-prof'] ? path.resolve(options['cpu-prof'], run) : undefined;
const nodeArgs = [
  ...options['node-args']!.split(' ').filter(Boolean),
  ...(profileFolder ? ['--cpu-prof', `--cpu-prof-dir=${profileFolder}`] : []),
  ...(options['gc-trace'] ? GC_TRACE_FLAGS : []),
];

const config = loadConfig(process.env);
const brokers = config.KAFKA_BROKERS;
const elasticsearchUrl = config.ELASTICSEARCH_URL;
if (!brokers || !elasticsearchUrl) throw new Error('KAFKA_BROKERS and ELASTICSEARCH_URL are needed');
const say = (line: string) => console.error(`ingest-worker: ${line}`);
const logger = createLogger('bench', 'warn');
const client = createElasticsearchClient(elasticsearchConnection(config, elasticsearchUrl));
const admin = createKafka(kafkaConnection(config, brokers), 'logplatform-bench', logger).admin();
const topicPrefix = `${run}.`;
const routes = sourceRoutes({ TOPIC_PREFIX: topicPrefix, SOURCE_TOPICS: {} });

await admin.connect();
try {
  await produce();
  const rows: ({ name: string } & Awaited<ReturnType<typeof drain>>)[] = [];
  const roots = [
    ...(options.baseline ? [{ name: 'baseline', root: path.resolve(options.baseline), nodeArgs: [], env: {}, output: undefined }] : []),
    { name: 'this checkout', root: undefined, nodeArgs, env, output: options['gc-trace'] },
  ];
  for (const { name, root, nodeArgs, env, output } of roots) rows.push({ name, ...(await drain(name, root, nodeArgs, env, output)) });
  console.log(`\n${EVENTS} events, codec ${options.codec}, load average at the end ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} cores`);
  console.log(
    `this checkout: its own start (ingest/worker-start.ts)${nodeArgs.length ? `, then node ${nodeArgs.join(' ')}` : ''}${options.env ? `, with ${options.env}` : ''}`,
  );
  console.log(
    '| worker | events/s | CPU s per 100k | GC pauses s per 100k (major collections) | peak RSS | minor page faults per 100k | partition batches deferred |',
  );
  console.log('|---|---|---|---|---|---|---|');
  const per100k = (value: number) => (value / EVENTS) * 100_000;
  for (const row of rows)
    console.log(
      `| ${row.name} | ${Math.round(EVENTS / row.seconds)} | ${per100k(row.cpu).toFixed(2)} | ${per100k(row.gc.seconds).toFixed(2)} (${row.gc.major}) | ` +
        `${(row.rss / 1e6).toFixed(0)} MB | ${Math.round(per100k(row.faults))} | ${row.deferred} |`,
    );
  console.log('\nwho limits the drain (Elasticsearch and the machine are shared: their figures include whatever else ran meanwhile):');
  console.log(FEED_HEADER);
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(`| ${row.name} | ${row.feed.join(' | ')} |`);
  if (profileFolder) {
    const { window } = rows[rows.length - 1]!;
    console.log(`\nthis checkout's worker under --cpu-prof (${profileFolder}), from its first consumed event to the last indexed:`);
    for (const line of ingestProfileRows(ingestProfileGroups(readProfile(profileFolder), window.from, window.to), EVENTS)) console.log(line);
  }
  if (options['gc-trace']) {
    // the whole life of the worker: its start-up's few collections included
    console.log(`\nthis checkout's worker's full collections (${options['gc-trace']}):`);
    for (const line of fullCollectionRows(fullCollections(readFileSync(options['gc-trace'], 'utf8')))) console.log(line);
  }
} finally {
  const topics = (await admin.listTopics()).filter((topic) => topic.startsWith(run));
  await admin.deleteTopics({ topics }).catch((error: unknown) => say(`could not delete the topics: ${(error as Error).message}`));
  await admin.disconnect();
  await client.close();
}

/** The monotonic clock V8 stamps profile samples with, in every process on the machine. */
function nowMicros(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/** The demo events into the nine topics, by kcat (the one producer here that writes every codec). */
async function produce(): Promise<void> {
  await ensureTopics(
    admin,
    routes.flatMap((route) => [route.topic, route.deadLetterTopic]),
    config.INGEST_TOPIC_PARTITIONS,
    config.INGEST_TOPIC_REPLICATION_FACTOR,
  );
  const folder = mkdtempSync(path.join(os.tmpdir(), 'bench-worker-'));
  try {
    const lines = new Map<SourceName, string[]>();
    const now = new Date();
    for (const { source, event } of demoEvents({ count: EVENTS, from: new Date(now.getTime() - 86_400_000), to: now, projects: ['default', 'bench'] }))
      (lines.get(source) ?? lines.set(source, []).get(source)!).push(JSON.stringify(event));
    for (const [source, values] of lines) writeFileSync(path.join(folder, `${source}.ndjson`), `${values.join('\n')}\n`);
    say(`producing ${EVENTS} events with kcat -z ${options.codec}`);
    await Promise.all(routes.map((route) => kcat(route.topic, path.join(folder, `${route.source}.ndjson`))));
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

function kcat(topic: string, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('kcat', ['-P', '-b', brokers!.join(','), '-t', topic, '-z', options.codec!, '-X', 'linger.ms=20', '-l', file], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('error', (error) => reject(new Error(`kcat could not run (${error.message})`)));
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`kcat to ${topic} exited ${code}`))));
  });
}

async function drain(name: string, root: string | undefined, nodeArgs: string[], env: Record<string, string>, output?: string) {
  const label = name.replace(/[^a-z]/g, '');
  const indexPrefix = `${run}-${label}-`;
  const worker = await startWorkerProcess({
    config,
    brokers: brokers!,
    elasticsearchUrl: elasticsearchUrl!,
    locations: { indexPrefix, topicPrefix },
    root,
    env: { ...env, INGEST_GROUP_ID: `${run}.${label}`, RETENTION_INTERVAL_SECONDS: '0' },
    nodeOptions: nodeArgs,
    built: options['skip-build'],
    stdoutFile: output,
  });
  try {
    const pid = worker.child.pid!;
    const idle = residentMemory(pid);
    while ((await workerCounter(worker.port, 'ingest_events_consumed_total')) === 0) await sleep(10);
    const started = performance.now();
    const from = nowMicros();
    const cpuAtStart = cpuSeconds(pid);
    const faultsAtStart = minorFaults(pid);
    const gcAtStart = await workerGc(worker.port);
    const feedAtStart = await readFeed(client, worker.port);
    const pool = { active: 0, queue: 0, samples: 0, threads: 0 };
    // /metrics is read a few times a second only: every read costs the worker CPU that would be counted as its own
    let atPeak: { memory: WorkerMemory; resident: ReturnType<typeof residentMemory> } | undefined;
    while ((await workerCounter(worker.port, 'ingest_events_indexed_total')) < EVENTS) {
      if (worker.child.exitCode !== null) throw new Error(`the worker exited with ${worker.child.exitCode}`);
      const memory = await workerMemory(worker.port);
      const resident = residentMemory(pid);
      if (memory && memory.rss > (atPeak?.memory.rss ?? 0)) atPeak = { memory, resident };
      const sample = await writePool(client);
      pool.active += sample.active;
      pool.queue += sample.queue;
      pool.threads = sample.threads;
      pool.samples += 1;
      await sleep(500);
    }
    const seconds = (performance.now() - started) / 1000;
    const cpu = cpuSeconds(pid) - cpuAtStart;
    const gcAtEnd = await workerGc(worker.port);
    const measured = {
      window: { from, to: nowMicros() },
      seconds,
      cpu,
      feed: feedCells(feedAtStart, await readFeed(client, worker.port), seconds, cpu, pool),
      rss: peakRssBytes(pid),
      faults: minorFaults(pid) - faultsAtStart,
      deferred: await workerCounter(worker.port, 'ingest_batches_deferred_total'),
      gc: { seconds: gcAtEnd.seconds - gcAtStart.seconds, major: gcAtEnd.major - gcAtStart.major },
    };
    say(`${name}: ${EVENTS} indexed in ${measured.seconds.toFixed(1)} s, peak RSS ${(measured.rss / 1e6).toFixed(0)} MB`);
    say(`${name}: resident before the drain ${mb(idle.rss)} MB (anonymous ${mb(idle.anonymous)}, files ${mb(idle.files)})`);
    if (atPeak) {
      const { memory, resident } = atPeak;
      // anonymous pages V8 does not account for: malloc's arenas (freed memory it keeps included), stacks, the code space
      const outside = resident.anonymous - memory.heapTotal - memory.external;
      say(
        `${name}: memory at the highest RSS sampled: ${describeMemory(memory)}; anonymous ${mb(resident.anonymous)}, files ${mb(resident.files)}, ` +
          `anonymous outside heap and external ${mb(outside)} MB`,
      );
    }
    return measured;
  } finally {
    await worker.stop();
    await client.indices.delete({ index: `${indexPrefix}*`, ignore_unavailable: true, allow_no_indices: true });
    await client.indices.deleteIndexTemplate({ name: eventIndexTemplateName(indexPrefix) }, { ignore: [404] });
  }
}
