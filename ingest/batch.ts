import type { EachBatchPayload, KafkaMessage } from 'kafkajs';
import type { Logger } from '../shared/logger.ts';
import { bulkEntry, canonicalBulkEntry, chunkBySize, releaseEntries, type BulkEntry } from './bulk.ts';
import type { BulkCoalescer } from './bulk-coalescer.ts';
import { deadLetterMessage, type DeadLetter } from './dead-letter.ts';
import { decompressionBudget } from './decompression-budget.ts';
import { MESSAGE_HEAP_BYTES } from './heap-budget.ts';
import { isDeferredStandIn } from './deferred-batch.ts';
import type { DeadLetterTransactions } from './dead-letter-transactions.ts';
import { canonicalEvent, decodeMessage } from './event.ts';
import type { EventFieldNames } from './event-fields.ts';
import type { EventPartitioning } from './event-partition.ts';
import type { IngestMetrics } from './metrics.ts';
import type { CommitOffsets, OffsetCommits } from './offset-commits.ts';
import { undecodableBatchOf, type UndecodableBatch } from './undecodable-batch.ts';
import { WriteAbandoned, writeEvents } from './writer.ts';
import type { ChunkWork, WritePipeline } from './write-pipeline.ts';

export interface BatchSettings {
  maxMessageBytes: number;
  bulkMaxBytes: number;
  bulkMaxEvents: number;
  retryInitialMs: number;
  retryMaxMs: number;
}

export interface BatchDependencies {
  bulk: BulkCoalescer;
  pipeline: WritePipeline;
  /** Moves the partition's read position back to `offset` (kafkajs seek): what follows it comes again. */
  rewind(topic: string, partition: number, offset: string): void;
  /** Sends a chunk's dead letters together with its offset commit. */
  deadLetters: DeadLetterTransactions;
  /** Commits a chunk without dead letters, together with the other chunks committing at the same moment. */
  commits: OffsetCommits;
  metrics: IngestMetrics;
  logger: Logger;
  settings: BatchSettings;
  /** Where each consumed topic goes. */
  routes: Map<string, SourceRoute>;
  /** Events whose partition is past retention: dead-lettered as `expired`, or written anyway. */
  expiredEvents: 'dead_letter' | 'keep';
  now(): number;
  onHold(held: boolean): void;
}

export interface SourceRoute {
  source: string;
  partitioning: EventPartitioning;
  deadLetterTopic: string;
  fieldNames: EventFieldNames;
}

/**
 * An event waiting for Elasticsearch, kept until it answers: only what its dead letter would need,
 * the message and the element's position, not a letter made for every event that is seldom sent.
 */
interface Pending {
  entry: BulkEntry;
  message: KafkaMessage;
  /** The event's position in a several-event message. */
  element: number | undefined;
}

/**
 * One partition's batch, in chunks bounded by bytes and count. Each chunk is decoded here and handed
 * to the write pipeline, which writes the partition's chunks in order while kafkajs fetches the next
 * batches; the batch returns once its chunks are queued (or waits while too much is queued). A
 * chunk's offset is committed only after every event in it is acknowledged by Elasticsearch or
 * dead-lettered; a chunk given up (shutdown, rebalance) is left uncommitted and delivered again.
 */
