import type { EachBatchPayload, Producer } from 'kafkajs';
import type { StoredEvent } from '../shared/event-index.ts';
import type { Logger } from '../shared/logger.ts';
import { chunkBySize } from './bulk.ts';
import type { BulkCoalescer } from './bulk-coalescer.ts';
import { deadLetterMessage, type DeadLetter } from './dead-letter.ts';
import { decodeMessage } from './event.ts';
import type { IngestMetrics } from './metrics.ts';
import { WriteAbandoned, writeEvents } from './writer.ts';

export interface BatchSettings {
  maxMessageBytes: number;
  bulkMaxBytes: number;
  bulkMaxEvents: number;
  retryInitialMs: number;
  retryMaxMs: number;
}

export interface BatchDependencies {
  bulk: BulkCoalescer;
  producer: Producer;
  metrics: IngestMetrics;
  logger: Logger;
  settings: BatchSettings;
  /** Where each consumed topic goes. */
  routes: Map<string, { source: string; index: string; deadLetterTopic: string }>;
  onHold(held: boolean): void;
}

interface Pending {
  event: StoredEvent;
  /** Approximate serialised size, for the bulk byte bound. */
  bytes: number;
  letter: Omit<DeadLetter, 'reason' | 'detail'>;
}

/**
 * One partition's batch, in chunks bounded by bytes and count. A chunk's offset is committed only
 * after every event in it is acknowledged by Elasticsearch or dead-lettered; a chunk given up
 * (shutdown, rebalance) is left uncommitted and will be delivered again.
 */
export async function processBatch(payload: EachBatchPayload, dependencies: BatchDependencies): Promise<void> {
  const { batch } = payload;
  const route = dependencies.routes.get(batch.topic);
  if (!route) throw new Error(`received a batch from ${batch.topic}, which is not a source topic`);
  const { metrics, settings, logger } = dependencies;
  const keepGoing = () => payload.isRunning() && !payload.isStale();
  const chunks = chunkBySize(batch.messages, (message) => (message.value?.length ?? 0) + 64, settings.bulkMaxBytes, settings.bulkMaxEvents);

  for (const chunk of chunks) {
    if (!keepGoing()) return;
    const events: Pending[] = [];
    const letters: DeadLetter[] = [];
    for (const message of chunk) {
      const record = { topic: batch.topic, partition: batch.partition, offset: message.offset, timestamp: message.timestamp, value: message.value };
      const decoded = decodeMessage(record, settings.maxMessageBytes);
      metrics.consumed.inc({ source: route.source }, decoded.length);
      decoded.forEach((result, element) => {
        const fromArray = decoded.length > 1 || (!result.ok && result.element !== undefined);
        const source = { topic: batch.topic, partition: batch.partition, offset: message.offset, ...(fromArray ? { element } : {}) };
        if (result.ok) {
          events.push({ event: result.event, bytes: message.value!.length / decoded.length + 64, letter: { key: message.key, value: message.value!, source } });
        } else {
          letters.push({ reason: result.reason, detail: result.detail, key: message.key, value: result.value, source });
        }
      });
    }

    let rejected;
    try {
      rejected = await writeEvents(
        {
          bulk: dependencies.bulk,
          index: route.index,
          source: route.source,
          metrics,
          logger,
          retryInitialMs: settings.retryInitialMs,
          retryMaxMs: settings.retryMaxMs,
          keepGoing,
          heartbeat: payload.heartbeat,
          onHold: dependencies.onHold,
        },
        events,
      );
    } catch (error) {
      if (error instanceof WriteAbandoned) {
        logger.info({ topic: batch.topic, partition: batch.partition, from: chunk[0]!.offset }, 'batch given up uncommitted; it will be delivered again');
        return;
      }
      throw error;
    }
    for (const { item, reason } of rejected) letters.push({ ...item.letter, reason: 'unindexable', detail: reason });

    if (letters.length > 0) {
      await dependencies.producer.send({ topic: route.deadLetterTopic, acks: -1, messages: letters.map(deadLetterMessage) });
      for (const letter of letters) metrics.deadLettered.inc({ source: route.source, reason: letter.reason });
      logger.warn({ topic: batch.topic, partition: batch.partition, reasons: [...new Set(letters.map((letter) => letter.reason))], count: letters.length }, 'events dead-lettered');
    }

    const last = chunk[chunk.length - 1]!.offset;
    payload.resolveOffset(last);
    await payload.commitOffsetsIfNecessary({
      topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(last) + 1n).toString() }] }],
    });
    await payload.heartbeat();
  }
}
