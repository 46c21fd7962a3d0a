import { BUCKETS_AGGREGATION, MATCHING_REQUESTS_AGGREGATION, PATH_COUNTS_AGGREGATION } from '../compiler/compile.ts';
import { bucketTimestamp } from './timestamp.ts';

export type UsageRow = { timestamp: string } & Record<string, string | number>;

interface CompositeBucket {
  key: { timestamp: number };
  doc_count: number;
  requests?: { [MATCHING_REQUESTS_AGGREGATION]?: { [PATH_COUNTS_AGGREGATION]?: { buckets?: Record<string, { doc_count: number }> } } };
}

/** Composite date buckets -> usage rows, oldest first, every count an integer (0 when absent). */
export function usageRows(aggregations: Record<string, unknown> | undefined, columns: string[]): UsageRow[] {
  const buckets = (aggregations?.[BUCKETS_AGGREGATION] as { buckets?: CompositeBucket[] } | undefined)?.buckets ?? [];
  return buckets.map((bucket) => {
    const counts = bucket.requests?.[MATCHING_REQUESTS_AGGREGATION]?.[PATH_COUNTS_AGGREGATION]?.buckets ?? {};
    const row: UsageRow = { timestamp: bucketTimestamp(bucket.key.timestamp) };
    for (const column of columns) row[column] = counts[column]?.doc_count ?? 0;
    return row;
  });
}
