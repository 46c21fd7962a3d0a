import type { Client } from '@elastic/elasticsearch';
import { ensureEventIndex } from '../shared/event-index.ts';
import type { Logger } from '../shared/logger.ts';
import { partitionIndexName, periodEnd, periodStart, type Partition, type PartitionPeriod } from '../shared/partitions.ts';
import type { SourceName } from '../shared/sources.ts';
import type { IngestMetrics } from './metrics.ts';
import { expiresAt, type RetentionPolicy } from './retention.ts';

/**
 * Partitions are made ahead of their period: an index created by the first event of a new period
 * has no started shard for a moment, and every search reading it then meets a shard being created
 * (at midnight UTC for daily partitions, for every dashboard at once).
 */
export interface PartitionLayout extends RetentionPolicy {
  periodOf(source: SourceName): PartitionPeriod;
}

/** The partitions every source needs at `nowMs`: its current period's and the next one's, never one retention would delete. */
export function partitionsAhead(layout: PartitionLayout, nowMs: number): Partition[] {
  return layout.sources
    .flatMap((source) => {
      const period = layout.periodOf(source);
      const current = periodStart(period, nowMs);
      return [current, periodEnd(period, current)].map((startMs) => ({
        index: partitionIndexName(layout.indexPrefix, source, period, startMs),
        source,
        period,
        startMs,
        endMs: periodEnd(period, startMs),
      }));
    })
    .filter((partition) => expiresAt(partition, layout) > nowMs);
}

/**
 * Creates those of `partitions` that do not exist yet, each answered once its primary has started;
 * returns the ones this call created. Several workers may do it at once: one creates, the others find it.
 */
export async function createPartitionsAhead(client: Client, partitions: readonly Partition[], replicas: number): Promise<Partition[]> {
  const created = await Promise.all(partitions.map(async (partition) => ((await ensureEventIndex(client, partition.index, replicas)) ? [partition] : [])));
  return created.flat();
}

export interface PartitionsAheadSchedule {
  stop(): Promise<void>;
}

/**
 * Makes the partitions ahead at once (awaited, so a worker that has started has them) and then
 * every `intervalMs`; a failed pass is logged and tried again at the next.
 */
export async function startPartitionsAhead(options: {
  client: Client;
  layout: PartitionLayout;
  replicas: number;
  intervalMs: number;
  logger: Logger;
  metrics: IngestMetrics;
  now(): number;
}): Promise<PartitionsAheadSchedule> {
  const { client, layout, logger, metrics } = options;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const pass = async () => {
    try {
      for (const partition of await createPartitionsAhead(client, partitionsAhead(layout, options.now()), options.replicas)) {
        metrics.partitionsCreatedAhead.inc({ source: partition.source });
        logger.info({ index: partition.index, periodStart: new Date(partition.startMs).toISOString() }, 'partition created ahead of its period');
      }
    } catch (error) {
      logger.warn({ err: error }, 'creating partitions ahead of their period failed; trying again at the next interval');
    }
  };
  const next = () => {
    timer = setTimeout(() => {
      running = pass().finally(() => {
        running = undefined;
        if (!stopped) next();
      });
    }, options.intervalMs);
    timer.unref();
  };
  await pass();
  next();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
