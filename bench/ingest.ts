import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Partitioners, type Message, type Producer } from 'kafkajs';
import { loadConfig, repositoryRoot } from '../shared/config.ts';
import { createElasticsearchClient, elasticsearchConnection } from '../shared/elasticsearch.ts';
import { kafkaConnection } from '../shared/kafka-connection.ts';
import { createLogger } from '../shared/logger.ts';
import { sourceIndexPattern } from '../shared/partitions.ts';
import { SOURCES, topicName, type SourceName } from '../shared/sources.ts';
import { demoEvents } from '../ingest/demo-events.ts';
import { createKafka } from '../ingest/kafka.ts';
import { ensureTopics, sourceRoutes } from '../ingest/topics.ts';
import type { LocalStack } from '../stack/index.ts';
import { benchServers } from './servers.ts';
import { percentile } from './latency.ts';

/**
 * `npm run bench:ingest`: 200,000 mixed-source events through a real worker process.
 * Phase 1 (throughput): everything produced as fast as Kafka takes it; events/s and MB/s until the
 * last event is searchable. Phase 2 (freshness): a steady stream at a normal rate, with marker
 * events polled until searchable, for produce-to-searchable latency. Worker peak RSS from VmHWM.
 * Uses KAFKA_BROKERS / ELASTICSEARCH_URL when both are set, else starts its own stack.
 * `npm run bench:ingest -- --events 50000` for a shorter run.
 *
 * `--codecs none,gzip,snappy,lz4,zstd` measures decoding instead: the same events are produced once
 * per codec by kcat (librdkafka, the only producer here that writes zstd) into topics of their own
 * while no worker runs; then one worker per codec drains them, timed from its first consumed event
 * to the last event searchable. Prints events/s per codec and the ratio to `none`.
 */
const config = loadConfig(process.env);
const { values: options } = parseArgs({ options: { events: { type: 'string', default: '200000' }, codecs: { type: 'string' } } });
const CODECS = options.codecs?.split(',').map((codec) => codec.trim()).filter(Boolean);
for (const codec of CODECS ?? []) {
  if (!['none', 'gzip', 'snappy', 'lz4', 'zstd'].includes(codec)) throw new Error(`--codecs: unknown codec "${codec}"; use none, gzip, snappy, lz4, zstd`);
}
const EVENTS = Number(options.events);
if (!Number.isInteger(EVENTS) || EVENTS < 1) throw new Error(`--events must be a positive integer, got ${options.events}`);
const STEADY_RATE = 2000;
const STEADY_SECONDS = 20;
const MARKER_EVERY = 100;
const logger = createLogger('bench', 'warn');
const say = (line: string) => console.error(`bench: ${line}`);

let stack: LocalStack | undefined;
let worker: ChildProcess | undefined;

