import { randomBytes } from 'node:crypto';
import type { Client } from '@elastic/elasticsearch';
import type { FastifyInstance } from 'fastify';
import { Partitioners, type Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafka } from '../../ingest/kafka.ts';
import { sourceTopic } from '../../ingest/topics.ts';
import { startIngestWorker, type IngestWorker } from '../../ingest/worker.ts';
import { loadConfig, type Config } from '../../shared/config.ts';
import { createElasticsearchClient, elasticsearchConnection } from '../../shared/elasticsearch.ts';
import { kafkaConnection } from '../../shared/kafka-connection.ts';
import { createLogger } from '../../shared/logger.ts';
import { sourceIndexPattern } from '../../shared/partitions.ts';
import { KeyStore } from '../../src/auth/key-store.ts';
import { buildServer } from '../../src/server.ts';
import { CLUSTER_INDEX_REPLICAS, CLUSTER_TOPIC_REPLICATION_FACTOR, startLocalStack, type LocalStack, type StackServer } from '../../stack/index.ts';

/**
 * Issue 10, section 3: on a cluster of three Kafka nodes and three Elasticsearch nodes, two ingest
 * workers and two query services run side by side while a stream of events is produced; one broker
 * (the active controller) and one Elasticsearch node (the elected master) are killed with SIGKILL
 * mid-ingest and mid-query, then started again. Every produced event must be stored exactly once
 * (checked per sequence number) and both saved endpoints must keep answering on both services.
 */

const PARTITIONS = 3;
/** Events per partition per send, and the pause between sends: about 60 events a second in all. */
const BATCH = 10;
const SEND_PAUSE_MS = 500;
const SOURCE = 'edge_logs';
const PROJECT = 'cluster-faults';

type Phase = 'before the faults' | 'broker and node down' | 'restarting' | 'after the restarts';

interface Answer {
  service: string;
  endpoint: string;
  status: number;
  phase: Phase;
  ms: number;
  /** What the body said when the status was not 200. */
  detail?: string;
}

