import { randomBytes } from 'node:crypto';
import { Partitioners, type Admin, type Message, type Producer } from 'kafkajs';
import { partitionPeriodOf, retentionDaysOf, type Config } from '../shared/config.ts';
import { createElasticsearchClient, elasticsearchConnection } from '../shared/elasticsearch.ts';
import { ensureEventIndexTemplate, eventIndexTemplateName } from '../shared/event-index.ts';
import { kafkaConnection } from '../shared/kafka-connection.ts';
import { createLogger } from '../shared/logger.ts';
import { SOURCES, type SourceName } from '../shared/sources.ts';
import { demoEvents } from '../scripts/demo-events.ts';
import { decodeMessage } from '../ingest/event.ts';
import { eventFieldNames } from '../ingest/event-fields.ts';
import { eventPartitioning } from '../ingest/event-partition.ts';
import { createKafka } from '../ingest/kafka.ts';
import { ensureTopics, sourceRoutes } from '../ingest/topics.ts';
import '../ingest/codecs.ts';
import { ingestTargets } from './ingest-targets.ts';
import { storeSpan } from './ingest-feed.ts';
import { kcatMissing, kcatProduceSources } from './kcat.ts';
import { percentile } from './latency.ts';
import type { IngestBenchResult, IngestRate } from './results.ts';
import { rsyslogMissing, startRsyslogPeer, type PeerMode } from './rsyslog-peer.ts';
import {
  cpuSeconds,
  describeMemory,
  peakRssBytes,
  sleep,
  startWorkerProcess,
  workerBulkTotals,
  workerCounter,
  workerMemory,
  type BenchLocations,
  type WorkerMemory,
  type WorkerProcess,
} from './worker-process.ts';

type EsClient = ReturnType<typeof createElasticsearchClient>;

export interface IngestPhaseOptions {
  config: Config;
  brokers: string[];
  elasticsearchUrl: string;
  /** Events produced before the clock starts: 1,000,000 for the full run, about 100,000 for --quick. */
  events: number;
  /** Progress, one line at a time (stderr). */
  say(line: string): void;
  /** false skips rsyslog (peerSkipped says so). */
  peer?: boolean;
  /** A checkout of an earlier worker, measured on the same events as `ours-before` (before/after in one run). */
  baselineRoot?: string;
  /** Bulk requests the ceiling keeps in flight, and its bulk bounds. */
  ceiling?: { inFlight: number; maxEvents: number; maxBytes: number };
  /** Seconds of the steady stream the freshness is measured on. */
  freshnessSeconds?: number;
  /** Extra `node` flags for our worker (for example --cpu-prof). */
  workerNodeOptions?: string[];
  /** false skips the drains of zstd-compressed input (zstdSkipped says so); they need kcat. */
  zstd?: boolean;
}

const DEFAULT_CEILING = { inFlight: 2, maxEvents: 5000, maxBytes: 10 * 1024 * 1024 };
// one record batch per send: under the broker's 1 MB message limit with the largest demo events
const PRODUCE_CHUNK = 400;
const MARKER_EVERY = 50;
/** Events bulk-loaded, unmeasured, before the first clock starts. */
const WARM_UP_EVENTS = 100_000;
/** How often the drain reads the worker's memory from /metrics. */
const MEMORY_SAMPLE_MS = 250;
/** Events the freshness worker indexes before its stream starts. */
const FRESHNESS_WARM_UP_EVENTS = 5_000;

/** A produced message and where Kafka put it: the worker's id of an event without one comes from its position. */
interface Produced {
  source: SourceName;
  topic: string;
  partition: number;
  offset: string;
  value: Buffer;
}

/**
 * The ingest phase of `npm run bench`: the same demo events, produced once before any clock starts,
 * moved by each contender in turn, every rate measured in this run so the ratios compare like with like:
 *
 * - consume: a bare kafkajs consumer reading the topics (no decoding, no writes): the Kafka side;
 * - ceiling: the same documents (same shape and ids as ours, built before the clock) bulk-loaded into
 *   indices of the same template, `inFlight` bulks at a time, refresh off during the load, until searchable;
 * - every contender writes into partitions created (from our template) before its clock starts;
 * - ours (and ours-before with `baselineRoot`): a real worker process from its first consumed event
 *   until all events are searchable, with its CPU seconds per 100k events and peak RSS;
 * - peer / peer-same-shape: rsyslog (see rsyslog-peer.ts), from its first indexed event until all searchable;
 * - freshness: a fresh worker on topics of its own, fed at a tenth and at half our measured rate, produce-to-searchable
 *   of every 50th event.
 */
