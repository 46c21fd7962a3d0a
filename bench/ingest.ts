import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../shared/config.ts';
import { createElasticsearchClient, elasticsearchConnection } from '../shared/elasticsearch.ts';
import { kafkaConnection } from '../shared/kafka-connection.ts';
import { createLogger } from '../shared/logger.ts';
import { sourceIndexPattern } from '../shared/partitions.ts';
import { SOURCES, type SourceName } from '../shared/sources.ts';
import { demoEvents } from '../scripts/demo-events.ts';
import { createKafka } from '../ingest/kafka.ts';
import { ensureTopics, sourceRoutes } from '../ingest/topics.ts';
import type { LocalStack } from '../stack/index.ts';
import { ingestTable, runIngestPhase } from './ingest-phase.ts';
import { kcatProduceSources } from './kcat.ts';
import { rsyslogVersion } from './rsyslog-peer.ts';
import { benchServers } from './servers.ts';
import { cpuSeconds, peakRssBytes, sleep, startWorkerProcess, workerCounter, type WorkerProcess } from './worker-process.ts';
import { answerHelp } from '../shared/command-help.ts';

answerHelp(`Usage: npm run bench:ingest [-- --events N | --quick] [--no-peer] [--no-zstd] [--baseline <checkout>] [--ceiling-in-flight N]
                           [--json <file>] [--cpu-prof <dir>] [--codecs none,gzip,snappy,lz4,zstd]
The ingest phase of npm run bench on its own: the same demo events moved by a bare consumer, the bulk
ceiling, our worker and rsyslog, our worker on the same events compressed with zstd, then produce-to-searchable
at a tenth and half our rate; prints the table with the ratios and each of issue 21's targets.
  --events N              events to ingest (default 1000000; --quick 100000)
  --no-peer               skip rsyslog
  --no-zstd               skip the drains of zstd-compressed input (they need kcat)
  --baseline <checkout>   also measure the worker of another checkout on the same events
  --ceiling-in-flight N   bulk requests in flight for the ceiling (default 2)
  --json <file>           write the result as JSON
  --cpu-prof <dir>        run our worker with node --cpu-prof
  --codecs <list>         measure decoding per codec instead (events produced by kcat)
Uses KAFKA_BROKERS and ELASTICSEARCH_URL when both are set, else starts its own stack.`);

/**
 * `npm run bench:ingest`: the ingest phase of `npm run bench` on its own (bench/ingest-phase.ts):
 * the same demo events moved by a bare consumer, the bulk ceiling, our worker and rsyslog, side by
 * side in one run, our worker again on the same events compressed with zstd (peak RSS), then
 * produce-to-searchable at a tenth and half our rate. Prints the table with the ratios and the targets.
 * `--events N` (default 1,000,000), `--quick` (100,000), `--no-peer`, `--baseline <checkout>` (also
 * measures the worker of another checkout on the same events, as ours-before), `--ceiling-in-flight N`,
 * `--no-zstd`, `--json <file>` (writes the result), `--cpu-prof <dir>` (our worker runs with node --cpu-prof).
 * Uses KAFKA_BROKERS / ELASTICSEARCH_URL when both are set, else starts its own stack.
 *
 * `--codecs none,gzip,snappy,lz4,zstd` measures decoding instead: the same events are produced once
 * per codec by kcat (librdkafka, the only producer here that writes zstd) into topics of their own
 * while no worker runs; then one worker per codec drains them, timed from its first consumed event
 * to the last event searchable. Prints events/s per codec and the ratio to `none`.
 */
const config = loadConfig(process.env);
const { values: options } = parseArgs({
  options: {
    events: { type: 'string' },
    quick: { type: 'boolean', default: false },
    'no-peer': { type: 'boolean', default: false },
    'no-zstd': { type: 'boolean', default: false },
    baseline: { type: 'string' },
    'ceiling-in-flight': { type: 'string', default: '2' },
    json: { type: 'string' },
    'cpu-prof': { type: 'string' },
    codecs: { type: 'string' },
  },
});
const CODECS = options.codecs
  ?.split(',')
  .map((codec) => codec.trim())
  .filter(Boolean);
for (const codec of CODECS ?? []) {
  if (!['none', 'gzip', 'snappy', 'lz4', 'zstd'].includes(codec)) throw new Error(`--codecs: unknown codec "${codec}"; use none, gzip, snappy, lz4, zstd`);
}
const EVENTS = Number(options.events ?? (options.quick ? 100_000 : CODECS ? 100_000 : 1_000_000));
if (!Number.isInteger(EVENTS) || EVENTS < 1) throw new Error(`--events must be a positive integer, got ${options.events}`);
const CEILING_IN_FLIGHT = Number(options['ceiling-in-flight']);
if (!Number.isInteger(CEILING_IN_FLIGHT) || CEILING_IN_FLIGHT < 1)
  throw new Error(`--ceiling-in-flight must be a positive integer, got ${options['ceiling-in-flight']}`);
const logger = createLogger('bench', 'warn');
const say = (line: string) => console.error(`bench: ${line}`);

let stack: LocalStack | undefined;
let worker: WorkerProcess | undefined;

