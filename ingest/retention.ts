import type { Client } from '@elastic/elasticsearch';
import type { Logger } from '../shared/logger.ts';
import type { IngestMetrics } from './metrics.ts';
import { legacyIndexName, parsePartitionName, type Partition } from '../shared/partitions.ts';
import type { SourceName } from '../shared/sources.ts';

const DAY_MS = 86_400_000;

export interface RetentionPolicy {
  indexPrefix: string;
  sources: readonly SourceName[];
  /** Days of events each source keeps. */
  retentionDays(source: SourceName): number;
}

/** When a partition may be deleted: once its newest possible event is older than the source keeps. */
export function expiresAt(partition: Pick<Partition, 'source' | 'endMs'>, policy: RetentionPolicy): number {
  return partition.endMs + policy.retentionDays(partition.source) * DAY_MS;
}

/**
 * The partitions among `indices` that retention deletes at `nowMs`. The current and future
 * partitions never qualify: their end is after now, and every source keeps at least a day.
 */
export function expiredPartitions(indices: readonly string[], policy: RetentionPolicy, nowMs: number): Partition[] {
  return indices
    .map((index) => parsePartitionName(policy.indexPrefix, policy.sources, index))
    .filter((partition): partition is Partition => partition !== undefined && expiresAt(partition, policy) <= nowMs);
}

export interface RetentionRun {
  deleted: string[];
}

/**
 * Deletes what is past retention: expired partitions, and a legacy single index once its newest
 * event is (or, empty, it has nothing to keep). Safe to run from several workers at once: each
 * deletes by exact name, and an index another worker deleted first is simply gone.
 */
export async function applyRetention(
  client: Client,
  policy: RetentionPolicy,
  nowMs: number,
  logger: Logger,
  onDeleted: (source: SourceName) => void = () => {},
): Promise<RetentionRun> {
  const listed = await client.cat.indices({ index: `${policy.indexPrefix}*`, format: 'json', h: 'index', expand_wildcards: 'open' });
  const indices = listed.map((row) => row.index).filter((index): index is string => typeof index === 'string');
  const doomed: { index: string; source: SourceName; reason: string }[] = expiredPartitions(indices, policy, nowMs).map((partition) => ({
    index: partition.index,
    source: partition.source,
    reason: `its newest possible event (${new Date(partition.endMs - 1).toISOString()}) is older than ${policy.retentionDays(partition.source)} days`,
  }));
  for (const source of policy.sources) {
    const legacy = legacyIndexName(policy.indexPrefix, source);
    if (!indices.includes(legacy)) continue;
    const newest = await newestEventMs(client, legacy);
    if (newest === undefined || newest < nowMs - policy.retentionDays(source) * DAY_MS) {
      doomed.push({
        index: legacy,
        source,
        reason:
          newest === undefined
            ? 'the legacy index is empty'
            : `the legacy index's newest event (${new Date(newest).toISOString()}) is older than ${policy.retentionDays(source)} days`,
      });
    }
  }
  const deleted: string[] = [];
  for (const { index, source, reason } of doomed) {
    // a 404 means another worker deleted it first: not counted twice
    const response = await client.indices.delete({ index }, { ignore: [404] });
    if (response.acknowledged !== true) continue;
    deleted.push(index);
    onDeleted(source);
    logger.info({ index, source, reason }, 'retention deleted an index');
  }
  return { deleted };
}

async function newestEventMs(client: Client, index: string): Promise<number | undefined> {
  const response = await client.search({ index, size: 0, track_total_hits: false, aggs: { newest: { max: { field: 'timestamp' } } } });
  const value = (response.aggregations?.newest as { value?: number | null } | undefined)?.value;
  return typeof value === 'number' ? value : undefined;
}

export interface RetentionSchedule {
  stop(): Promise<void>;
}

/** Runs retention soon after start and then every `intervalMs`; a failed run is logged, counted and tried again next time. */
export function startRetentionSchedule(options: {
  client: Client;
  policy: RetentionPolicy;
  intervalMs: number;
  logger: Logger;
  metrics: IngestMetrics;
  now(): number;
}): RetentionSchedule {
  const { client, policy, logger, metrics } = options;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const run = async () => {
    try {
      await applyRetention(client, policy, options.now(), logger, (source) => metrics.retentionDeleted.inc({ source }));
      metrics.retentionRuns.inc({ outcome: 'ok' });
    } catch (error) {
      metrics.retentionRuns.inc({ outcome: 'failed' });
      logger.warn({ err: error }, 'retention run failed; trying again at the next interval');
    }
  };
  const next = (delayMs: number) => {
    timer = setTimeout(() => {
      running = run().finally(() => {
        running = undefined;
        if (!stopped) next(options.intervalMs);
      });
    }, delayMs);
    timer.unref();
  };
  // a little after start, so a fleet of workers started together does not run it at once
  next(Math.min(options.intervalMs, 5000 + Math.floor(Math.random() * 5000)));
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