async function main(): Promise<void> {
  const servers = await benchServers(config, say);
  stack = servers.stack;
  const { brokers, elasticsearchUrl } = servers;
  if (CODECS) return codecBenchmark(brokers, elasticsearchUrl, CODECS);
  const prefix = `bench${randomBytes(3).toString('hex')}`;
  const locations = { indexPrefix: `${prefix}-`, topicPrefix: `${prefix}.` };
  const client = createElasticsearchClient(elasticsearchConnection(config, elasticsearchUrl));
  const indices = SOURCES.map((source) => sourceIndexPattern(locations.indexPrefix, source.name)).join(',');
  const searchable = async () => (await client.count({ index: indices, ignore_unavailable: true, allow_no_indices: true })).count;

  const started = await startWorker(brokers, elasticsearchUrl, locations);
  worker = started.child;
  const producer = createKafka(kafkaConnection(config, brokers), 'logplatform-bench', logger).producer({ createPartitioner: Partitioners.DefaultPartitioner, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();

  // Phase 1: throughput
  say(`generating ${EVENTS} events for the nine sources`);
  const bySource = new Map<SourceName, Message[]>();
  let bytes = 0;
  const now = new Date();
  for (const { source, event } of demoEvents({ count: EVENTS, from: new Date(now.getTime() - 86_400_000), to: now, projects: ['default', 'bench'] })) {
    const value = JSON.stringify(event);
    bytes += Buffer.byteLength(value);
    const messages = bySource.get(source) ?? [];
    messages.push({ value });
    bySource.set(source, messages);
  }
  say(`producing ${EVENTS} events (${(bytes / 1e6).toFixed(1)} MB)`);
  const phaseStart = performance.now();
  const cpuAtStart = cpuSeconds(worker.pid!);
  let produced = 0;
  const progress = setInterval(() => {
    void indexedByWorker(started.port).then((indexed) =>
      say(`${((performance.now() - phaseStart) / 1000).toFixed(1)} s: produced ${produced}, indexed ${indexed}, rss ${(rssBytes(worker!.pid!) / 1e6).toFixed(0)} MB`),
    );
  }, 1000);
  const sends: Promise<void>[] = [];
  for (const [source, messages] of bySource) {
    sends.push(
      (async () => {
        for (let start = 0; start < messages.length; start += 2000) {
          const slice = messages.slice(start, start + 2000);
          await producer.send({ topic: topicName(locations, source), acks: 1, messages: slice });
          produced += slice.length;
        }
      })(),
    );
  }
  await Promise.all(sends);
  const producedAt = performance.now();
  while ((await searchable()) < EVENTS) await sleep(100);
  const throughputSeconds = (performance.now() - phaseStart) / 1000;
  const workerCpuShare = (cpuSeconds(worker.pid!) - cpuAtStart) / throughputSeconds;
  clearInterval(progress);
  say(`all ${EVENTS} searchable after ${throughputSeconds.toFixed(1)} s (produced in ${((producedAt - phaseStart) / 1000).toFixed(1)} s)`);

  // Phase 2: freshness under a steady, normal load
  say(`steady stream: ${STEADY_RATE} events/s for ${STEADY_SECONDS} s, every ${MARKER_EVERY}th a marker`);
  const latencies = await steadyLatencies(producer, client, indices, locations);
  await producer.disconnect();

  const peakRss = peakRssBytes(worker.pid!);
  await stopWorker();
  await client.close();
  const sorted = [...latencies].sort((a, b) => a - b);
  const rows: [string, string][] = [
    ['events', String(EVENTS)],
    ['payload', `${(bytes / 1e6).toFixed(1)} MB`],
    ['throughput', `${Math.round(EVENTS / throughputSeconds)} events/s`],
    ['throughput', `${(bytes / 1e6 / throughputSeconds).toFixed(2)} MB/s`],
    ['worker CPU during throughput phase', `${Math.round(workerCpuShare * 100)}% of one core`],
    [`latency p50 (steady ${STEADY_RATE}/s)`, `${Math.round(percentile(sorted, 50))} ms`],
    [`latency p99 (steady ${STEADY_RATE}/s)`, `${Math.round(percentile(sorted, 99))} ms`],
    ['latency samples', String(sorted.length)],
    ['worker peak RSS (VmHWM)', `${(peakRss / 1e6).toFixed(0)} MB`],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  console.log(`\ningest benchmark (${brokers.join(',')}, ${elasticsearchUrl}; load average at the end ${os.loadavg().map((load) => load.toFixed(1)).join(' ')} on ${os.cpus().length} cores)`);
  console.log(`${'metric'.padEnd(width)} | value`);
  console.log(`${'-'.repeat(width)}-|-${'-'.repeat(20)}`);
  for (const [name, value] of rows) console.log(`${name.padEnd(width)} | ${value}`);
}

/** Decoding cost per codec: the same events, produced compressed by kcat, drained by a fresh worker each. */
async function codecBenchmark(brokers: string[], elasticsearchUrl: string, codecs: string[]): Promise<void> {
  const client = createElasticsearchClient(elasticsearchConnection(config, elasticsearchUrl));
  const folder = mkdtempSync(path.join(os.tmpdir(), 'bench-codecs-'));
  const now = new Date();
  const lines = new Map<SourceName, string[]>();
  let bytes = 0;
  for (const { source, event } of demoEvents({ count: EVENTS, from: new Date(now.getTime() - 86_400_000), to: now, projects: ['default', 'bench'] })) {
    const value = JSON.stringify(event);
    bytes += Buffer.byteLength(value) + 1;
    const values = lines.get(source) ?? [];
    values.push(value);
    lines.set(source, values);
  }
  for (const [source, values] of lines) writeFileSync(path.join(folder, `${source}.ndjson`), `${values.join('\n')}\n`);
  const admin = createKafka(kafkaConnection(config, brokers), 'logplatform-bench', logger).admin();
  await admin.connect();
  const runs: { codec: string; locations: { indexPrefix: string; topicPrefix: string } }[] = [];
  try {
    for (const codec of codecs) {
      const prefix = `bench${randomBytes(3).toString('hex')}${codec}`;
      const locations = { indexPrefix: `${prefix}-`, topicPrefix: `${prefix}.` };
      const routes = sourceRoutes({ TOPIC_PREFIX: locations.topicPrefix, SOURCE_TOPICS: {} });
      await ensureTopics(admin, routes.flatMap((route) => [route.topic, route.deadLetterTopic]), config.INGEST_TOPIC_PARTITIONS, config.INGEST_TOPIC_REPLICATION_FACTOR);
      say(`${codec}: producing ${EVENTS} events (${(bytes / 1e6).toFixed(1)} MB) with kcat -z ${codec}`);
      await Promise.all(routes.map((route) => kcatProduce(brokers, route.topic, codec, path.join(folder, `${route.source}.ndjson`))));
      runs.push({ codec, locations });
    }
  } finally {
    await admin.disconnect();
    rmSync(folder, { recursive: true, force: true });
  }

  const rows: { codec: string; seconds: number; cpu: number; rss: number }[] = [];
  for (const { codec, locations } of runs) {
    const indices = SOURCES.map((source) => sourceIndexPattern(locations.indexPrefix, source.name)).join(',');
    const started = await startWorker(brokers, elasticsearchUrl, locations);
    worker = started.child;
    while ((await consumedByWorker(started.port)) === 0) await sleep(20);
    const begin = performance.now();
    const cpuAtStart = cpuSeconds(worker.pid!);
    while ((await client.count({ index: indices, ignore_unavailable: true, allow_no_indices: true })).count < EVENTS) await sleep(100);
    const seconds = (performance.now() - begin) / 1000;
    rows.push({ codec, seconds, cpu: (cpuSeconds(worker.pid!) - cpuAtStart) / seconds, rss: peakRssBytes(worker.pid!) });
    say(`${codec}: ${EVENTS} searchable ${seconds.toFixed(1)} s after the first was consumed`);
    await stopWorker();
  }
  await client.close();

  const baseline = rows.find((row) => row.codec === 'none');
  console.log(`\ningest by codec: ${EVENTS} events (${(bytes / 1e6).toFixed(1)} MB), produced by kcat, drained by one worker each (load average at the end ${os.loadavg().map((load) => load.toFixed(1)).join(' ')} on ${os.cpus().length} cores)`);
  console.log('| codec | events/s | vs none | worker CPU | worker peak RSS |');
  console.log('|---|---|---|---|---|');
  for (const row of rows) {
    const rate = EVENTS / row.seconds;
    const ratio = baseline ? `${((rate / (EVENTS / baseline.seconds)) * 100).toFixed(0)}%` : 'n/a';
    console.log(`| ${row.codec} | ${Math.round(rate)} | ${ratio} | ${Math.round(row.cpu * 100)}% of one core | ${(row.rss / 1e6).toFixed(0)} MB |`);
  }
}

function kcatProduce(brokers: string[], topic: string, codec: string, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('kcat', ['-P', '-b', brokers.join(','), '-t', topic, '-z', codec, '-X', 'linger.ms=20', '-l', file], { stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('error', (error) => reject(new Error(`kcat could not run (${error.message}); install it (apt-get install kcat)`)));
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`kcat -z ${codec} to ${topic} exited ${code}`))));
  });
}

