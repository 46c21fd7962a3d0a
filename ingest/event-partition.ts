import type { StoredEvent } from '../shared/event-index.ts';
import { partitionIndexName, periodEnd, periodStart, type PartitionPeriod } from '../shared/partitions.ts';
import type { SourceName } from '../shared/sources.ts';
import { microsecondsFromStoredTimestamp } from '../shared/stored-timestamp.ts';

const DAY_MS = 86_400_000;

/** Where one source's events are written, and which of them arrive too late to keep. */
export interface EventPartitioning {
  /** The partition of the event's own time: the same for every delivery of the event, so a redelivery overwrites in place. */
  indexOf(event: StoredEvent): string;
  /**
   * Whether the event's partition is already past retention at `nowMs`, by the same rule retention
   * deletes partitions with: writing it would re-create a partition about to be deleted.
   */
  isExpired(event: StoredEvent, nowMs: number): boolean;
}

export function eventPartitioning(indexPrefix: string, source: SourceName, period: PartitionPeriod, retentionDays: number): EventPartitioning {
  const millisOf = (event: StoredEvent) => Math.floor(microsecondsFromStoredTimestamp(event.timestamp) / 1000);
  return {
    indexOf: (event) => partitionIndexName(indexPrefix, source, period, millisOf(event)),
    isExpired: (event, nowMs) => periodEnd(period, periodStart(period, millisOf(event))) <= nowMs - retentionDays * DAY_MS,
  };
}