const log = (line: string) => console.error(`cluster-faults: ${line}`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('cluster: a broker and an Elasticsearch node killed mid-ingest and mid-query', () => {
  let stack: LocalStack;
  let config: Config;
  let store: Client;
  const workers: IngestWorker[] = [];
  const services: FastifyInstance[] = [];
  let apiKey: string;

  beforeAll(async () => {
    const started = Date.now();
    stack = await startLocalStack(
      loadConfig({ STACK_KAFKA_PORT: '0', STACK_KAFKA_CONTROLLER_PORT: '0', STACK_ELASTICSEARCH_PORT: '0', STACK_ELASTICSEARCH_TRANSPORT_PORT: '0' }),
      (line) => log(`stack: ${line}`),
      { cluster: true },
    );
    log(`cluster ready in ${((Date.now() - started) / 1000).toFixed(0)} s: kafka ${stack.kafkaBrokers.join(',')}, elasticsearch ${stack.elasticsearchUrl}`);
    const name = `c${randomBytes(4).toString('hex')}`;
    config = loadConfig({
      KAFKA_BROKERS: stack.kafkaBrokers.join(','),
      ELASTICSEARCH_URL: stack.elasticsearchUrl,
      INGEST_TOPIC_REPLICATION_FACTOR: String(CLUSTER_TOPIC_REPLICATION_FACTOR),
      ELASTICSEARCH_INDEX_REPLICAS: String(CLUSTER_INDEX_REPLICAS),
      INDEX_PREFIX: `${name}-`,
      TOPIC_PREFIX: `${name}.`,
      INGEST_GROUP_ID: `${name}-ingest`,
      INGEST_TOPIC_PARTITIONS: String(PARTITIONS),
      INGEST_PORT: '0',
      INGEST_RETRY_MAX_MS: '2000',
      INGEST_LAG_POLL_MS: '0',
      RETENTION_INTERVAL_SECONDS: '0',
      PORT: '0',
      // every answer comes from the store, not from a cache, and no answer is a rate-limit refusal
      CACHE_MAX_BYTES: '0',
      RATE_LIMIT_PER_MINUTE: '0',
      API_KEY_CACHE_SECONDS: '1',
      LOG_LEVEL: 'error',
    });
    // the test's own reads wait long: six JVMs and the test share a small machine
    store = createElasticsearchClient({ ...elasticsearchConnection(config), requestTimeoutMs: 120_000 });
    // warnings too: a held partition or a rebalance is what explains a stall
    for (let index = 0; index < 2; index += 1) workers.push(await startIngestWorker(config, createLogger(`ingest-${index + 1}`, 'warn')));
    for (let index = 0; index < 2; index += 1) {
      const app = await buildServer({
        config,
        logger: createLogger(`query-${index + 1}`, 'error'),
        elasticsearch: createElasticsearchClient(elasticsearchConnection(config)),
        kafkaBrokers: config.KAFKA_BROKERS!,
      });
      await app.listen({ host: '127.0.0.1', port: 0 });
      services.push(app);
    }
    // a key from the key store (its index has a replica too), so authentication reads the store while nodes die
    apiKey = (
      await new KeyStore(store, config.INDEX_PREFIX, config.ELASTICSEARCH_INDEX_REPLICAS).create({
        account: 'cluster-faults',
        endpoints: 'all',
        projects: null,
      })
    ).key;
  }, 900_000);

  afterAll(async () => {
    // a worker stuck in a rebalance can take long to leave its group: bounded, the stack goes regardless
    const bounded = (stopping: Promise<unknown>) => Promise.race([stopping.catch(() => undefined), sleep(60_000)]);
    await bounded(Promise.all([...services.map((app) => app.close()), ...workers.map((worker) => worker.stop())]));
    await bounded(store?.close() ?? Promise.resolve());
    await stack?.stop();
  }, 300_000);

  it('stores every produced event exactly once and keeps answering both endpoints on both services', async () => {
    const failedWorker = Promise.race(workers.map((worker) => worker.failed));
    let workerFailure: Error | undefined;
    void failedWorker.then((error) => (workerFailure = error));

    const testStart = new Date(Date.now() - 60_000).toISOString();
    let phase: Phase = 'before the faults';
    const answers: Answer[] = [];
    let querying = false;
    const queries = services.flatMap((app, index) => {
      const port = (app.server.address() as { port: number }).port;
      const service = `query-${index + 1}`;
      return [
        {
          service,
          endpoint: 'logs.all',
          url: `http://127.0.0.1:${port}/api/endpoints/query/logs.all?project=${PROJECT}&iso_timestamp_start=${encodeURIComponent(testStart)}`,
        },
        {
          service,
          endpoint: 'usage.api-counts',
          url: `http://127.0.0.1:${port}/api/endpoints/query/usage.api-counts?interval=hourly&project=${encodeURIComponent('cluster\\.example')}`,
        },
      ];
    });
    const producer = new EventStream(config);
    await producer.start();
    // the baseline starts once the platform serves: the first partition created, its replica
    // allocated (green), so that a node's loss costs no shard copy's last instance
    await waitForServing(store, config, queries[0]!.url, apiKey);
    log(`serving after ${producer.produced.size} events; asking both endpoints on both services from now on`);
    querying = true;
    const queryLoops = queries.map(async (query) => {
      while (querying) {
        const sent = Date.now();
        const asked: Phase = phase;
        try {
          const response = await fetch(query.url, { headers: { 'x-api-key': apiKey }, signal: AbortSignal.timeout(60_000) });
          const body = await response.text();
          answers.push({
            service: query.service,
            endpoint: query.endpoint,
            status: response.status,
            phase: asked,
            ms: Date.now() - sent,
            detail: response.status === 200 ? undefined : body.slice(0, 300),
          });
          if (response.status === 200) expect(Array.isArray((JSON.parse(body) as { result: unknown }).result)).toBe(true);
        } catch (error) {
          answers.push({ service: query.service, endpoint: query.endpoint, status: 0, phase: asked, ms: Date.now() - sent, detail: String(error) });
        }
        await sleep(250);
      }
    });

    await sleep(20_000);
    const broker = await activeController(stack, config);
    const node = await electedMaster(stack, store);
    log(`killing ${broker.name} (the active controller) and ${node.name} (the elected master) with SIGKILL after ${producer.produced.size} events`);
    phase = 'broker and node down';
    await Promise.all([broker.kill(), node.kill()]);
    await sleep(30_000);
    log(`starting ${broker.name} and ${node.name} again after ${producer.produced.size} events`);
    phase = 'restarting';
    const restartStarted = Date.now();
    await Promise.all([broker.restart(), node.restart()]);
    log(`both back in ${((Date.now() - restartStarted) / 1000).toFixed(0)} s`);
    phase = 'after the restarts';
    await sleep(20_000);
    await producer.stop();
    log(`produced ${producer.produced.size} events (${producer.sendRetries} sends retried)`);

    // everything the workers will ever store is in once the group has committed to the end
    const stored = await waitForStored(store, config, producer.produced.size);
    querying = false;
    await Promise.all(queryLoops);

    log(`committed offsets of the group against the topic's ends: ${await committedAgainstEnds(config, sourceTopic(config, SOURCE))}`);
    const inKafka = await seqsInTopic(config, sourceTopic(config, SOURCE), producer.produced.size);
    printSummary(answers, producer, stored, inKafka);

    expect(workerFailure).toBeUndefined();
    // the producer's own side: idempotent, so each event is in the topic once
    expect(duplicates(inKafka)).toEqual([]);
    expect([...inKafka.keys()].sort(numeric)).toEqual([...producer.produced].sort(numeric));
    // the workers' side: each event in Elasticsearch exactly once
    expect(missing(producer.produced, stored)).toEqual([]);
    expect(duplicates(stored)).toEqual([]);
    expect([...stored.keys()].filter((seq) => !producer.produced.has(seq))).toEqual([]);
    // one node of three down never takes a quorum away, so every answer must be a 200
    expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
    for (const phaseName of ['before the faults', 'broker and node down', 'restarting', 'after the restarts'] as Phase[]) {
      for (const query of queries) {
        expect(
          answers.filter((answer) => answer.phase === phaseName && answer.service === query.service && answer.endpoint === query.endpoint).length,
          `${query.service} ${query.endpoint} answered during "${phaseName}"`,
        ).toBeGreaterThan(0);
      }
    }
  }, 1_800_000);
});

/**
 * Events with a unique `metadata.seq` and no id, produced by one idempotent producer, one send per
 * partition at a time: a send kafkajs gave up on is sent again with the same sequence numbers, which
 * the broker recognises if it did write it, so the topic holds every event once.
 */
class EventStream {
  readonly produced = new Set<number>();
  sendRetries = 0;
  private running = true;
  private loops: Promise<void>[] = [];
  private readonly producer: Producer;

  constructor(private readonly config: Config) {
    this.producer = createKafka(kafkaConnection(config), 'cluster-faults-producer', createLogger('producer', 'silent')).producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      idempotent: true,
      maxInFlightRequests: 1,
      retry: { retries: 10 },
    });
  }

  async start(): Promise<void> {
    await this.producer.connect();
    this.loops = Array.from({ length: PARTITIONS }, (_, partition) => this.produce(partition));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    await this.producer.disconnect();
  }

  private async produce(partition: number): Promise<void> {
    const topic = sourceTopic(this.config, SOURCE);
    for (let next = partition; this.running; ) {
      const seqs = Array.from({ length: BATCH }, (_, index) => next + index * PARTITIONS);
      const messages = seqs.map((seq) => ({ partition, value: JSON.stringify(event(seq)) }));
      for (;;) {
        try {
          await this.producer.send({ topic, acks: -1, messages });
          break;
        } catch (error) {
          this.sendRetries += 1;
          log(`partition ${partition}: send of seq ${seqs[0]}.. failed (${String(error)}), sending it again`);
          await sleep(1000);
        }
      }
      for (const seq of seqs) this.produced.add(seq);
      next += BATCH * PARTITIONS;
      await sleep(SEND_PAUSE_MS);
    }
  }
}

