import type { StoredEvent } from '../shared/event-index.ts';
import { partitionIndexName, periodEnd, periodStart, type PartitionPeriod } from '../shared/partitions.ts';
import type { SourceName } from '../shared/sources.ts';
import { microsecondsFromStoredTimestamp, storedTimestampHour } from '../shared/stored-timestamp.ts';

const DAY_MS = 86_400_000;

/** Where one source's events are written, and which of them arrive too late to keep. */
export interface EventPartitioning {
  /** The partition of the event's own time: the same for every delivery of the event, so a redelivery overwrites in place. */
  indexOf(event: Pick<StoredEvent, 'timestamp'>): string;
  /**
   * Whether the event's partition is already past retention at `nowMs`, by the same rule retention
   * deletes partitions with: writing it would re-create a partition about to be deleted.
   */
  isExpired(event: Pick<StoredEvent, 'timestamp'>, nowMs: number): boolean;
}

/** Hours remembered per source: a busy stream spans a few; the memo is emptied when it outgrows this. */
const MEMO_HOURS = 1024;

export function eventPartitioning(indexPrefix: string, source: SourceName, period: PartitionPeriod, retentionDays: number): EventPartitioning {
  // every period starts on a UTC hour, so events of the same hour share their partition: each
  // hour's is worked out once instead of parsing every event's timestamp (twice, with retention)
  const byHour = new Map<string, { index: string; end: number }>();
  const partitionOf = (event: Pick<StoredEvent, 'timestamp'>) => {
    const hour = storedTimestampHour(event.timestamp);
    let partition = byHour.get(hour);
    if (partition === undefined) {
      const start = periodStart(period, Math.floor(microsecondsFromStoredTimestamp(event.timestamp) / 1000));
      partition = { index: partitionIndexName(indexPrefix, source, period, start), end: periodEnd(period, start) };
      if (byHour.size >= MEMO_HOURS) byHour.clear();
      byHour.set(hour, partition);
    }
    return partition;
  };
  return {
    indexOf: (event) => partitionOf(event).index,
    isExpired: (event, nowMs) => partitionOf(event).end <= nowMs - retentionDays * DAY_MS,
  };
}
