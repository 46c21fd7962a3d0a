import type { Client } from '@elastic/elasticsearch';
import { CompressionTypes, Kafka, Partitioners, logLevel, type IHeaders, type Message, type PartitionMetadata, type Producer } from 'kafkajs';
import type { Config } from '../../shared/config.ts';
import { createElasticsearchClient, elasticsearchConnection } from '../../shared/elasticsearch.ts';
import { kafkajsConnectionOptions, kafkaConnection } from '../../shared/kafka-connection.ts';
import { createLogger } from '../../shared/logger.ts';
import { sourceIndexPattern } from '../../shared/partitions.ts';
import type { SourceName } from '../../shared/sources.ts';
import { eventIndexTemplateName, type StoredEvent } from '../../shared/event-index.ts';
import { startIngestWorker, type IngestWorker } from '../../ingest/worker.ts';
import { afterAll, beforeAll } from 'vitest';
import { sourceRoutes, sourceTopic } from '../../ingest/topics.ts';
import { isTestName, testConfig, uniqueName } from './stack.ts';

/** Configuration for one ingest test: its own prefixes and consumer group, a short session timeout. */
export function ingestTestConfig(label: string, overrides: Record<string, string> = {}): Config {
  const name = uniqueName(label);
  return testConfig({
    INDEX_PREFIX: `${name}-`,
    TOPIC_PREFIX: `${name}.`,
    INGEST_GROUP_ID: `${name}-ingest`,
    INGEST_PORT: '0',
    INGEST_TOPIC_PARTITIONS: '2',
    // the broker's minimum: a killed worker's partitions move on after 6 s instead of 30
    INGEST_SESSION_TIMEOUT_MS: '6000',
    INGEST_RETRY_MAX_MS: '2000',
    ...overrides,
  });
}

export const silentLogger = createLogger('ingest-test', 'silent');

export function testKafka(config: Config): Kafka {
  return new Kafka({ clientId: 'ingest-test', ...kafkajsConnectionOptions(kafkaConnection(config)), logLevel: logLevel.NOTHING });
}

/** Publishes kafkajs messages (keys, headers, partitions as given) to a topic, compressed as asked. */
export async function produceMessages(config: Config, topic: string, messages: Message[], compression = CompressionTypes.None): Promise<void> {
  const kafka = testKafka(config);
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  try {
    await sendPartitionByPartition(kafka, producer, topic, messages, compression);
  } finally {
    await producer.disconnect();
  }
}

/**
 * kafkajs retries a whole send when one partition of it fails (a leader not yet elected just after
 * topic creation), appending again what the other partitions had already taken: id-less events then
 * exist twice in Kafka. So each message gets its partition here, as kafkajs's default partitioner
 * would choose, and each partition is sent on its own: a retried send then repeats only a refused write.
 */
async function sendPartitionByPartition(kafka: Kafka, producer: Producer, topic: string, messages: Message[], compression: CompressionTypes): Promise<void> {
  const partitionMetadata = await partitionsWithLeaders(kafka, topic);
  const choose = Partitioners.DefaultPartitioner();
  const byPartition = new Map<number, Message[]>();
  for (const message of messages) {
    const partition = message.partition ?? choose({ topic, partitionMetadata, message });
    byPartition.set(partition, [...(byPartition.get(partition) ?? []), { ...message, partition }]);
  }
  for (const group of byPartition.values()) {
    for (let start = 0; start < group.length; start += 2000) {
      await producer.send({ topic, acks: -1, compression, messages: group.slice(start, start + 2000) });
    }
  }
}

/** The topic's partitions once each has a leader (a topic created a moment ago may not have them yet). */
async function partitionsWithLeaders(kafka: Kafka, topic: string): Promise<PartitionMetadata[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await waitFor(
      `leaders for every partition of ${topic}`,
      async () => {
        const [metadata] = (await admin.fetchTopicMetadata({ topics: [topic] })).topics;
        const partitions = metadata?.partitions ?? [];
        return partitions.length > 0 && partitions.every((partition) => partition.leader >= 0) ? partitions : undefined;
      },
      30_000,
    );
  } finally {
    await admin.disconnect();
  }
}