function event(seq: number): object {
  const path = ['/rest/v1/items', '/auth/v1/token', '/storage/v1/object', '/realtime/v1/websocket'][seq % 4]!;
  return {
    timestamp: new Date().toISOString(),
    event_message: `GET | 200 | ${path} | seq ${seq}`,
    project: PROJECT,
    metadata: { seq, request: { url: `https://cluster.example${path}?seq=${seq}`, path } },
  };
}

/** Waits until the source's first partition exists, every index has all its copies (green) and a query answers 200 with rows. */
async function waitForServing(store: Client, config: Config, url: string, apiKey: string): Promise<void> {
  const index = sourceIndexPattern(config.INDEX_PREFIX, SOURCE);
  const deadline = Date.now() + 300_000;
  while (Date.now() < deadline) {
    try {
      // every index green: the source partition and the API-key index each have their replica
      const health = await store.cluster.health({ wait_for_status: 'green', timeout: '10s' });
      const exists = await store.indices.exists({ index, allow_no_indices: false });
      if (health.status === 'green' && exists) {
        const response = await fetch(url, { headers: { 'x-api-key': apiKey } });
        if (response.status === 200 && ((await response.json()) as { result: unknown[] }).result.length > 0) return;
      }
    } catch (error) {
      log(`waiting for the platform to serve: ${String(error)}`);
    }
    await sleep(1000);
  }
  throw new Error('the platform did not serve the first events within 5 minutes');
}