export async function processBatch(payload: EachBatchPayload, dependencies: BatchDependencies): Promise<void> {
  const { batch } = payload;
  const route = dependencies.routes.get(batch.topic);
  if (!route) throw new Error(`received a batch from ${batch.topic}, which is not a source topic`);
  const { settings, pipeline } = dependencies;
  const key = `${batch.topic}|${batch.partition}`;
  decompressionBudget()?.handedOver();
  // a batch the decompression budget held back, and all after it, are left unresolved: kafkajs fetches them again
  const deferredAt = batch.messages.findIndex(isDeferredStandIn);
  const messages = deferredAt === -1 ? batch.messages : batch.messages.slice(0, deferredAt);
  if (deferredAt !== -1) dependencies.metrics.deferredBatches.inc({ source: route.source });
  const chunks = chunkBySize(messages, (message) => (message.value?.length ?? 0) + 64, settings.bulkMaxBytes, settings.bulkMaxEvents);

  for (const chunk of chunks) {
    if (!payload.isRunning() || payload.isStale() || pipeline.isStopping) return;
    const decoded = decodeChunk(chunk, batch.topic, batch.partition, route, dependencies);
    const valueBytes = chunk.reduce((sum, message) => sum + (message.value?.length ?? 0), 0);
    const queued: QueuedChunk = { decoded, bytes: valueBytes + chunk.length * 64 };
    // held against the memory budget: the messages' bytes and the heap each one keeps until its chunk ends
    pipeline.enqueueJoining(
      key,
      valueBytes + chunk.length * MESSAGE_HEAP_BYTES,
      queued,
      (open) => joinChunk(open, queued, settings),
      (item, work) => writeChunk(payload, route, item.decoded, work, dependencies),
    );
    // kafkajs fetches from the resolved offset on; the commit waits for Elasticsearch (writeChunk)
    payload.resolveOffset(chunk[chunk.length - 1]!.offset);
    await admitTimed(payload, dependencies);
  }
  // the next fetch waits for room, so what was deferred is not fetched again at once only to be deferred again
  if (deferredAt !== -1 && chunks.length === 0) await admitTimed(payload, dependencies);
  await payload.heartbeat();
}

/** Waits for room in the write pipeline, counting the wait: the share of a drain the fetch loop spends held back by Elasticsearch. */
async function admitTimed(payload: EachBatchPayload, { pipeline, metrics }: BatchDependencies): Promise<void> {
  const started = performance.now();
  await pipeline.admit(payload.heartbeat);
  metrics.fetchWait.inc((performance.now() - started) / 1000);
}

interface QueuedChunk {
  decoded: DecodedChunk;
  bytes: number;
}

/**
 * Appends the next chunk of the same partition to one queued and not started yet, within the chunk
 * bounds; false (nothing changed) when it does not fit or does not follow it (a rewind went back).
 */
function joinChunk(open: QueuedChunk, next: QueuedChunk, settings: BatchSettings): boolean {
  const into = open.decoded;
  const from = next.decoded;
  if (BigInt(from.firstOffset) <= BigInt(into.lastOffset)) return false;
  if (open.bytes + next.bytes > settings.bulkMaxBytes || into.events.length + from.events.length > settings.bulkMaxEvents) return false;
  into.events.push(...from.events);
  into.letters.push(...from.letters);
  into.undecodable.groups.push(...from.undecodable.groups);
  into.lastOffset = from.lastOffset;
  open.bytes += next.bytes;
  return true;
}

export interface DecodedChunk {
  firstOffset: string;
  lastOffset: string;
  events: Pending[];
  letters: DeadLetter[];
  undecodable: UndecodableGroups;
}

/** A chunk's messages as bulk entries ready to send, dead letters, and stand-ins of undecodable batches. */
export function decodeChunk(
  chunk: KafkaMessage[],
  topic: string,
  partition: number,
  route: SourceRoute,
  dependencies: Pick<BatchDependencies, 'metrics' | 'settings' | 'expiredEvents' | 'now'>,
): DecodedChunk {
  const { metrics, settings } = dependencies;
  const events: Pending[] = [];
  const letters: DeadLetter[] = [];
  const undecodable = new UndecodableGroups();
  let consumed = 0;
  let canonicalMessages = 0;
  for (const message of chunk) {
    const marker = undecodableBatchOf(message);
    if (marker) {
      consumed += 1;
      undecodable.add(marker, message.offset, message.value);
      continue;
    }
    const record = { topic, partition, offset: message.offset, timestamp: message.timestamp, value: message.value, key: message.key, headers: message.headers };
    // most producers write what JSON.stringify would: such a message's document is copied from its bytes, without JSON.parse
    const canonical = canonicalEvent(record, settings.maxMessageBytes, route.fieldNames);
    if (canonical !== undefined) {
      consumed += 1;
      canonicalMessages += 1;
      if (dependencies.expiredEvents === 'dead_letter' && route.partitioning.isExpired(canonical, dependencies.now())) {
        letters.push(expiredLetter(canonical.timestamp, route, topic, partition, message, undefined));
      } else events.push({ entry: canonicalBulkEntry(route.partitioning.indexOf(canonical), canonical), message, element: undefined });
      continue;
    }
    const decoded = decodeMessage(record, settings.maxMessageBytes, route.fieldNames);
    consumed += decoded.length;
    for (let index = 0; index < decoded.length; index += 1) {
      const result = decoded[index]!;
      const element = decoded.length > 1 || (!result.ok && result.element !== undefined) ? index : undefined;
      if (result.ok && dependencies.expiredEvents === 'dead_letter' && route.partitioning.isExpired(result.event, dependencies.now())) {
        letters.push(expiredLetter(result.event.timestamp, route, topic, partition, message, element));
      } else if (result.ok) {
        events.push({ entry: bulkEntry(route.partitioning.indexOf(result.event), result.event), message, element });
      } else {
        letters.push({
          reason: result.reason,
          detail: result.detail,
          key: message.key,
          value: result.value,
          source: sourceOf(topic, partition, message, element),
        });
      }
    }
  }
  metrics.consumed.inc({ source: route.source }, consumed);
  if (canonicalMessages > 0) metrics.canonical.inc({ source: route.source }, canonicalMessages);
  for (const group of undecodable.groups) letters.push(undecodableLetter(group, topic, partition));
  return { firstOffset: chunk[0]!.offset, lastOffset: chunk[chunk.length - 1]!.offset, events, letters, undecodable };
}