async function consumedByWorker(port: number): Promise<number> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return [...text.matchAll(/^ingest_events_consumed_total\{[^}]*\} (\d+)/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
  } catch {
    return 0;
  }
}

/** Produces at a fixed rate; marker events are polled until searchable, their latency measured from the send. */
async function steadyLatencies(producer: Producer, client: ReturnType<typeof createElasticsearchClient>, indices: string, locations: { topicPrefix: string }): Promise<number[]> {
  const pendingMarkers = new Map<string, number>();
  const latencies: number[] = [];
  let producing = true;
  const poller = (async () => {
    while (producing || pendingMarkers.size > 0) {
      if (pendingMarkers.size > 0) {
        const ids = [...pendingMarkers.keys()];
        const response = await client.search({ index: indices, size: ids.length, _source: false, query: { ids: { values: ids } } });
        const seen = performance.now();
        for (const hit of response.hits.hits) {
          const sentAt = pendingMarkers.get(hit._id!);
          if (sentAt !== undefined) {
            latencies.push(seen - sentAt);
            pendingMarkers.delete(hit._id!);
          }
        }
      }
      await sleep(20);
    }
  })();
  const events = demoEvents({ count: STEADY_RATE * STEADY_SECONDS, from: new Date(Date.now() - 3_600_000), to: new Date(), projects: ['default'], seed: 7 });
  const tickMs = 100;
  const perTick = (STEADY_RATE * tickMs) / 1000;
  let sequence = 0;
  const start = performance.now();
  for (let tick = 0; tick < (STEADY_SECONDS * 1000) / tickMs; tick += 1) {
    const bySource = new Map<SourceName, Message[]>();
    const markers: string[] = [];
    for (let n = 0; n < perTick; n += 1) {
      const { source, event } = events.next().value!;
      sequence += 1;
      const id = `steady-${sequence}`;
      if (sequence % MARKER_EVERY === 0) markers.push(id);
      const messages = bySource.get(source) ?? [];
      messages.push({ value: JSON.stringify({ ...event, id }) });
      bySource.set(source, messages);
    }
    const sentAt = performance.now();
    await Promise.all([...bySource].map(([source, messages]) => producer.send({ topic: topicName(locations, source), acks: 1, messages })));
    for (const id of markers) pendingMarkers.set(id, sentAt);
    const next = start + (tick + 1) * tickMs;
    await sleep(Math.max(0, next - performance.now()));
  }
  producing = false;
  const deadline = performance.now() + 30_000;
  while (pendingMarkers.size > 0 && performance.now() < deadline) await sleep(50);
  if (pendingMarkers.size > 0) throw new Error(`${pendingMarkers.size} marker events never became searchable`);
  await poller;
  return latencies;
}