/** Every document id in an index (up to 10,000), after a refresh. */
export async function storedIds(client: Client, index: string): Promise<string[]> {
  await client.indices.refresh({ index, ignore_unavailable: true });
  const response = await client.search({ index, size: 10_000, _source: false, ignore_unavailable: true, sort: ['_doc'] });
  return response.hits.hits.map((hit) => hit._id!);
}

/** Publishes raw message values (strings as given, objects as JSON) to a source's topic. */
export async function produce(config: Config, source: SourceName, values: (string | object | null)[], partition?: number): Promise<void> {
  const messages: Message[] = values.map((value) => ({ value: value === null || typeof value === 'string' ? value : JSON.stringify(value), partition }));
  await produceMessages(config, sourceTopic(config, source), messages);
}

export function storeClient(config: Config): Client {
  return createElasticsearchClient(elasticsearchConnection(config));
}

/** Every index the source's events may be in (its partitions and legacy index), as one expression for searches and counts. */
export function sourceIndex(config: Config, source: SourceName): string {
  return sourceIndexPattern(config.INDEX_PREFIX, source);
}

export async function waitFor<T>(description: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  throw new Error(`timed out waiting for ${description}${lastError ? ` (last error: ${String(lastError)})` : ''}`);
}

/**
 * A stored document by id, searched across a source's partitions (a get needs one concrete index);
 * after a refresh, so it is as current as a get. Two documents with one id would be a duplicate.
 */
export async function storedById<T = StoredEvent>(client: Client, index: string, id: string): Promise<{ found: boolean; _source?: T; _index?: string }> {
  await client.indices.refresh({ index, ignore_unavailable: true });
  const response = await client.search<T>({ index, size: 2, query: { ids: { values: [id] } }, ignore_unavailable: true });
  const hits = response.hits.hits;
  if (hits.length > 1) throw new Error(`event ${id} is stored twice: in ${hits.map((hit) => hit._index).join(' and ')}`);
  return hits[0] ? { found: true, _source: hits[0]._source, _index: hits[0]._index } : { found: false };
}

/** Documents in an index, after a refresh so the count is exact. */
export async function documentCount(client: Client, index: string): Promise<number> {
  await client.indices.refresh({ index, ignore_unavailable: true });
  return (await client.count({ index, ignore_unavailable: true })).count;
}

/** Waits until the consumer group has committed every partition of the topics up to their end. */
export async function waitForCommittedToEnd(config: Config, topics: string[], timeoutMs = 60_000): Promise<void> {
  const admin = testKafka(config).admin();
  await admin.connect();
  try {
    await waitFor(
      `${config.INGEST_GROUP_ID} to commit ${topics.join(', ')} to the end`,
      async () => {
        for (const topic of topics) {
          const ends = await admin.fetchTopicOffsets(topic);
          const [committed] = await admin.fetchOffsets({ groupId: config.INGEST_GROUP_ID, topics: [topic] });
          for (const end of ends) {
            const offset = committed?.partitions.find((partition) => partition.partition === end.partition)?.offset ?? '-1';
            if (end.high !== '0' && offset !== end.high) return undefined;
          }
        }
        return true;
      },
      timeoutMs,
    );
  } finally {
    await admin.disconnect();
  }
}

export interface ReceivedDeadLetter {
  value: string;
  bytes: Buffer;
  headers: Record<string, string>;
}

/** Reads a dead-letter topic from the start until `expected` messages arrived. */
export async function readDeadLetters(config: Config, topic: string, expected: number): Promise<ReceivedDeadLetter[]> {
  const consumer = testKafka(config).consumer({ groupId: uniqueName('dead-letter-reader') });
  const received: ReceivedDeadLetter[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        received.push({ value: message.value?.toString() ?? '', bytes: message.value ?? Buffer.alloc(0), headers: textHeaders(message.headers) });
      },
    });
    await waitFor(`${expected} dead letters on ${topic}`, async () => (received.length >= expected ? true : undefined));
  } finally {
    await consumer.disconnect();
  }
  return received;
}