export async function runIngestPhase(options: IngestPhaseOptions): Promise<IngestBenchResult> {
  const { config, brokers, elasticsearchUrl, say } = options;
  const ceilingSettings = options.ceiling ?? DEFAULT_CEILING;
  const logger = createLogger('bench', 'warn');
  const kafka = createKafka(kafkaConnection(config, brokers), 'logplatform-bench', logger);
  const client = createElasticsearchClient(elasticsearchConnection(config, elasticsearchUrl));
  const run = `bench${randomBytes(3).toString('hex')}`;
  const topicPrefix = `${run}.`;
  const routes = sourceRoutes({ TOPIC_PREFIX: topicPrefix, SOURCE_TOPICS: {} });
  const admin = kafka.admin();
  await admin.connect();
  const prefixes: string[] = [];
  const workers: WorkerProcess[] = [];
  const rates: IngestRate[] = [];
  const result: IngestBenchResult = { events: options.events, bytes: 0, rates };
  const record = (rate: IngestRate) => {
    rates.push(rate);
    say(
      `${rate.label}: ${Math.round(rate.eventsPerSecond)} events/s, ${rate.megabytesPerSecond.toFixed(1)} MB/s over ${rate.seconds.toFixed(1)} s${rate.cpuSecondsPer100k === undefined ? '' : `, ${rate.cpuSecondsPer100k.toFixed(2)} CPU s per 100k`}${rate.peakRssMb === undefined ? '' : `, peak RSS ${rate.peakRssMb.toFixed(0)} MB`}${rate.bulks === undefined ? '' : `; ${rate.bulks.requests} bulk requests of ${Math.round(rate.bulks.eventsPerRequest)} events, ${rate.bulks.meanInFlight.toFixed(2)} in flight on average`}`,
    );
  };
  // letters only, so no prefix is the start of another (peer / peersameshape)
  const indexPrefix = (label: string) => {
    const prefix = `${run}-${label.replace(/[^a-z]/g, '')}-`;
    prefixes.push(prefix);
    return prefix;
  };

  try {
    await ensureTopics(
      admin,
      routes.flatMap((route) => [route.topic, route.deadLetterTopic]),
      config.INGEST_TOPIC_PARTITIONS,
      config.INGEST_TOPIC_REPLICATION_FACTOR,
    );
    say(`generating ${options.events} demo events for the nine sources`);
    const bySource = generate(options.events);
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    let produced: Produced[];
    try {
      produced = await produceAll(producer, routes, bySource, config.INGEST_TOPIC_PARTITIONS, say);
    } finally {
      await producer.disconnect();
    }
    result.bytes = produced.reduce((sum, message) => sum + message.value.length, 0);
    const megabytes = result.bytes / 1e6;
    const rateOf = (label: string, seconds: number, extra: Partial<IngestRate> = {}): IngestRate => ({
      label,
      eventsPerSecond: options.events / seconds,
      megabytesPerSecond: megabytes / seconds,
      seconds,
      ...extra,
    });

    say('consume: a bare kafkajs consumer reading every topic');
    record(
      rateOf(
        'consume',
        await bareConsume(
          kafka,
          config,
          routes.map((route) => route.topic),
          options.events,
        ),
      ),
    );

    say('ceiling: building the documents our worker would write (before the clock)');
    const ceilingPrefix = indexPrefix('ceiling');
    const bulks = ceilingBulks(produced, config, ceilingPrefix, ceilingSettings);
    // a node just started runs its indexing code unoptimised for a while: whoever went first would pay for it
    const warmUpPrefix = indexPrefix('warmup');
    const warmUpEvents = produced.slice(0, Math.min(WARM_UP_EVENTS, produced.length));
    say(`warming Elasticsearch up: ${warmUpEvents.length} of the events bulk-loaded into throwaway indices (not measured)`);
    await loadCeiling(
      client,
      warmUpPrefix,
      ceilingBulks(warmUpEvents, config, warmUpPrefix, ceilingSettings),
      ceilingSettings.inFlight,
      warmUpEvents.length,
      config.ELASTICSEARCH_INDEX_REPLICAS,
    );
    await dropIndices(client, warmUpPrefix);
    say(`ceiling: ${bulks.bodies.length} bulk requests, ${ceilingSettings.inFlight} in flight, into ${bulks.indices.length} indices with refresh off`);
    const ceiling = await loadCeiling(client, ceilingPrefix, bulks, ceilingSettings.inFlight, options.events, config.ELASTICSEARCH_INDEX_REPLICAS);
    record(
      rateOf('ceiling', ceiling.seconds, {
        ...ceiling.store,
        note: `${ceilingSettings.inFlight} bulks in flight of ≤${ceilingSettings.maxEvents} events / ${ceilingSettings.maxBytes / 1048576} MB, refresh off during the load`,
      }),
    );
    await dropIndices(client, ceilingPrefix);

    const measureWorker = async (label: string, root?: string, from = topicPrefix, note = 'the topics produced above'): Promise<void> => {
      const prefix = indexPrefix(label);
      await createIndices(client, prefix, config.ELASTICSEARCH_INDEX_REPLICAS, renamed(bulks.indices, ceilingPrefix, prefix));
      const worker = await startWorkerProcess({
        config,
        brokers,
        elasticsearchUrl,
        locations: { indexPrefix: prefix, topicPrefix: from },
        root,
        env: { INGEST_GROUP_ID: `${run}.${label}`, RETENTION_INTERVAL_SECONDS: '0' },
        nodeOptions: label === 'ours' ? options.workerNodeOptions : undefined,
      });
      workers.push(worker);
      try {
        const measured = await drainByWorker(worker, client, prefix, options.events, (line) => say(`${label}: ${line}`));
        record(
          rateOf(label, measured.seconds, {
            cpuSecondsPer100k: (measured.cpuSeconds / options.events) * 100_000,
            peakRssMb: measured.peakRssBytes / 1e6,
            ...measured.store,
            bulks: measured.bulks,
            note: `worker process (production build: node dist/ingest/main.js) reading ${note}, from its first consumed event to the last searchable`,
          }),
        );
      } finally {
        await worker.stop();
      }
      await dropIndices(client, prefix);
    };
    if (options.baselineRoot) await measureWorker('ours-before', options.baselineRoot);
    await measureWorker('ours');

    // compressed input is where the worker's memory was highest: a fetch's bytes expand many times once decompressed
    const zstdMissing = options.zstd === false ? 'not asked for (--no-zstd)' : kcatMissing();
    if (zstdMissing) {
      result.zstdSkipped = zstdMissing;
      say(`zstd drains skipped: ${zstdMissing}`);
    } else {
      const zstdTopicPrefix = `${run}z.`;
      const zstdRoutes = sourceRoutes({ TOPIC_PREFIX: zstdTopicPrefix, SOURCE_TOPICS: {} });
      await ensureTopics(
        admin,
        zstdRoutes.flatMap((route) => [route.topic, route.deadLetterTopic]),
        config.INGEST_TOPIC_PARTITIONS,
        config.INGEST_TOPIC_REPLICATION_FACTOR,
      );
      say(`zstd: producing the same ${options.events} events again, compressed with zstd by kcat`);
      await kcatProduceSources(brokers, zstdRoutes, bySource, 'zstd');
      const zstdNote = 'the same events compressed with zstd (kcat -z zstd)';
      if (options.baselineRoot) await measureWorker('ours-before-zstd', options.baselineRoot, zstdTopicPrefix, zstdNote);
      await measureWorker('ours-zstd', undefined, zstdTopicPrefix, zstdNote);
    }

    const missing = options.peer === false ? 'not asked for (--no-peer)' : rsyslogMissing(elasticsearchUrl);
    if (missing) {
      result.peerSkipped = missing;
      say(`peer skipped: ${missing}`);
    } else {
      for (const mode of ['raw', 'same-shape'] as PeerMode[]) {
        const label = mode === 'raw' ? 'peer' : 'peer-same-shape';
        const prefix = indexPrefix(label);
        await createIndices(
          client,
          prefix,
          config.ELASTICSEARCH_INDEX_REPLICAS,
          mode === 'raw' ? routes.map((route) => `${prefix}${route.source}`) : renamed(bulks.indices, ceilingPrefix, prefix),
        );
        const peer = await startRsyslogPeer({
          mode,
          brokers,
          elasticsearchUrl,
          topics: routes.map(({ source, topic }) => ({ source, topic })),
          indexPrefix: prefix,
          groupId: `${run}.${label}`,
          batchSize: 2000,
          workerThreads: 2,
        });
        say(
          `${label}: rsyslogd ${peer.pid} (imkafka, omelasticsearch bulk mode, ${mode === 'raw' ? 'the raw JSON' : 'documents shaped like ours with explicit _id'})`,
        );
        try {
          const measured = await drainByPeer(peer, client, prefix, options.events, (line) => say(`${label}: ${line}`));
          record(
            rateOf(label, measured.seconds, {
              cpuSecondsPer100k: (measured.cpuSeconds / options.events) * 100_000,
              peakRssMb: measured.peakRssBytes / 1e6,
              ...measured.store,
              note: 'rsyslogd, from its first indexed event to the last searchable',
            }),
          );
        } finally {
          await peer.stop();
        }
        await dropIndices(client, prefix);
      }
    }

    const ours = rates.find((rate) => rate.label === 'ours')!;
    const steadyRate = Math.max(100, Math.round(ours.eventsPerSecond / 2));
    const freshnessAt = async (rate: number, name: string) => {
      const fresh = await measureFreshness({
        kafka,
        admin,
        config,
        brokers,
        elasticsearchUrl,
        client,
        run,
        name,
        rate,
        seconds: options.freshnessSeconds ?? 20,
        say,
        workers,
        indexPrefix: indexPrefix(name),
      });
      say(`freshness at ${rate} events/s: p50 ${Math.round(fresh.p50Ms)} ms, p99 ${Math.round(fresh.p99Ms)} ms over ${fresh.samples} markers`);
      return fresh;
    };
    // a slow stream (bulks fill slowly: the linger bounds the wait) and a busy one (bulks queue behind each other)
    result.freshnessSlow = await freshnessAt(Math.max(50, Math.round(ours.eventsPerSecond / 10)), 'fresh-slow');
    result.freshness = await freshnessAt(steadyRate, 'fresh');
    return result;
  } finally {
    for (const worker of workers) await worker.stop();
    for (const prefix of prefixes) await dropIndices(client, prefix).catch(() => undefined);
    const topics = (await admin.listTopics()).filter((topic) => topic.startsWith(run));
    await admin.deleteTopics({ topics }).catch((error: unknown) => say(`could not delete the bench topics: ${(error as Error).message}`));
    await admin.disconnect();
    await client.close();
  }
}

