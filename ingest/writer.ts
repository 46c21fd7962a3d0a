import type { Logger } from '../shared/logger.ts';
import { backoffMs, bulkEntry, classifyItem, entryEvent, isRetriableRequestError, latestPerId, type BulkEntry } from './bulk.ts';
import type { BulkCoalescer } from './bulk-coalescer.ts';
import type { IngestMetrics } from './metrics.ts';
import { setAsideField } from './type-conflict.ts';

export interface WriteContext {
  bulk: BulkCoalescer;
  source: string;
  metrics: IngestMetrics;
  logger: Logger;
  retryInitialMs: number;
  retryMaxMs: number;
  /** False once the batch must be given up (shutdown, rebalance); nothing of it is committed then. */
  keepGoing(): boolean;
  /** Keeps the consumer group membership alive while we wait for Elasticsearch. */
  heartbeat(): Promise<void>;
  onHold(held: boolean): void;
}

/** Thrown when the batch was given up before Elasticsearch acknowledged it. */
export class WriteAbandoned extends Error {
  override name = 'WriteAbandoned';
}

export interface Rejected<T> {
  item: T;
  reason: string;
}

/**
 * Writes events until Elasticsearch has acknowledged every one or rejected it for good. Overload and
 * outages are retried with capped exponential backoff (the partition stays held meanwhile, which is
 * the backpressure); type conflicts are retried at once with the clashing field set aside.
 * Returns the permanently rejected items, which belong in the dead-letter topic.
 */
export async function writeEvents<T extends { entry: BulkEntry }>(context: WriteContext, items: T[]): Promise<Rejected<T>[]> {
  const rejected: Rejected<T>[] = [];
  let pending = latestPerId(items);
  let attempt = 0;
  let held = false;
  try {
    while (pending.length > 0) {
      if (!context.keepGoing()) throw new WriteAbandoned(`gave up writing ${pending.length} ${context.source} events`);
      const again: T[] = [];
      let retryCause: string | undefined;
      try {
        const results = await heartbeatingWhile(context, context.bulk.write(pending.map((item) => item.entry)));
        let indexed = 0;
        results.forEach((result, position) => {
          const item = pending[position]!;
          const outcome = classifyItem(result);
          if (outcome.kind === 'indexed') {
            indexed += 1;
          } else if (outcome.kind === 'retry') {
            again.push(item);
            retryCause = outcome.cause;
          } else if (outcome.kind === 'type_conflict') {
            const reduced = setAsideField(entryEvent(item.entry), outcome.field);
            if (reduced) {
              context.metrics.typeConflicts.inc({ source: context.source });
              context.logger.warn({ index: item.entry.index, id: item.entry.id, field: outcome.field }, 'type conflict: field stored unindexed');
              again.push({ ...item, entry: bulkEntry(item.entry.index, reduced) });
            } else {
              rejected.push({ item, reason: outcome.reason });
            }
          } else {
            rejected.push({ item, reason: outcome.reason });
          }
        });
        context.metrics.indexed.inc({ source: context.source }, indexed);
      } catch (error) {
        if (!isRetriableRequestError(error)) {
          const reason = `bulk request refused: ${(error as Error).message}`;
          for (const item of pending) rejected.push({ item, reason });
          pending = [];
          continue;
        }
        again.push(...pending);
        retryCause = (error as Error).name || 'request_failed';
      }
      pending = again;
      if (retryCause !== undefined) {
        context.metrics.retries.inc({ source: context.source, cause: retryCause });
        const delay = backoffMs(attempt, context.retryInitialMs, context.retryMaxMs);
        attempt += 1;
        if (!held) context.onHold((held = true));
        context.logger.warn(
          { source: context.source, events: pending.length, cause: retryCause, retryInMs: delay, attempt },
          'elasticsearch unavailable, holding the partition',
        );
        await waitAlive(context, delay);
      }
    }
  } finally {
    if (held) context.onHold(false);
  }
  return rejected;
}

/** How often a worker waiting for a bulk request reminds the group it is alive (kafkajs sends at most one heartbeat per heartbeatInterval). */
const HEARTBEAT_WHILE_WRITING_MS = 500;

/**
 * Waits for a bulk request while heartbeating: on a cluster a request may wait a long time for a
 * shard's primary (a node lost, a primary relocating), and a member silent for the session timeout
 * is dropped from the group, which then rebalances again and again while its members are stuck so.
 * A heartbeat refused here (a rebalance began) is not thrown: the batch sees it through keepGoing()
 * and its own heartbeat after the write.
 */
async function heartbeatingWhile<T>(context: WriteContext, request: Promise<T>): Promise<T> {
  const timer = setInterval(() => void context.heartbeat().catch(() => undefined), HEARTBEAT_WHILE_WRITING_MS);
  try {
    return await request;
  } finally {
    clearInterval(timer);
  }
}

/** Sleeps in short steps, heartbeating and stopping early when the batch is given up. */
async function waitAlive(context: WriteContext, delayMs: number): Promise<void> {
  const until = Date.now() + delayMs;
  while (Date.now() < until && context.keepGoing()) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(500, until - Date.now())));
    await context.heartbeat();
  }
}
