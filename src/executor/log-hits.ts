import type { estypes } from '@elastic/elasticsearch';
import type { Scan } from '../planner/plan.ts';
import { searchText, type StoreOptions } from './elasticsearch.ts';
import { hitSort, hitTexts, LOG_ROW_COLUMNS, LogHitText } from './rows/log-row-text.ts';

/**
 * The rows of a logs.all scan as the store's hit texts, made into rows when the answer is encoded
 * (logRowJson), page after page as the executor's eventRows reads them; undefined when the scan is
 * not one of exactly logs.all's columns or the run collects statistics (they read parsed responses).
 */
export async function logHitRows(scan: Scan, options: StoreOptions): Promise<LogHitText[] | undefined> {
  if (scan.kind !== 'events' || options.reads) return undefined;
  if (scan.columns.length !== LOG_ROW_COLUMNS.length || scan.columns.some((column, position) => column.name !== LOG_ROW_COLUMNS[position])) return undefined;
  const wanted = scan.take.kind === 'limit' ? scan.take.rows : Number.POSITIVE_INFINITY;
  const pageSize = scan.search.size ?? 10;
  const rows: LogHitText[] = [];
  let after: estypes.SortResults | undefined;
  for (;;) {
    const size = Math.min(pageSize, wanted - rows.length);
    const text = await searchText({ ...scan.search, size, ...(after ? { search_after: after } : {}) }, options);
    const hits = hitTexts(text) ?? reparsedHits(text);
    rows.push(...hits);
    if (hits.length < size || rows.length >= wanted) return rows;
    after = hitSort(hits[hits.length - 1]!);
  }
}

/** The hits of a response not in the compact form hitTexts reads, parsed and written again in it. */
function reparsedHits(text: string): LogHitText[] {
  const hits = (JSON.parse(text) as estypes.SearchResponse).hits?.hits ?? [];
  return hits.map((hit) => new LogHitText(JSON.stringify(hit)));
}
