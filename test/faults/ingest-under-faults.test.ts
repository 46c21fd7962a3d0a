import type { Client } from '@elastic/elasticsearch';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../shared/config.ts';
import { createElasticsearchClient } from '../../shared/elasticsearch.ts';
import type { SourceName } from '../../shared/sources.ts';
import { ensureTopics, sourceRoutes, sourceTopic } from '../../ingest/topics.ts';
import { DEAD_LETTER_HEADERS } from '../../ingest/dead-letter.ts';
import { faultPlan, type PlannedMessage } from './support/fault-plan.ts';
import { readCommitted } from './support/committed-records.ts';
import { PrivateStack } from './support/private-stack.ts';
import { WorkerProcess } from './support/worker-process.ts';
import { waitFor } from '../support/ingest.ts';

/** 20,000 in `npm test`; `npm run test:faults` sets 200,000. */
const EVENTS = Number(process.env.FAULTS_EVENTS ?? 20_000);
const FULL = EVENTS >= 100_000;
/** How long Elasticsearch stays down (the 30 s in the full run). */
const OUTAGE_MS = FULL ? 30_000 : 10_000;
/** The stream's pace: the faults below are placed along it, so they land while events keep arriving. */
const PRODUCE_MS = FULL ? 150_000 : 60_000;
const SOURCES: SourceName[] = ['edge_logs', 'postgres_logs', 'auth_logs'];
const PARTITIONS = 3;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Sends the plan in rounds at a steady pace, one send per topic partition (kafkajs retries a
 * multi-partition send whole, which would duplicate what the other partitions took), with an
 * idempotent producer. `pause` lets a broker restart wait for the send in flight and hold the rest.
 */
class PacedStream {
  produced = 0;
  private producer: Producer | undefined;
  private held: Promise<void> | undefined;
  private release: (() => void) | undefined;
  private inFlight: Promise<void> = Promise.resolve();
  readonly done: Promise<void>;

  constructor(
    private readonly kafka: () => Kafka,
    private readonly plan: PlannedMessage[],
    durationMs: number,
  ) {
    this.done = this.run(durationMs);
  }

  private async run(durationMs: number): Promise<void> {
    const rounds = 200;
    const perRound = Math.ceil(this.plan.length / rounds);
    const started = Date.now();
    for (let round = 0; round * perRound < this.plan.length; round += 1) {
      while (this.held) await this.held;
      const slice = this.plan.slice(round * perRound, (round + 1) * perRound);
      this.inFlight = this.send(slice);
      await this.inFlight;
      this.produced += slice.length;
      const due = started + ((round + 1) * durationMs) / rounds;
      if (due > Date.now()) await sleep(due - Date.now());
    }
    await this.producer?.disconnect();
    this.producer = undefined;
  }

  private async send(slice: PlannedMessage[]): Promise<void> {
    if (!this.producer) {
      this.producer = this.kafka().producer({ idempotent: true, maxInFlightRequests: 1 });
      await this.producer.connect();
    }
    const byPartition = new Map<string, PlannedMessage[]>();
    for (const message of slice) {
      const key = `${message.topic}\u0000${message.partition}`;
      byPartition.set(key, [...(byPartition.get(key) ?? []), message]);
    }
    for (const messages of byPartition.values()) {
      await this.producer.send({
        topic: messages[0]!.topic,
        acks: -1,
        messages: messages.map((message) => ({ partition: message.partition, key: message.key, value: message.value })),
      });
    }
  }

  /** Holds the stream after the send in flight, with the producer disconnected (a broker restart follows). */
  async pause(): Promise<void> {
    this.held = new Promise((resolve) => (this.release = resolve));
    await this.inFlight;
    await this.producer?.disconnect();
    this.producer = undefined;
  }

  resume(): void {
    const release = this.release;
    this.held = undefined;
    this.release = undefined;
    release?.();
  }
}

interface FaultRecord {
  fault: string;
  atSeconds: number;
  detail: string;
}