/** The Kafka node that is the active controller now: its loss also moves the controller. */
async function activeController(stack: LocalStack, config: Config): Promise<StackServer> {
  const admin = createKafka(kafkaConnection(config), 'cluster-faults-admin', createLogger('admin', 'silent')).admin();
  await admin.connect();
  try {
    const { controller } = await admin.describeCluster();
    return stack.servers.kafka.find((server) => server.name === `kafka-${controller}`) ?? stack.servers.kafka[0]!;
  } finally {
    await admin.disconnect();
  }
}

/** The Elasticsearch node that is the elected master now: its loss also forces an election. */
async function electedMaster(stack: LocalStack, store: Client): Promise<StackServer> {
  const [master] = await store.cat.master({ format: 'json' });
  return stack.servers.elasticsearch.find((server) => server.name === master?.node) ?? stack.servers.elasticsearch[0]!;
}

/** Waits until the workers have stored as many events as were produced (or 5 minutes pass), then reads every stored seq. */
async function waitForStored(store: Client, config: Config, expected: number): Promise<Map<number, number>> {
  const index = sourceIndexPattern(config.INDEX_PREFIX, SOURCE);
  const deadline = Date.now() + 300_000;
  let count = 0;
  while (Date.now() < deadline) {
    try {
      await store.indices.refresh({ index, ignore_unavailable: true });
      count = (await store.count({ index, ignore_unavailable: true })).count;
      if (count >= expected) break;
    } catch (error) {
      log(`counting stored events: ${String(error)}`);
    }
    await sleep(2000);
  }
  log(`${count} events stored of ${expected} produced`);
  // a little longer, so that a late duplicate would have arrived too
  await sleep(5000);
  await store.indices.refresh({ index, ignore_unavailable: true });
  const seqs = new Map<number, number>();
  let after: (string | number)[] | undefined;
  for (;;) {
    const page = await store.search<{ metadata: { seq: number } }>({
      index,
      size: 5000,
      _source: ['metadata.seq'],
      sort: [{ id: 'asc' }],
      ...(after ? { search_after: after } : {}),
      query: { match_all: {} },
    });
    for (const hit of page.hits.hits) {
      const seq = hit._source!.metadata.seq;
      seqs.set(seq, (seqs.get(seq) ?? 0) + 1);
    }
    if (page.hits.hits.length < 5000) break;
    after = page.hits.hits[page.hits.hits.length - 1]!.sort as (string | number)[];
  }
  return seqs;
}

