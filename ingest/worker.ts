import type { Client } from '@elastic/elasticsearch';
import type { ConsumerRunConfig } from 'kafkajs';
import { ConfigError, partitionPeriodOf, retentionDaysOf, type Config } from '../shared/config.ts';
import { createElasticsearchClient, elasticsearchConnection, type ElasticsearchConnection } from '../shared/elasticsearch.ts';
import { ensureEventIndexTemplate } from '../shared/event-index.ts';
import { kafkaConnection } from '../shared/kafka-connection.ts';
import type { Logger } from '../shared/logger.ts';
import { opsAccess } from '../shared/ops-access.ts';
import { SOURCE_NAMES, type SourceName } from '../shared/sources.ts';
import { checkElasticsearch, checkKafka, elasticsearchFailure, ServerAccessError } from '../shared/startup-checks.ts';
import { processBatch } from './batch.ts';
import { backoffMs } from './bulk.ts';
import './codecs.ts';
import './record-batches.ts';
import { eventFieldNames } from './event-fields.ts';
import { eventPartitioning } from './event-partition.ts';
import { BulkCoalescer } from './bulk-coalescer.ts';
import { WritePipeline } from './write-pipeline.ts';
import { DeadLetterTransactions } from './dead-letter-transactions.ts';
import { OffsetCommits } from './offset-commits.ts';
import { DecompressionBudget, decompressionBudget, useDecompressionBudget } from './decompression-budget.ts';
import { heapLimitIssue } from './heap-budget.ts';
import { startConsumerLagPoll, type ConsumerLagPoll } from './consumer-lag.ts';
import { CONSUMER_RESTART_BUDGET, ConsumerRestarts, isTransientCrash } from './consumer-restarts.ts';
import { startStatusServer, type HealthReport } from './http.ts';
import { BROKER_OUTAGE_RETRY, createKafka } from './kafka.ts';
import { createIngestMetrics } from './metrics.ts';
import { startPartitionsAhead, type PartitionsAheadSchedule } from './partitions-ahead.ts';
import { startRetentionSchedule, type RetentionSchedule } from './retention.ts';
import { StableOffsets } from './stable-offsets.ts';
import { ensureTopics, sourceRoutes } from './topics.ts';

/** How long start-up waits for a Kafka or Elasticsearch that is not answering yet (starting next to us). */
const SERVER_WAIT_MS = 120_000;

export interface IngestWorker {
  /** The port /health and /metrics are served on (useful with INGEST_PORT=0). */
  port: number;
  /** Resolves when the consumer has crashed for good (the process should exit non-zero). */
  failed: Promise<Error>;
  /** Leaves the consumer group after committing what is durable; an unfinished batch stays uncommitted. */
  stop(): Promise<void>;
}

/**
 * Starts consuming the nine source topics into their indices: creates topics and indices that are
 * missing, joins the consumer group and serves /health and /metrics.
 */