async function main(): Promise<void> {
  const servers = await benchServers(config, say);
  stack = servers.stack;
  const { brokers, elasticsearchUrl } = servers;
  if (CODECS) return codecBenchmark(brokers, elasticsearchUrl, CODECS);
  const cpuProfileDir = options['cpu-prof'] ? path.resolve(options['cpu-prof']) : undefined;
  if (cpuProfileDir) mkdirSync(cpuProfileDir, { recursive: true });
  const result = await runIngestPhase({
    config,
    brokers,
    elasticsearchUrl,
    events: EVENTS,
    say,
    peer: !options['no-peer'],
    zstd: !options['no-zstd'],
    baselineRoot: options.baseline ? path.resolve(options.baseline) : undefined,
    ceiling: { inFlight: CEILING_IN_FLIGHT, maxEvents: 5000, maxBytes: 10 * 1024 * 1024 },
    freshnessSeconds: options.quick ? 10 : 30,
    workerNodeOptions: cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfileDir}`] : undefined,
  });
  if (options.json) writeFileSync(options.json, `${JSON.stringify(result, null, 2)}\n`);
  console.log(
    `\ningest benchmark: ${result.events} events (${(result.bytes / 1e6).toFixed(1)} MB), ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), load average at the end ${os
      .loadavg()
      .map((load) => load.toFixed(1))
      .join(' ')}${result.peerSkipped ? '' : `, rsyslog ${rsyslogVersion() ?? '?'}`}`,
  );
  console.log(ingestTable(result));
}

/** Decoding cost per codec: the same events, produced compressed by kcat, drained by a fresh worker each. */
async function codecBenchmark(brokers: string[], elasticsearchUrl: string, codecs: string[]): Promise<void> {
  const client = createElasticsearchClient(elasticsearchConnection(config, elasticsearchUrl));
  const now = new Date();
  const bySource = new Map<SourceName, Buffer[]>();
  let bytes = 0;
  for (const { source, event } of demoEvents({ count: EVENTS, from: new Date(now.getTime() - 86_400_000), to: now, projects: ['default', 'bench'] })) {
    const value = Buffer.from(JSON.stringify(event));
    bytes += value.length + 1;
    const values = bySource.get(source) ?? [];
    values.push(value);
    bySource.set(source, values);
  }
  const admin = createKafka(kafkaConnection(config, brokers), 'logplatform-bench', logger).admin();
  await admin.connect();
  const runs: { codec: string; locations: { indexPrefix: string; topicPrefix: string } }[] = [];
  try {
    for (const codec of codecs) {
      const prefix = `bench${randomBytes(3).toString('hex')}${codec}`;
      const locations = { indexPrefix: `${prefix}-`, topicPrefix: `${prefix}.` };
      const routes = sourceRoutes({ TOPIC_PREFIX: locations.topicPrefix, SOURCE_TOPICS: {} });
      await ensureTopics(
        admin,
        routes.flatMap((route) => [route.topic, route.deadLetterTopic]),
        config.INGEST_TOPIC_PARTITIONS,
        config.INGEST_TOPIC_REPLICATION_FACTOR,
      );
      say(`${codec}: producing ${EVENTS} events (${(bytes / 1e6).toFixed(1)} MB) with kcat -z ${codec}`);
      await kcatProduceSources(brokers, routes, bySource, codec);
      runs.push({ codec, locations });
    }
  } finally {
    await admin.disconnect();
  }

  const rows: { codec: string; seconds: number; cpu: number; rss: number }[] = [];
  for (const { codec, locations } of runs) {
    const indices = SOURCES.map((source) => sourceIndexPattern(locations.indexPrefix, source.name)).join(',');
    worker = await startWorkerProcess({ config, brokers, elasticsearchUrl, locations });
    const pid = worker.child.pid!;
    while ((await workerCounter(worker.port, 'ingest_events_consumed_total')) === 0) await sleep(20);
    const begin = performance.now();
    const cpuAtStart = cpuSeconds(pid);
    while ((await client.count({ index: indices, ignore_unavailable: true, allow_no_indices: true })).count < EVENTS) await sleep(100);
    const seconds = (performance.now() - begin) / 1000;
    rows.push({ codec, seconds, cpu: (cpuSeconds(pid) - cpuAtStart) / seconds, rss: peakRssBytes(pid) });
    say(`${codec}: ${EVENTS} searchable ${seconds.toFixed(1)} s after the first was consumed`);
    await worker.stop();
  }
  await client.close();

  const baseline = rows.find((row) => row.codec === 'none');
  console.log(
    `\ningest by codec: ${EVENTS} events (${(bytes / 1e6).toFixed(1)} MB), produced by kcat, drained by one worker each (load average at the end ${os
      .loadavg()
      .map((load) => load.toFixed(1))
      .join(' ')} on ${os.cpus().length} cores)`,
  );
  console.log('| codec | events/s | vs none | worker CPU | worker peak RSS |');
  console.log('|---|---|---|---|---|');
  for (const row of rows) {
    const rate = EVENTS / row.seconds;
    const ratio = baseline ? `${((rate / (EVENTS / baseline.seconds)) * 100).toFixed(0)}%` : 'n/a';
    console.log(`| ${row.codec} | ${Math.round(rate)} | ${ratio} | ${Math.round(row.cpu * 100)}% of one core | ${(row.rss / 1e6).toFixed(0)} MB |`);
  }
}

async function cleanUp(): Promise<void> {
  await worker?.stop();
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