function textHeaders(headers: IHeaders | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(headers ?? {}).map(([key, value]) => [key, String(value)]));
}

/** Deletes the indices a test created (wildcard deletes are refused, so by name). */
export async function deleteIndices(client: Client, prefix: string): Promise<void> {
  const indices = Object.keys(await client.indices.get({ index: `${prefix}*`, allow_no_indices: true }));
  if (indices.length > 0) await client.indices.delete({ index: indices });
}

/** Removes what an ingest test left in Elasticsearch: its indices and its index template. */
export async function removeTestData(client: Client, prefix: string): Promise<void> {
  await deleteIndices(client, prefix);
  await client.indices.deleteIndexTemplate({ name: eventIndexTemplateName(prefix) }, { ignore: [404] });
}

/**
 * Removes what an ingest test left in Kafka: the topics of its configuration (its TOPIC_PREFIX's and
 * any SOURCE_TOPICS overrides) and its consumer group, once the group's members have left. Names
 * outside the test's own are never touched, so the suite can run against shared servers.
 */
export async function removeKafkaTestData(config: Config, extraGroups: string[] = []): Promise<void> {
  const admin = testKafka(config).admin();
  await admin.connect();
  try {
    const existing = await admin.listTopics();
    const ours = new Set(sourceRoutes(config).flatMap((route) => [route.topic, route.deadLetterTopic]));
    const topics = existing.filter((topic) => isTestName(topic) && (ours.has(topic) || (config.TOPIC_PREFIX !== '' && topic.startsWith(config.TOPIC_PREFIX))));
    if (topics.length > 0) await admin.deleteTopics({ topics });
    const groups = new Set((await admin.listGroups()).groups.map((group) => group.groupId));
    const ourGroups = [config.INGEST_GROUP_ID, ...extraGroups].filter((group) => isTestName(group) && groups.has(group));
    // best effort: a group whose last member's session has not yet expired cannot be deleted, and a
    // left-over group is harmless (the end-of-run clean-up of external servers tries again)
    if (ourGroups.length > 0) await admin.deleteGroups(ourGroups).catch(() => undefined);
  } finally {
    await admin.disconnect();
  }
}

export interface WorkerUnderTest {
  config: Config;
  client: Client;
  /** The in-process worker, started before the file's tests. */
  worker(): IngestWorker;
}

/** As if the worker had died before committing anything: the group reads the topic again from offset 0, to its end. */
export async function replayFromStart(config: Config, topic: string): Promise<void> {
  const admin = testKafka(config).admin();
  await admin.connect();
  await admin.resetOffsets({ groupId: config.INGEST_GROUP_ID, topic, earliest: true });
  await admin.disconnect();
  const worker = await startIngestWorker(config, silentLogger);
  try {
    await waitFor('the replay to be committed', async () => {
      await waitForCommittedToEnd(config, [topic], 5000);
      return true;
    });
  } finally {
    await worker.stop();
  }
}

/** A test file's own prefixes and store client, with what it left in Elasticsearch removed afterwards. */
export function storeForFile(label: string, overrides: Record<string, string> = {}): { config: Config; client: Client } {
  const config = ingestTestConfig(label, overrides);
  const client = storeClient(config);
  afterAll(async () => {
    await removeTestData(client, config.INDEX_PREFIX);
    await client.close();
  });
  return { config, client };
}

/** One in-process worker for a whole test file, on its own prefixes; stopped and cleaned up afterwards. */
export function workerForFile(label: string, overrides: Record<string, string> = {}): WorkerUnderTest {
  const config = ingestTestConfig(label, overrides);
  const client = storeClient(config);
  let worker: IngestWorker | undefined;
  beforeAll(async () => {
    worker = await startIngestWorker(config, silentLogger);
  });
  afterAll(async () => {
    await worker?.stop();
    await removeTestData(client, config.INDEX_PREFIX);
    await removeKafkaTestData(config);
    await client.close();
  });
  return {
    config,
    client,
    worker: () => {
      if (!worker) throw new Error('the worker has not started');
      return worker;
    },
  };
}