function expiredLetter(
  timestamp: string,
  route: SourceRoute,
  topic: string,
  partition: number,
  message: KafkaMessage,
  element: number | undefined,
): DeadLetter {
  const detail = `timestamp ${timestamp} is older than the retention of ${route.source}`;
  return { reason: 'expired', detail, key: message.key, value: message.value!, source: sourceOf(topic, partition, message, element) };
}

function sourceOf(topic: string, partition: number, message: KafkaMessage, element: number | undefined): DeadLetter['source'] {
  return element === undefined ? { topic, partition, offset: message.offset } : { topic, partition, offset: message.offset, element };
}

/**
 * Writes a chunk, dead-letters what cannot be stored and commits its last offset. A failure
 * (the dead-letter topic or the commit unavailable, say) rewinds the partition to the chunk, after
 * a pause, so it is delivered and written again; the partition's later chunks are dropped meanwhile.
 */
async function writeChunk(payload: EachBatchPayload, route: SourceRoute, chunk: DecodedChunk, work: ChunkWork, dependencies: BatchDependencies): Promise<void> {
  const { batch } = payload;
  const { metrics, settings, logger } = dependencies;
  const keepGoing = () => work.isCurrent() && payload.isRunning() && !payload.isStale();
  const letters = [...chunk.letters];
  try {
    const rejected = await writeEvents(
      {
        bulk: dependencies.bulk,
        source: route.source,
        metrics,
        logger,
        retryInitialMs: settings.retryInitialMs,
        retryMaxMs: settings.retryMaxMs,
        keepGoing,
        heartbeat: payload.heartbeat,
        onHold: dependencies.onHold,
      },
      chunk.events,
    );
    for (const { item, reason } of rejected) {
      const source = sourceOf(batch.topic, batch.partition, item.message, item.element);
      letters.push({ reason: 'unindexable', detail: reason, key: item.message.key, value: item.message.value!, source });
    }

    const nextOffset = (BigInt(chunk.lastOffset) + 1n).toString();
    const sent = await commitChunk(payload.commitOffsetsIfNecessary, batch, route.deadLetterTopic, letters, nextOffset, work, dependencies);
    if (sent === undefined || letters.length === 0) return;
    for (const letter of sent) metrics.deadLettered.inc({ source: route.source, reason: letter.reason }, letter.records ?? 1);
    if (sent.length > 0)
      logger.warn(
        { topic: batch.topic, partition: batch.partition, reasons: [...new Set(sent.map((letter) => letter.reason))], count: sent.length },
        'events dead-lettered',
      );
    for (const group of chunk.undecodable.groups) {
      // a batch seen again after a restart mid-batch is counted once, by the part holding its first record
      if (group.containsFirstRecord && sent.some((letter) => letter.reason === 'undecodable_batch' && letter.source.offset === group.firstOffset)) {
        metrics.undecodableBatches.inc({ source: route.source, codec: group.marker.codec });
      }
      logger.error(
        {
          topic: batch.topic,
          partition: batch.partition,
          codec: group.marker.codec,
          offsets: `${group.firstOffset}..${group.lastOffset}`,
          batchOffsets: `${group.marker.firstOffset}..${group.marker.lastOffset}`,
          reason: group.marker.detail,
        },
        'undecodable record batch dead-lettered',
      );
    }
  } catch (error) {
    if (error instanceof WriteAbandoned) {
      logger.info({ topic: batch.topic, partition: batch.partition, from: chunk.firstOffset }, 'batch given up uncommitted; it will be delivered again');
      return;
    }
    if (!work.mayCommit()) return;
    dependencies.pipeline.failed(`${batch.topic}|${batch.partition}`);
    logger.error(
      { err: error, topic: batch.topic, partition: batch.partition, from: chunk.firstOffset },
      'chunk not stored; the partition is read again from it',
    );
    await new Promise((resolve) => setTimeout(resolve, settings.retryInitialMs));
    dependencies.rewind(batch.topic, batch.partition, chunk.firstOffset);
  } finally {
    // every bulk request holding these entries has been sent and answered (or none was made)
    releaseEntries(chunk.events);
  }
}