export async function startIngestWorker(config: Config, logger: Logger): Promise<IngestWorker> {
  const brokers = config.KAFKA_BROKERS;
  const elasticsearchUrl = config.ELASTICSEARCH_URL;
  if (!brokers || !elasticsearchUrl) {
    throw new ConfigError([
      ...(brokers ? [] : ['KAFKA_BROKERS: required by the ingest worker']),
      ...(elasticsearchUrl ? [] : ['ELASTICSEARCH_URL: required by the ingest worker']),
    ]);
  }
  const heapIssue = heapLimitIssue(config.INGEST_MEMORY_BUDGET_BYTES);
  if (heapIssue) throw new ConfigError([heapIssue]);
  const routes = sourceRoutes(config);
  const kafkaServer = kafkaConnection(config);
  const store = elasticsearchConnection(config);
  const kafka = createKafka(kafkaServer, 'logplatform-ingest', logger, BROKER_OUTAGE_RETRY);
  const client = createElasticsearchClient(store);
  // wrong credentials or an untrusted certificate end start-up here with a message naming the server
  const onRetry = (reason: string) => logger.warn({ reason }, 'waiting for a server');
  await checkKafka(kafkaServer, { waitMs: SERVER_WAIT_MS, required: true, onRetry });
  await checkElasticsearch(client, store, { waitMs: SERVER_WAIT_MS, required: true, onRetry });

  const admin = kafka.admin();
  await admin.connect();
  try {
    const created = await ensureTopics(
      admin,
      routes.flatMap((route) => [route.topic, route.deadLetterTopic]),
      config.INGEST_TOPIC_PARTITIONS,
      config.INGEST_TOPIC_REPLICATION_FACTOR,
    );
    if (created.length > 0)
      logger.info({ topics: created, partitions: config.INGEST_TOPIC_PARTITIONS, replicationFactor: config.INGEST_TOPIC_REPLICATION_FACTOR }, 'topics created');
  } finally {
    await admin.disconnect();
  }
  await ensureIndices(client, store, config.INDEX_PREFIX, config.ELASTICSEARCH_INDEX_REPLICAS, logger);

  const metrics = createIngestMetrics();
  const retentionPolicy = { indexPrefix: config.INDEX_PREFIX, sources: SOURCE_NAMES, retentionDays: (source: SourceName) => retentionDaysOf(config, source) };
  // before consuming: the first events of a period never create their partition while searches read it
  const partitionsAhead: PartitionsAheadSchedule | undefined =
    config.PARTITION_PRECREATE_SECONDS > 0
      ? await startPartitionsAhead({
          client,
          layout: { ...retentionPolicy, periodOf: (source) => partitionPeriodOf(config, source) },
          replicas: config.ELASTICSEARCH_INDEX_REPLICAS,
          intervalMs: config.PARTITION_PRECREATE_SECONDS * 1000,
          logger,
          metrics,
          now: () => Date.now(),
        })
      : undefined;
  const bulk = new BulkCoalescer(client, metrics, {
    maxBytes: config.INGEST_BULK_MAX_BYTES,
    maxEvents: config.INGEST_BULK_MAX_EVENTS,
    lingerMs: config.INGEST_BULK_LINGER_MS,
    maxInFlight: config.INGEST_BULK_MAX_IN_FLIGHT,
  });
  let status: HealthReport['status'] = 'starting';
  let heldPartitions = 0;
  // kept connected: each partition is fenced and its committed offset read at its first commit after an assignment
  const stableOffsets = new StableOffsets(kafka, config.INGEST_GROUP_ID);
  const deadLetters = new DeadLetterTransactions(kafka, stableOffsets, config.INGEST_GROUP_ID, logger, { reclaimAfterMs: config.INGEST_SESSION_TIMEOUT_MS });
  const commits = new OffsetCommits();
  const consumer = kafka.consumer({
    groupId: config.INGEST_GROUP_ID,
    sessionTimeout: config.INGEST_SESSION_TIMEOUT_MS,
    heartbeatInterval: Math.max(500, Math.floor(config.INGEST_SESSION_TIMEOUT_MS / 10)),
    maxBytes: config.INGEST_FETCH_MAX_BYTES,
    maxBytesPerPartition: Math.min(config.INGEST_FETCH_MAX_BYTES, config.INGEST_FETCH_PARTITION_MAX_BYTES),
    minBytes: Math.min(config.INGEST_FETCH_MIN_BYTES, config.INGEST_FETCH_MAX_BYTES),
    maxWaitTimeInMs: config.INGEST_FETCH_MAX_WAIT_MS,
  });
  let reportFailure!: (error: Error) => void;
  const failed = new Promise<Error>((resolve) => (reportFailure = resolve));
  // half the memory budget: the bulks in flight plus some being filled, so decoding goes on while Elasticsearch writes
  const pipeline = new WritePipeline(config.INGEST_MEMORY_BUDGET_BYTES / 2, (error) => {
    logger.error({ err: error }, 'writing a chunk failed unexpectedly');
    status = 'failed';
    reportFailure(error instanceof Error ? error : new Error(String(error)));
  });
  const decompression = new DecompressionBudget(config.INGEST_MEMORY_BUDGET_BYTES, () => pipeline.bytes);
  useDecompressionBudget(decompression);
  consumer.on(consumer.events.REBALANCING, () => {
    pipeline.reassigned();
    deadLetters.newAssignment();
  });
  consumer.on(consumer.events.GROUP_JOIN, (event) => {
    pipeline.reassigned();
    status = 'consuming';
    deadLetters.newAssignment();
    logger.info({ assignment: event.payload.memberAssignment }, 'joined the consumer group');
  });
  const restarts = new ConsumerRestarts(CONSUMER_RESTART_BUDGET);
  let restartTimer: NodeJS.Timeout | undefined;
  let stopRequested = false;
  const failForGood = (error: Error) => {
    status = 'failed';
    reportFailure(error);
  };
  consumer.on(consumer.events.CRASH, (event) => {
    const { error, restart } = event.payload;
    if (restart) {
      logger.error({ err: error, restart }, 'consumer crashed');
      status = 'starting';
      return;
    }
    const delay = !stopRequested && isTransientCrash(error) ? restarts.next() : undefined;
    if (delay === undefined) {
      logger.error({ err: error, restart: false }, 'consumer crashed');
      failForGood(error);
      return;
    }
    // kafkajs has disconnected the consumer; running it again connects and rejoins the group
    logger.warn({ err: error, restartInMs: delay }, 'consumer stopped on a broker error kafkajs does not retry; restarting it');
    status = 'starting';
    restartTimer = setTimeout(() => {
      restartTimer = undefined;
      if (!stopRequested)
        consumer.run(runOptions).catch((runError: unknown) => failForGood(runError instanceof Error ? runError : new Error(String(runError))));
    }, delay);
  });

  const statusServer = await startStatusServer(
    config.INGEST_HOST,
    config.INGEST_PORT,
    () => ({ status, heldPartitions }),
    metrics.registry,
    opsAccess(config.OPS_TOKEN),
  );
  await consumer.connect();
  await consumer.subscribe({ topics: routes.map((route) => route.topic), fromBeginning: true });
  const routeByTopic = new Map(
    routes.map((route) => [
      route.topic,
      {
        source: route.source,
        partitioning: eventPartitioning(config.INDEX_PREFIX, route.source, partitionPeriodOf(config, route.source), retentionDaysOf(config, route.source)),
        deadLetterTopic: route.deadLetterTopic,
        fieldNames: eventFieldNames(config.INGEST_FIELD_MAP, route.source),
      },
    ]),
  );
  const runOptions: ConsumerRunConfig = {
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: config.INGEST_CONCURRENT_PARTITIONS,
    eachBatch: (payload) =>
      processBatch(payload, {
        bulk,
        pipeline,
        rewind: (topic, partition, offset) => {
          try {
            consumer.seek({ topic, partition, offset });
          } catch (error) {
            // not running or no longer assigned: the next owner reads from the committed offset anyway
            logger.warn({ err: error, topic, partition, offset }, 'could not rewind the partition');
          }
        },
        deadLetters,
        commits,
        metrics,
        logger,
        routes: routeByTopic,
        expiredEvents: config.EXPIRED_EVENTS,
        now: () => Date.now(),
        settings: {
          maxMessageBytes: config.INGEST_MAX_MESSAGE_BYTES,
          bulkMaxBytes: config.INGEST_BULK_MAX_BYTES,
          bulkMaxEvents: config.INGEST_BULK_MAX_EVENTS,
          retryInitialMs: config.INGEST_RETRY_INITIAL_MS,
          retryMaxMs: config.INGEST_RETRY_MAX_MS,
        },
        onHold: (held) => {
          heldPartitions += held ? 1 : -1;
          metrics.heldPartitions.set(heldPartitions);
        },
      }),
  };
  await consumer.run(runOptions);
  const lagPoll: ConsumerLagPoll | undefined =
    config.INGEST_LAG_POLL_MS > 0
      ? startConsumerLagPoll({
          kafka,
          groupId: config.INGEST_GROUP_ID,
          topics: [...new Set(routes.map((route) => route.topic))],
          gauge: metrics.consumerLag,
          intervalMs: config.INGEST_LAG_POLL_MS,
          logger,
        })
      : undefined;
  const retention: RetentionSchedule | undefined =
    config.RETENTION_INTERVAL_SECONDS > 0
      ? startRetentionSchedule({
          client,
          policy: retentionPolicy,
          intervalMs: config.RETENTION_INTERVAL_SECONDS * 1000,
          logger,
          metrics,
          now: () => Date.now(),
        })
      : undefined;
  logger.info({ topics: routes.map((route) => route.topic), group: config.INGEST_GROUP_ID, port: statusServer.port }, 'ingest worker started');

  let stopping: Promise<void> | undefined;
  return {
    port: statusServer.port,
    failed,
    stop: () =>
      (stopping ??= (async () => {
        status = 'stopping';
        stopRequested = true;
        clearTimeout(restartTimer);
        await lagPoll?.stop();
        await retention?.stop();
        await partitionsAhead?.stop();
        // chunks being written finish and commit; queued ones stay uncommitted and come again
        await pipeline.drain();
        await consumer.disconnect();
        await deadLetters.close();
        await stableOffsets.close();
        await new Promise<void>((resolve) => statusServer.server.close(() => resolve()));
        await client.close();
        if (decompressionBudget() === decompression) useDecompressionBudget(undefined);
        logger.info('ingest worker stopped');
      })()),
  };
}

/** Elasticsearch may still be starting next to us: retry for a while before giving up. */
async function ensureIndices(
  client: Client,
  store: ElasticsearchConnection,
  indexPrefix: string,
  replicas: number,
  logger: Logger,
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt += 1) {
    try {
      await ensureEventIndexTemplate(client, indexPrefix, replicas);
      return;
    } catch (error) {
      const failure = elasticsearchFailure(error, store);
      if (failure.fatal) throw new ServerAccessError(failure.message);
      if (Date.now() > deadline) throw error;
      logger.warn({ err: error, attempt }, 'cannot install the index template yet, retrying');
      await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt, 250, 5000)));
    }
  }
}