describe(`ingest under faults (${EVENTS.toLocaleString('en')} events)`, () => {
  let stack: PrivateStack;
  let config: Config;
  let workerEnv: Record<string, string>;
  let client: Client;
  const workers = new Set<WorkerProcess>();

  beforeAll(async () => {
    stack = await PrivateStack.start('ingest');
    workerEnv = {
      KAFKA_BROKERS: stack.kafkaBrokers.join(','),
      ELASTICSEARCH_URL: stack.elasticsearchUrl,
      INDEX_PREFIX: 'faults-',
      TOPIC_PREFIX: 'faults.',
      INGEST_GROUP_ID: 'faults-ingest',
      INGEST_TOPIC_PARTITIONS: String(PARTITIONS),
      // a killed worker's partitions move on after 10 s (the broker's minimum of 6 s costs memberships on a loaded machine)
      INGEST_SESSION_TIMEOUT_MS: '10000',
      // small bulks: many commits, so kills land between some of them
      INGEST_BULK_MAX_EVENTS: '500',
      INGEST_MAX_MESSAGE_BYTES: '16384',
      INGEST_RETRY_INITIAL_MS: '100',
      INGEST_RETRY_MAX_MS: '1000',
      RETENTION_INTERVAL_SECONDS: '0',
    };
    config = loadConfig(workerEnv);
    client = createElasticsearchClient({ url: stack.elasticsearchUrl });
    // on a loaded shared machine a node can take minutes to start (the private stack waits up to six)
  }, 600_000);

  afterAll(async () => {
    for (const worker of workers) await worker.kill();
    await client?.close();
    await stack?.stop();
  }, 120_000);

  it('stores every event exactly once and dead-letters exactly the poison messages, through kills, an Elasticsearch outage, a broker restart and a second worker', {
    timeout: FULL ? 2_400_000 : 1_200_000,
  }, async () => {
    const kafka = () => new Kafka({ clientId: 'fault-suite', brokers: stack.kafkaBrokers, logLevel: logLevel.NOTHING });
    const admin = kafka().admin();
    await admin.connect();
    // the test's topics exist (leaders elected) before the first send; the worker creates the rest
    await ensureTopics(
      admin,
      SOURCES.map((source) => sourceTopic(config, source)),
      PARTITIONS,
      1,
    );
    await admin.disconnect();

    const plan = faultPlan({
      events: EVENTS,
      sources: SOURCES.map((source) => ({ source, topic: sourceTopic(config, source) })),
      partitions: PARTITIONS,
      maxMessageBytes: config.INGEST_MAX_MESSAGE_BYTES,
    });
    const began = Date.now();
    const faults: FaultRecord[] = [];
    const record = (fault: string, detail: string) => faults.push({ fault, atSeconds: Math.round((Date.now() - began) / 100) / 10, detail });
    const unexpectedExits: string[] = [];
    const spawnWorker = async (name: string) => {
      const worker = await WorkerProcess.spawn(name, workerEnv, {
        logFile: process.env.FAULTS_WORKER_LOGS ? `${process.env.FAULTS_WORKER_LOGS}/${name.split(' ')[0]}.log` : undefined,
      });
      workers.add(worker);
      // 'close', not 'exit': by then stderr is read to its end, so the tail holds the worker's last words
      worker.child.once('close', (code, signal) => {
        if (signal !== 'SIGKILL' && !(signal === 'SIGTERM' || code === 0))
          unexpectedExits.push(`${name} exited by itself (${code ?? signal}):\n${worker.logTail()}`);
      });
      return worker;
    };
    const storedCount = async () => {
      await client.indices.refresh({ index: `${config.INDEX_PREFIX}*`, ignore_unavailable: true });
      return (await client.count({ index: `${config.INDEX_PREFIX}*`, ignore_unavailable: true })).count;
    };
    const producedAtLeast = (fraction: number) =>
      waitFor(
        `${fraction * 100}% of the stream to be produced`,
        async () => (stream.produced >= fraction * plan.messages.length ? true : undefined),
        PRODUCE_MS * 3,
        200,
      );

    let main = await spawnWorker('worker-1');
    const stream = new PacedStream(kafka, plan.messages, PRODUCE_MS);
    const streamFailed = stream.done.then(
      () => undefined,
      (error: unknown) => error as Error,
    );

    // 1. SIGKILL while batches are being written
    await producedAtLeast(0.1);
    await waitFor('worker-1 to index events', async () => ((await main.indexed()) > 0 ? true : undefined));
    const indexedByFirst = await main.indexed();
    await main.kill();
    record('SIGKILL worker', `worker-1, mid-stream, after it indexed ${indexedByFirst} events`);
    main = await spawnWorker('worker-2');

    // 2. Elasticsearch stopped; SIGKILL while the worker holds its partitions; started again
    await producedAtLeast(0.25);
    const outageBegan = Date.now();
    await stack.stopElasticsearch();
    record('Elasticsearch stopped', `for ${OUTAGE_MS / 1000} s`);
    const held = await waitFor('worker-2 to hold a partition', async () => ((await main.health()).heldPartitions > 0 ? true : undefined), OUTAGE_MS).catch(
      () => false,
    );
    await main.kill();
    record('SIGKILL worker', `worker-2, during the Elasticsearch outage (${held ? 'holding partitions' : 'no partition held yet'})`);
    await sleep(Math.max(0, outageBegan + OUTAGE_MS - Date.now()));
    await stack.startElasticsearch();
    record('Elasticsearch started', `after ${Math.round((Date.now() - outageBegan) / 1000)} s down (the start itself included)`);
    // started once the store answers: a worker gives up at start-up after 120 s without it, and a
    // loaded machine can take that long to start Elasticsearch
    main = await spawnWorker('worker-3');

    // 3. the broker restarted in place (the stream holds meanwhile: the test's producer is not under test)
    await producedAtLeast(0.5);
    await waitFor('worker-3 to index events', async () => ((await main.indexed()) > 0 ? true : undefined), 120_000);
    await stream.pause();
    const brokerDown = Date.now();
    await stack.stopKafka();
    record('Kafka broker stopped', 'stop, then start with the same folder and ports');
    await stack.startKafka();
    record('Kafka broker started', `after ${Math.round((Date.now() - brokerDown) / 1000)} s down`);
    stream.resume();

    // 4. a second worker joins and works; SIGKILL the first meanwhile; then the second leaves
    await producedAtLeast(0.65);
    // the stream waits until the group is rebalanced: on a fast drain worker-3 could otherwise have taken
    // every event before worker-4 held a partition, leaving it nothing to index
    await stream.pause();
    const second = await spawnWorker('worker-4 (second)');
    await waitFor('worker-4 to join the group', async () => ((await second.health()).status === 'consuming' ? true : undefined), 120_000);
    stream.resume();
    record('second worker joined', 'worker-4 joins the group next to worker-3');
    await waitFor('the second worker to index events', async () => ((await second.indexed()) > 0 ? true : undefined), 120_000);
    await main.kill();
    record('SIGKILL worker', `worker-3, while worker-4 shares the group (worker-4 indexed ${await second.indexed()} so far)`);
    main = await spawnWorker('worker-5');
    await waitFor('worker-5 to join the group', async () => ((await main.health()).status === 'consuming' ? true : undefined), 120_000);
    await sleep(5000);
    const secondIndexed = await second.indexed();
    const secondExit = await second.terminate();
    record('second worker left', `worker-4 stopped with SIGTERM (exit ${secondExit}) after indexing ${secondIndexed} events`);
    expect(secondExit).toBe(0);

    const producerError = await streamFailed;
    expect(producerError, 'the test producer failed').toBeUndefined();
    const producedAt = Math.round((Date.now() - began) / 1000);

    // every source topic holds exactly what was sent (the test's producer added nothing)
    const check = kafka().admin();
    await check.connect();
    let inTopics = 0;
    for (const source of SOURCES) for (const end of await check.fetchTopicOffsets(sourceTopic(config, source))) inTopics += Number(end.high);
    expect(inTopics, 'messages in the source topics').toBe(plan.messages.length);

    // the group commits every partition to its end
    await waitFor(
      'the group to commit every source partition to its end',
      async () => {
        for (const source of SOURCES) {
          const topic = sourceTopic(config, source);
          const ends = await check.fetchTopicOffsets(topic);
          const [committed] = await check.fetchOffsets({ groupId: config.INGEST_GROUP_ID, topics: [topic] });
          for (const end of ends) if (committed?.partitions.find((partition) => partition.partition === end.partition)?.offset !== end.high) return undefined;
        }
        return true;
      },
      FULL ? 900_000 : 300_000,
      1000,
    );
    const drainedAt = Math.round((Date.now() - began) / 1000);
    expect(await main.terminate()).toBe(0);

    // the stored seqs as a multiset: a composite aggregation pages through every distinct value with its count
    await client.indices.refresh({ index: `${config.INDEX_PREFIX}*` });
    const counts = new Map<number, number>();
    let after: Record<string, unknown> | undefined;
    do {
      const response = await client.search({
        index: `${config.INDEX_PREFIX}*`,
        size: 0,
        aggs: { seqs: { composite: { size: 10_000, sources: [{ seq: { terms: { field: 'metadata.seq' } } }], ...(after ? { after } : {}) } } },
      });
      const seqs = response.aggregations!.seqs as { buckets: { key: { seq: number }; doc_count: number }[]; after_key?: Record<string, unknown> };
      for (const bucket of seqs.buckets) counts.set(bucket.key.seq, bucket.doc_count);
      after = seqs.buckets.length > 0 ? seqs.after_key : undefined;
    } while (after);
    const stored = await storedCount();
    const lost = plan.eventSeqs.filter((seq) => !counts.has(seq));
    const duplicated = [...counts].filter(([, count]) => count > 1);
    const unexpected = [...counts.keys()].filter((seq) => !plan.seqSource.has(seq));
    // every stored event is in its own source's indices
    const misplaced: string[] = [];
    for (const source of SOURCES) {
      const expected = plan.eventSeqs.filter((seq) => plan.seqSource.get(seq) === source).length;
      const found = (await client.count({ index: `${config.INDEX_PREFIX}${source}*` })).count;
      if (found !== expected) misplaced.push(`${source}: ${found} stored, ${expected} produced`);
    }

    // the dead-letter topics, read committed (letters go out in transactions, whose markers take offsets too)
    const deadLetterTopics = sourceRoutes(config)
      .filter((route) => SOURCES.includes(route.source))
      .map((route) => route.deadLetterTopic);
    await check.disconnect();
    // read by librdkafka, whose read_committed leaves out every aborted transaction (./support/committed-records.ts)
    const readLetters = async () => (await Promise.all(deadLetterTopics.map((topic) => readCommitted(stack.kafkaBrokers, topic)))).flat();
    // every letter is final (the group committed to the end): read until the poison count has arrived, then once more a while later
    await waitFor(
      `${plan.poison.length} dead letters to be read`,
      async () => ((await readLetters()).length >= plan.poison.length ? true : undefined),
      120_000,
    ).catch(() => undefined);
    await sleep(10_000);
    const letters: string[] = [];
    const letterTimes = new Map<string, number[]>();
    for (const record of await readLetters()) {
      const letter = [
        record.key,
        record.headers[DEAD_LETTER_HEADERS.reason] ?? '',
        record.headers[DEAD_LETTER_HEADERS.topic] ?? '',
        record.headers[DEAD_LETTER_HEADERS.partition] ?? '',
        record.value,
      ].join('\u0000');
      letters.push(letter);
      letterTimes.set(letter, [...(letterTimes.get(letter) ?? []), Math.round((record.timestampMs - began) / 100) / 10]);
    }
    const expectedLetters = plan.poison.map((poison) => [poison.key, poison.reason, poison.topic, String(poison.partition), poison.value ?? ''].join('\u0000'));
    const tally = (list: string[]) => list.reduce((map, letter) => map.set(letter, (map.get(letter) ?? 0) + 1), new Map<string, number>());
    const expectedTally = tally(expectedLetters);
    const receivedTally = tally(letters);
    const missingLetters = [...expectedTally].filter(([letter, count]) => (receivedTally.get(letter) ?? 0) < count).map(([letter]) => letter);
    const extraLetters = [...receivedTally].flatMap(([letter, count]) => Array<string>(Math.max(0, count - (expectedTally.get(letter) ?? 0))).fill(letter));
    const label = (letter: string) => letter.split('\u0000').slice(0, 2).join(' ');

    const summary = [
      ['events produced', plan.eventSeqs.length],
      ['poison messages produced', plan.poison.length],
      ['events stored (documents)', stored],
      ['distinct seqs stored', counts.size],
      ['events lost', lost.length],
      ['events duplicated (extra copies)', duplicated.reduce((sum, [, count]) => sum + count - 1, 0)],
      ['dead letters in the topics', letters.length],
      ['poison messages not dead-lettered', missingLetters.length],
      ['dead letters beyond the poison (extra or duplicate)', extraLetters.length],
      ['stream produced by (s)', producedAt],
      ['all committed by (s)', drainedAt],
    ];
    console.log(
      [
        `\nfault suite: ingest of ${EVENTS.toLocaleString('en')} events across ${SOURCES.join(', ')} (${PARTITIONS} partitions each)`,
        ...summary.map(([name, value]) => `  ${String(name).padEnd(52)} ${String(value).padStart(9)}`),
        '  faults injected:',
        ...faults.map((fault) => `    ${String(fault.atSeconds).padStart(6)} s  ${fault.fault}: ${fault.detail}`),
        ...(extraLetters.length > 0
          ? [
              '  dead letters written more than once (seconds of each copy):',
              ...[...new Set(extraLetters)].map(
                (letter) =>
                  `    ${label(letter)}: ${letterTimes
                    .get(letter)!
                    .sort((a, b) => a - b)
                    .join(', ')} s`,
              ),
            ]
          : []),
        ...(unexpectedExits.length > 0 ? ['  workers that exited by themselves:', ...unexpectedExits.map((exit) => `    ${exit}`)] : []),
      ].join('\n'),
    );

    expect(unexpectedExits, 'workers that exited without being killed').toEqual([]);
    expect(lost.slice(0, 20), `${lost.length} events lost`).toEqual([]);
    expect(duplicated.slice(0, 20), `${duplicated.length} events stored more than once`).toEqual([]);
    expect(unexpected.slice(0, 20), 'seqs stored that were never produced').toEqual([]);
    expect(stored, 'documents without a produced seq').toBe(counts.size);
    expect(misplaced).toEqual([]);
    expect(missingLetters.map(label), 'poison messages missing from the dead-letter topics').toEqual([]);
    expect(extraLetters.map(label), 'dead letters that are not (or duplicate) a poison message').toEqual([]);
    expect(faults.filter((fault) => fault.fault === 'SIGKILL worker')).toHaveLength(3);
  });
});