async function startWorker(brokers: string[], elasticsearchUrl: string, locations: { indexPrefix: string; topicPrefix: string }): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(repositoryRoot, 'ingest', 'main.ts')], {
    cwd: repositoryRoot,
    env: {
      PATH: process.env.PATH,
      KAFKA_BROKERS: brokers.join(','),
      ELASTICSEARCH_URL: elasticsearchUrl,
      INDEX_PREFIX: locations.indexPrefix,
      TOPIC_PREFIX: locations.topicPrefix,
      INGEST_GROUP_ID: `${locations.topicPrefix}ingest`,
      INGEST_PORT: '0',
      // the worker's tuning, as configured for this run
      INGEST_TOPIC_PARTITIONS: String(config.INGEST_TOPIC_PARTITIONS),
      INGEST_CONCURRENT_PARTITIONS: String(config.INGEST_CONCURRENT_PARTITIONS),
      INGEST_BULK_MAX_BYTES: String(config.INGEST_BULK_MAX_BYTES),
      INGEST_BULK_MAX_EVENTS: String(config.INGEST_BULK_MAX_EVENTS),
      INGEST_FETCH_MAX_BYTES: String(config.INGEST_FETCH_MAX_BYTES),
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the worker exited with ${child.exitCode} during start-up`);
    const match = /ingest: http:\/\/[^:]+:(\d+)\/health/.exec(output);
    if (match) return { child, port: Number(match[1]) };
    await sleep(100);
  }
  throw new Error('the worker did not start within 120 s');
}

async function indexedByWorker(port: number): Promise<number> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return [...text.matchAll(/^ingest_events_indexed_total\{[^}]*\} (\d+)/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
  } catch {
    return 0;
  }
}

function statusField(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((entry) => entry.startsWith(`${field}:`));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? 0) * 1024;
}
/** User + system CPU time of a process (/proc/<pid>/stat fields 14 and 15, in clock ticks of 1/100 s). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
const rssBytes = (pid: number) => statusField(pid, 'VmRSS');
const peakRssBytes = (pid: number) => statusField(pid, 'VmHWM');

async function stopWorker(): Promise<void> {
  if (!worker || worker.exitCode !== null) return;
  const exited = new Promise((resolve) => worker!.once('exit', resolve));
  worker.kill('SIGTERM');
  await exited;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function cleanUp(): Promise<void> {
  await stopWorker();
  await stack?.stop();
}

process.on('SIGINT', () => void cleanUp().finally(() => process.exit(130)));
try {
  await main();
  await cleanUp();
} catch (error) {
  console.error(`bench: failed: ${(error as Error).stack ?? error}`);
  await cleanUp();
  process.exit(1);
}