/** `partition: committed / end` for each partition of the topic. */
async function committedAgainstEnds(config: Config, topic: string): Promise<string> {
  const admin = createKafka(kafkaConnection(config), 'cluster-faults-admin', createLogger('admin', 'silent')).admin();
  await admin.connect();
  try {
    const ends = await admin.fetchTopicOffsets(topic);
    const [committed] = await admin.fetchOffsets({ groupId: config.INGEST_GROUP_ID, topics: [topic] });
    return ends
      .sort((a, b) => a.partition - b.partition)
      .map((end) => `${end.partition}: ${committed?.partitions.find((partition) => partition.partition === end.partition)?.offset ?? '?'} / ${end.high}`)
      .join(', ');
  } finally {
    await admin.disconnect();
  }
}

/** Every `metadata.seq` in the topic, with how many times it is there. */
async function seqsInTopic(config: Config, topic: string, atLeast: number): Promise<Map<number, number>> {
  const kafka = createKafka(kafkaConnection(config), 'cluster-faults-reader', createLogger('reader', 'silent'));
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(topic);
  await admin.disconnect();
  const total = ends.reduce((sum, end) => sum + Number(end.high) - Number(end.low), 0);
  const seqs = new Map<number, number>();
  let read = 0;
  const consumer = kafka.consumer({ groupId: `${config.INGEST_GROUP_ID}-reader` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const done = new Promise<void>((resolve) => {
    void consumer.run({
      eachMessage: async ({ message }) => {
        const seq = (JSON.parse(message.value!.toString()) as { metadata: { seq: number } }).metadata.seq;
        seqs.set(seq, (seqs.get(seq) ?? 0) + 1);
        read += 1;
        if (read >= total) resolve();
      },
    });
  });
  await Promise.race([done, sleep(120_000)]);
  await consumer.disconnect();
  if (read < Math.max(total, atLeast)) log(`read ${read} of ${total} messages back from ${topic}`);
  return seqs;
}

const numeric = (a: number, b: number) => a - b;

function duplicates(counts: Map<number, number>): { seq: number; times: number }[] {
  return [...counts].filter(([, times]) => times > 1).map(([seq, times]) => ({ seq, times }));
}

function missing(produced: Set<number>, stored: Map<number, number>): number[] {
  return [...produced].filter((seq) => !stored.has(seq)).sort(numeric);
}

function printSummary(answers: Answer[], producer: EventStream, stored: Map<number, number>, inKafka: Map<number, number>): void {
  const storedTotal = [...stored.values()].reduce((sum, times) => sum + times, 0);
  const lines = [
    '',
    '| events | count |',
    '|---|---|',
    `| produced (distinct seq) | ${producer.produced.size} |`,
    `| sends retried by the producer | ${producer.sendRetries} |`,
    `| in the topic (messages / distinct seq) | ${[...inKafka.values()].reduce((sum, times) => sum + times, 0)} / ${inKafka.size} |`,
    `| in Elasticsearch (documents / distinct seq) | ${storedTotal} / ${stored.size} |`,
    `| lost (produced, not stored) | ${missing(producer.produced, stored).length} |`,
    `| duplicated (stored more than once) | ${duplicates(stored).length} |`,
    '',
    '| phase | service | endpoint | answers by status | slowest |',
    '|---|---|---|---|---|',
  ];
  const groups = new Map<string, Answer[]>();
  for (const answer of answers) {
    const key = `${answer.phase} | ${answer.service} | ${answer.endpoint}`;
    groups.set(key, [...(groups.get(key) ?? []), answer]);
  }
  for (const [key, group] of groups) {
    const byStatus = new Map<number, number>();
    for (const answer of group) byStatus.set(answer.status, (byStatus.get(answer.status) ?? 0) + 1);
    const statuses = [...byStatus]
      .sort(([a], [b]) => a - b)
      .map(([status, count]) => `${status === 0 ? 'no answer' : status}: ${count}`)
      .join(', ');
    lines.push(`| ${key} | ${statuses} | ${Math.max(...group.map((answer) => answer.ms))} ms |`);
  }
  const refused = answers.filter((answer) => answer.status !== 200).slice(0, 10);
  for (const answer of refused) lines.push(`not 200: ${answer.phase}, ${answer.service} ${answer.endpoint}: ${answer.status} ${answer.detail ?? ''}`);
  console.error(lines.join('\n'));
}