function generate(count: number): Map<SourceName, Buffer[]> {
  const bySource = new Map<SourceName, Buffer[]>();
  const now = new Date();
  for (const { source, event } of demoEvents({ count, from: new Date(now.getTime() - 86_400_000), to: now, projects: ['default', 'bench'] })) {
    const values = bySource.get(source) ?? [];
    values.push(Buffer.from(JSON.stringify(event)));
    bySource.set(source, values);
  }
  return bySource;
}

/** Each partition gets its messages in order, one send at a time, so Kafka's answer gives every message's offset. */
async function produceAll(
  producer: Producer,
  routes: { source: SourceName; topic: string }[],
  bySource: Map<SourceName, Buffer[]>,
  partitions: number,
  say: (line: string) => void,
): Promise<Produced[]> {
  const total = [...bySource.values()].reduce((sum, values) => sum + values.length, 0);
  const bytes = [...bySource.values()].flat().reduce((sum, value) => sum + value.length, 0);
  say(`producing ${total} events (${(bytes / 1e6).toFixed(1)} MB) into ${routes.length} topics of ${partitions} partitions`);
  const produced: Produced[] = [];
  let done = 0;
  const lanes = routes.flatMap(({ source, topic }) =>
    Array.from({ length: partitions }, (_, partition) => ({
      source,
      topic,
      partition,
      values: (bySource.get(source) ?? []).filter((_, index) => index % partitions === partition),
    })),
  );
  const started = performance.now();
  await Promise.all(
    lanes.map(async ({ source, topic, partition, values }) => {
      for (let start = 0; start < values.length; start += PRODUCE_CHUNK) {
        const slice = values.slice(start, start + PRODUCE_CHUNK);
        const messages: Message[] = slice.map((value) => ({ value, partition }));
        const [metadata] = await producer.send({ topic, acks: -1, messages });
        const base = BigInt(metadata!.baseOffset!);
        slice.forEach((value, index) => produced.push({ source, topic, partition, offset: (base + BigInt(index)).toString(), value }));
        done += slice.length;
      }
    }),
  );
  say(`produced ${done} events in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return produced;
}

/** A consumer that only counts: the rate Kafka and kafkajs deliver at, from its first batch to the last event. */
async function bareConsume(kafka: ReturnType<typeof createKafka>, config: Config, topics: string[], expected: number): Promise<number> {
  const consumer = kafka.consumer({
    groupId: `${topics[0]}.bare-${randomBytes(3).toString('hex')}`,
    maxBytes: config.INGEST_FETCH_MAX_BYTES,
    maxBytesPerPartition: Math.min(config.INGEST_FETCH_MAX_BYTES, config.INGEST_FETCH_PARTITION_MAX_BYTES),
    maxWaitTimeInMs: 500,
  });
  let count = 0;
  let first = 0;
  let resolveDone!: () => void;
  const done = new Promise<void>((resolve) => (resolveDone = resolve));
  await consumer.connect();
  try {
    await consumer.subscribe({ topics, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      partitionsConsumedConcurrently: config.INGEST_CONCURRENT_PARTITIONS,
      eachBatch: async ({ batch }) => {
        if (first === 0) first = performance.now();
        count += batch.messages.length;
        if (count >= expected) resolveDone();
      },
    });
    await done;
    return (performance.now() - first) / 1000;
  } finally {
    await consumer.disconnect();
  }
}

interface CeilingBulks {
  bodies: Buffer[];
  indices: string[];
}

/** The documents our worker writes for these messages (decoded the same way, same ids and partitions), as NDJSON bulk bodies. */
function ceilingBulks(produced: Produced[], config: Config, prefix: string, settings: { maxEvents: number; maxBytes: number }): CeilingBulks {
  const partitionings = new Map(
    SOURCES.map(({ name }) => [name, eventPartitioning(prefix, name, partitionPeriodOf(config, name), retentionDaysOf(config, name))]),
  );
  const fieldNames = new Map(SOURCES.map(({ name }) => [name, eventFieldNames(config.INGEST_FIELD_MAP, name)]));
  const bodies: Buffer[] = [];
  const indices = new Set<string>();
  let lines: string[] = [];
  let bytes = 0;
  let count = 0;
  const flush = () => {
    if (count === 0) return;
    bodies.push(Buffer.from(lines.join('')));
    lines = [];
    bytes = 0;
    count = 0;
  };
  const now = String(Date.now());
  for (const message of produced) {
    for (const decoded of decodeMessage(
      { topic: message.topic, partition: message.partition, offset: message.offset, timestamp: now, value: message.value },
      config.INGEST_MAX_MESSAGE_BYTES,
      fieldNames.get(message.source),
    )) {
      if (!decoded.ok) throw new Error(`a demo event did not decode: ${decoded.reason} ${decoded.detail}`);
      const index = partitionings.get(message.source)!.indexOf(decoded.event);
      indices.add(index);
      const line = `${JSON.stringify({ index: { _index: index, _id: decoded.event.id } })}\n${JSON.stringify(decoded.event)}\n`;
      if (count > 0 && (count >= settings.maxEvents || bytes + line.length > settings.maxBytes)) flush();
      lines.push(line);
      bytes += line.length;
      count += 1;
    }
  }
  flush();
  return { bodies, indices: [...indices] };
}

/** Indices created with refresh off, the bulks sent `inFlight` at a time, refresh back on, then refreshed: the clock covers all of it. */
async function loadCeiling(client: EsClient, prefix: string, bulks: CeilingBulks, inFlight: number, expected: number, replicas: number): Promise<Loaded> {
  await createIndices(client, prefix, replicas, bulks.indices, { refresh_interval: '-1' });
  let next = 0;
  const started = performance.now();
  const span = await storeSpan(client);
  const lane = async () => {
    while (next < bulks.bodies.length) {
      const body = bulks.bodies[next++]!;
      const response = await client.transport.request<{ errors: boolean; items?: unknown[] }>(
        { method: 'POST', path: '/_bulk', body, querystring: { filter_path: 'errors,items.*.error' } },
        { headers: { 'content-type': 'application/x-ndjson' } },
      );
      if (response.errors) throw new Error(`the ceiling load was refused in part: ${JSON.stringify(response.items?.slice(0, 3))}`);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  await client.indices.putSettings({ index: `${prefix}*`, settings: { index: { refresh_interval: '1s' } } });
  await client.indices.refresh({ index: `${prefix}*` });
  const seconds = (performance.now() - started) / 1000;
  const store = await span(expected);
  const { count } = await client.count({ index: `${prefix}*` });
  if (count !== expected) throw new Error(`the ceiling load left ${count} documents searchable, expected ${expected}`);
  return { seconds, store };
}

/** A contender's time, and Elasticsearch's CPU per 100k events with the machine's idle share over it (storeSpan). */
interface Loaded {
  seconds: number;
  store: { storeCpuSecondsPer100k: number; machineIdle: number };
}

/** Documents searchable under the prefix; -1 while a partition being created has no shard yet (asked again next poll). */
async function searchable(client: EsClient, prefix: string): Promise<number> {
  try {
    return (await client.count({ index: `${prefix}*`, ignore_unavailable: true, allow_no_indices: true })).count;
  } catch (error) {
    if (/no_shard_available|search_phase_execution/.test((error as Error).message)) return -1;
    throw error;
  }
}

interface Drained extends Loaded {
  cpuSeconds: number;
  peakRssBytes: number;
  bulks?: IngestRate['bulks'];
}

/** From the worker's first consumed event to all `expected` searchable; exactly `expected` must be there (no duplicates, no losses). */
async function drainByWorker(worker: WorkerProcess, client: EsClient, prefix: string, expected: number, say: (line: string) => void): Promise<Drained> {
  const pid = worker.child.pid!;
  while ((await workerCounter(worker.port, 'ingest_events_consumed_total')) === 0) {
    if (worker.child.exitCode !== null) throw new Error(`the worker exited with ${worker.child.exitCode}`);
    await sleep(10);
  }
  const started = performance.now();
  const cpuAtStart = cpuSeconds(pid);
  const span = await storeSpan(client);
  const bulksAtStart = await workerBulkTotals(worker.port);
  let lastReport = started;
  // where the memory is when RSS is highest: the heap, or buffers outside it (fetch responses, entries, bulk bodies)
  let atPeak: WorkerMemory | undefined;
  let lastSample = 0;
  let memory: WorkerMemory | undefined;
  for (;;) {
    const count = await searchable(client, prefix);
    if (count >= expected) break;
    if (worker.child.exitCode !== null) throw new Error(`the worker exited with ${worker.child.exitCode}`);
    // a few samples a second: each read of /metrics costs the worker CPU that would be counted as its own (the peak is the kernel's VmHWM)
    if (performance.now() - lastSample >= MEMORY_SAMPLE_MS) {
      lastSample = performance.now();
      memory = await workerMemory(worker.port);
      if (memory && memory.rss > (atPeak?.rss ?? 0)) atPeak = memory;
    }
    if (performance.now() - lastReport > 2000) {
      lastReport = performance.now();
      say(
        `${((lastReport - started) / 1000).toFixed(0)} s: searchable ${count}, indexed ${await workerCounter(worker.port, 'ingest_events_indexed_total')}${memory ? `, ${describeMemory(memory)}` : ''}`,
      );
    }
    await sleep(50);
  }
  if (atPeak) say(`memory at the highest RSS sampled: ${describeMemory(atPeak)}`);
  const seconds = (performance.now() - started) / 1000;
  const drained: Drained = { seconds, cpuSeconds: cpuSeconds(pid) - cpuAtStart, peakRssBytes: peakRssBytes(pid), store: await span(expected) };
  const bulks = await workerBulkTotals(worker.port);
  const requests = bulks.requests - bulksAtStart.requests;
  if (requests > 0) drained.bulks = { requests, eventsPerRequest: expected / requests, meanInFlight: (bulks.seconds - bulksAtStart.seconds) / seconds };
  await sleep(1500);
  const count = await searchable(client, prefix);
  if (count !== expected) throw new Error(`${count} documents searchable after the worker drained the topics, expected exactly ${expected}`);
  return drained;
}

/** Elasticsearch's indexing counter moves before a refresh: the first event the peer indexed starts the clock. */
async function drainByPeer(
  peer: Awaited<ReturnType<typeof startRsyslogPeer>>,
  client: EsClient,
  prefix: string,
  expected: number,
  say: (line: string) => void,
): Promise<Drained> {
  const indexed = async () => {
    const stats = await client.indices
      .stats({ index: `${prefix}*`, metric: 'indexing', filter_path: '_all.primaries.indexing.index_total' })
      .catch(() => undefined);
    return stats?._all?.primaries?.indexing?.index_total ?? 0;
  };
  const deadline = performance.now() + 120_000;
  while ((await indexed()) === 0) {
    if (performance.now() > deadline) throw new Error(`rsyslog indexed nothing within 120 s: ${peer.errors().slice(0, 2000)}`);
    await sleep(10);
  }
  const started = performance.now();
  const cpuAtStart = peer.cpuSeconds();
  const span = await storeSpan(client);
  let lastReport = started;
  let lastCount = -1;
  let lastChange = started;
  for (;;) {
    const count = await searchable(client, prefix);
    if (count >= expected) break;
    if (count !== lastCount) [lastCount, lastChange] = [count, performance.now()];
    if (performance.now() - lastChange > 60_000) throw new Error(`rsyslog stalled at ${count} of ${expected} searchable: ${peer.errors().slice(0, 2000)}`);
    if (performance.now() - lastReport > 2000) {
      lastReport = performance.now();
      say(`${((lastReport - started) / 1000).toFixed(0)} s: searchable ${count}`);
    }
    await sleep(50);
  }
  const seconds = (performance.now() - started) / 1000;
  return { seconds, cpuSeconds: peer.cpuSeconds() - cpuAtStart, peakRssBytes: peer.peakRssBytes(), store: await span(expected) };
}

/**
 * Every contender writes into indices that exist already (the template's mapping), created before
 * its clock starts: creating 18 partitions is a cluster-state update each, which a day of steady
 * ingest pays once, not per million events.
 */
async function createIndices(client: EsClient, prefix: string, replicas: number, names: string[], settings: Record<string, string> = {}): Promise<void> {
  await ensureEventIndexTemplate(client, prefix, replicas);
  for (const index of names) await client.indices.create({ index, settings: { index: settings } });
  await client.cluster.health({ index: `${prefix}*`, wait_for_status: 'green', timeout: '60s' });
}

/** The same partitions under another prefix. */
const renamed = (names: string[], from: string, to: string) => names.map((name) => `${to}${name.slice(from.length)}`);

async function dropIndices(client: EsClient, prefix: string): Promise<void> {
  await client.indices.delete({ index: `${prefix}*`, ignore_unavailable: true, allow_no_indices: true });
  await client.indices.deleteIndexTemplate({ name: eventIndexTemplateName(prefix) }, { ignore: [404] });
}

/** A fresh worker on topics of its own, fed a steady stream; every 50th event is a marker polled until searchable. */
async function measureFreshness(context: {
  kafka: ReturnType<typeof createKafka>;
  admin: Admin;
  config: Config;
  brokers: string[];
  elasticsearchUrl: string;
  client: EsClient;
  run: string;
  /** Names the worker's topics (and so its consumer group). */
  name: string;
  rate: number;
  seconds: number;
  indexPrefix: string;
  workers: WorkerProcess[];
  say(line: string): void;
}): Promise<{ eventsPerSecond: number; samples: number; p50Ms: number; p99Ms: number }> {
  const { client, rate, seconds, say } = context;
  const locations: BenchLocations = { indexPrefix: context.indexPrefix, topicPrefix: `${context.run}-${context.name}.` };
  const routes = sourceRoutes({ TOPIC_PREFIX: locations.topicPrefix, SOURCE_TOPICS: {} });
  await ensureTopics(
    context.admin,
    routes.flatMap((route) => [route.topic, route.deadLetterTopic]),
    context.config.INGEST_TOPIC_PARTITIONS,
    context.config.INGEST_TOPIC_REPLICATION_FACTOR,
  );
  const worker = await startWorkerProcess({
    config: context.config,
    brokers: context.brokers,
    elasticsearchUrl: context.elasticsearchUrl,
    locations,
    env: { RETENTION_INTERVAL_SECONDS: '0' },
  });
  context.workers.push(worker);
  const producer = context.kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    // steady state, not start-up: the group formed, every source's fields mapped, the partitions made
    const topicOf = new Map(routes.map((route) => [route.source, route.topic]));
    const topicOfSource = (source: SourceName) => topicOf.get(source)!;
    const [warmUp] = demoBatches(topicOfSource, { idPrefix: 'warm-up-', seed: 11, perBatch: FRESHNESS_WARM_UP_EVENTS, batches: 1 });
    await producer.sendBatch({ acks: -1, topicMessages: warmUp!.topicMessages });
    while ((await searchable(client, locations.indexPrefix)) < FRESHNESS_WARM_UP_EVENTS) await sleep(100);
    say(`freshness: steady stream of ${rate} events/s for ${seconds} s, every ${MARKER_EVERY}th a marker`);
    const latencies = await steadyLatencies(producer, client, locations.indexPrefix, topicOfSource, rate, seconds);
    const sorted = [...latencies].sort((a, b) => a - b);
    return { eventsPerSecond: rate, samples: sorted.length, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99) };
  } finally {
    await producer.disconnect();
    await worker.stop();
  }
}

/**
 * Produces at a fixed rate in 100 ms ticks; marker events are polled until searchable, their latency
 * counted from the send. Every tick's messages are made before the stream starts: on two cores,
 * making 8,000 demo events a second took the bench a tenth of a core that the worker and the store
 * then did not have. A tick goes out in one produce request (nine, a topic each, took the broker
 * 0.18 of a core at 7,500 events/s against 0.10-0.12).
 */
export async function steadyLatencies(
  producer: Producer,
  client: EsClient,
  indexPrefix: string,
  topicOf: (source: SourceName) => string,
  rate: number,
  seconds: number,
): Promise<number[]> {
  const pendingMarkers = new Map<string, number>();
  const latencies: number[] = [];
  const tickMs = 100;
  const perTick = Math.max(1, Math.round((rate * tickMs) / 1000));
  const ticks = demoBatches(topicOf, { idPrefix: 'steady-', seed: 7, perBatch: perTick, batches: (seconds * 1000) / tickMs });
  let producing = true;
  const poller = (async () => {
    while (producing || pendingMarkers.size > 0) {
      if (pendingMarkers.size > 0) {
        const ids = [...pendingMarkers.keys()];
        const response = await client.search({ index: `${indexPrefix}*`, size: ids.length, _source: false, query: { ids: { values: ids } } });
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
  const start = performance.now();
  try {
    for (const [tick, { topicMessages, markers }] of ticks.entries()) {
      const sentAt = performance.now();
      // one produce request a tick for every topic, as a batching producer (librdkafka, the Java client) sends them
      await producer.sendBatch({ acks: -1, topicMessages });
      for (const id of markers) pendingMarkers.set(id, sentAt);
      await sleep(Math.max(0, start + (tick + 1) * tickMs - performance.now()));
    }
  } finally {
    producing = false;
  }
  const deadline = performance.now() + 30_000;
  while (pendingMarkers.size > 0 && performance.now() < deadline) await sleep(50);
  const lost = pendingMarkers.size;
  pendingMarkers.clear();
  await poller;
  if (lost > 0) throw new Error(`${lost} marker events never became searchable`);
  return latencies;
}

/** Demo events as messages by topic, `perBatch` to a batch, ids `<idPrefix><n>`; every MARKER_EVERY-th id is a batch's marker. */
function demoBatches(
  topicOf: (source: SourceName) => string,
  { idPrefix, seed, perBatch, batches }: { idPrefix: string; seed: number; perBatch: number; batches: number },
): { topicMessages: { topic: string; messages: Message[] }[]; markers: string[] }[] {
  const events = demoEvents({ count: perBatch * batches, from: new Date(Date.now() - 3_600_000), to: new Date(), projects: ['default'], seed });
  const made = [];
  let sequence = 0;
  for (let batch = 0; batch < batches; batch += 1) {
    const bySource = new Map<SourceName, Message[]>();
    const markers: string[] = [];
    for (let n = 0; n < perBatch; n += 1) {
      const { source, event } = events.next().value!;
      sequence += 1;
      const id = `${idPrefix}${sequence}`;
      if (sequence % MARKER_EVERY === 0) markers.push(id);
      const messages = bySource.get(source) ?? [];
      messages.push({ value: Buffer.from(JSON.stringify({ ...event, id })) });
      bySource.set(source, messages);
    }
    made.push({ topicMessages: [...bySource].map(([source, messages]) => ({ topic: topicOf(source), messages })), markers });
  }
  return made;
}

/** The rates with ours divided by each, so a reader sees at once which side limits. */
export function ingestTable(result: IngestBenchResult): string {
  const ours = result.rates.find((rate) => rate.label === 'ours');
  const lines = [
    '| measured | events/s | MB/s | seconds | CPU s per 100k | peak RSS MB | ours / this | Elasticsearch CPU s per 100k | machine idle |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const rate of result.rates) {
    const ratio = ours && rate.label !== 'ours' ? (ours.eventsPerSecond / rate.eventsPerSecond).toFixed(2) : '';
    const idle = rate.machineIdle === undefined ? '' : `${Math.round(rate.machineIdle * 100)}%`;
    lines.push(
      `| ${rate.label} | ${Math.round(rate.eventsPerSecond)} | ${rate.megabytesPerSecond.toFixed(1)} | ${rate.seconds.toFixed(1)} | ${rate.cpuSecondsPer100k?.toFixed(2) ?? ''} | ${rate.peakRssMb?.toFixed(0) ?? ''} | ${ratio} | ${rate.storeCpuSecondsPer100k?.toFixed(2) ?? ''} | ${idle} |`,
    );
  }
  if (result.peerSkipped) lines.push(`| peer | skipped: ${result.peerSkipped} | | | | | | | |`);
  if (result.zstdSkipped) lines.push(`| ours-zstd | skipped: ${result.zstdSkipped} | | | | | | | |`);
  lines.push('', 'ours (and ours-before): the worker as operators run it, its production build (`npm run build`, then `node dist/ingest/main.js`)');
  const freshness = [
    { fresh: result.freshnessSlow, share: 'a tenth of ours' },
    { fresh: result.freshness, share: 'half of ours' },
  ];
  if (result.freshness) lines.push('');
  for (const { fresh, share } of freshness) {
    if (fresh)
      lines.push(
        `produce-to-searchable at a steady ${fresh.eventsPerSecond} events/s (${share}): p50 ${Math.round(fresh.p50Ms)} ms, p99 ${Math.round(fresh.p99Ms)} ms (${fresh.samples} markers)`,
      );
  }
  lines.push('', '| target (issue 21) | this run | verdict |', '|---|---|---|');
  for (const target of ingestTargets(result)) lines.push(`| ${target.target} | ${target.figure} | ${target.verdict} |`);
  return lines.join('\n');
}
