import { BUCKETS_AGGREGATION, MATCHING_REQUESTS_AGGREGATION, PATH_COUNTS_AGGREGATION } from '../../planner/tables.ts';
import { datetimeTextFromMillis } from '../../../shared/stored-timestamp.ts';

export type UsageRow = { timestamp: string } & Record<string, string | number>;

interface CompositeBucket {
  key: { timestamp: number };
  doc_count: number;
  requests?: { [MATCHING_REQUESTS_AGGREGATION]?: { [PATH_COUNTS_AGGREGATION]?: { buckets?: Record<string, { doc_count: number }> } } };
}

/** Composite date buckets -> one record per bucket: its start (epoch milliseconds) and every count (0 when absent). */
export function bucketCounts(aggregations: Record<string, unknown> | undefined, columns: string[]): ({ timestamp: number } & Record<string, number>)[] {
  const buckets = (aggregations?.[BUCKETS_AGGREGATION] as { buckets?: CompositeBucket[] } | undefined)?.buckets ?? [];
  return buckets.map((bucket) => {
    const counts = bucket.requests?.[MATCHING_REQUESTS_AGGREGATION]?.[PATH_COUNTS_AGGREGATION]?.buckets ?? {};
    const row: { timestamp: number } & Record<string, number> = { timestamp: bucket.key.timestamp };
    for (const column of columns) row[column] = counts[column]?.doc_count ?? 0;
    return row;
  });
}

/** Composite date buckets -> usage rows, oldest first, the start as UTC datetime text, every count an integer. */
export function usageRows(aggregations: Record<string, unknown> | undefined, columns: string[]): UsageRow[] {
  return bucketCounts(aggregations, columns).map((row) => ({ ...row, timestamp: datetimeTextFromMillis(row.timestamp) }));
}