/**
 * Commits a chunk's last offset: with its dead letters in one transaction (a chunk delivered again cannot
 * write its letters twice), or, without letters, with the other chunks committing at the same moment.
 * Returns the letters sent, or undefined when the chunk may no longer commit (a rebalance or an earlier
 * failure in its partition).
 */
export async function commitChunk(
  commitOffsets: CommitOffsets,
  source: { topic: string; partition: number },
  deadLetterTopic: string,
  letters: DeadLetter[],
  nextOffset: string,
  work: Pick<ChunkWork, 'mayCommit'>,
  dependencies: Pick<BatchDependencies, 'deadLetters' | 'commits'>,
): Promise<DeadLetter[] | undefined> {
  if (!work.mayCommit()) return undefined;
  if (letters.length === 0) {
    // never behind the offset the partition's previous owner committed (DeadLetterTransactions explains why)
    const floor = await dependencies.deadLetters.settled(source.topic, source.partition, commitOffsets);
    if (!work.mayCommit()) return undefined;
    if (BigInt(nextOffset) > floor) await dependencies.commits.commit(commitOffsets, source.topic, source.partition, nextOffset);
    return [];
  }
  const sent = await dependencies.deadLetters.send(
    source,
    deadLetterTopic,
    letters.map((letter) => ({ offset: letter.source.offset, message: deadLetterMessage(letter), letter })),
    nextOffset,
    commitOffsets,
  );
  return sent.map((entry) => entry.letter);
}

interface UndecodableGroup {
  marker: UndecodableBatch;
  firstOffset: string;
  lastOffset: string;
  records: number;
  /** The batch's bytes, carried by the stand-in of its first record. */
  bytes: Buffer | null;
  containsFirstRecord: boolean;
}

/** Stand-ins of undecodable batches in a chunk, one group per batch: each group is one dead letter. */
class UndecodableGroups {
  readonly groups: UndecodableGroup[] = [];

  add(marker: UndecodableBatch, offset: string, value: Buffer | null): void {
    const last = this.groups[this.groups.length - 1];
    if (last && last.marker.firstOffset === marker.firstOffset) {
      last.lastOffset = offset;
      last.records += 1;
      return;
    }
    const containsFirstRecord = offset === marker.firstOffset;
    this.groups.push({ marker, firstOffset: offset, lastOffset: offset, records: 1, bytes: containsFirstRecord ? value : null, containsFirstRecord });
  }
}

/** One dead letter for (the part in this chunk of) an undecodable batch: the stored batch bytes, and the offsets it covered. */
function undecodableLetter(group: UndecodableGroup, topic: string, partition: number): DeadLetter {
  const { marker } = group;
  const part = group.containsFirstRecord
    ? ''
    : ` (offsets ${group.firstOffset}..${group.lastOffset} of it; its bytes are in the dead letter of offset ${marker.firstOffset})`;
  return {
    reason: 'undecodable_batch',
    detail: `${marker.codec} record batch at offsets ${marker.firstOffset}..${marker.lastOffset} (${marker.records} records) could not be decoded: ${marker.detail}${part}`,
    key: null,
    value: group.bytes ?? Buffer.alloc(0),
    source: { topic, partition, offset: group.firstOffset, lastOffset: group.lastOffset },
    records: group.records,
  };
}
