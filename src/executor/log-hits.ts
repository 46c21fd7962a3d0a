import type { estypes } from '@elastic/elasticsearch';
import type { Scan } from '../planner/plan.ts';
import { searchText, type StoreOptions } from './elasticsearch.ts';
import { hitSort, LOG_ROW_COLUMNS, type LogRowJson, writtenRows, type WrittenPage } from './rows/log-row-text.ts';

/**
 * The rows of a logs.all scan written from the store's text as each page arrives (writtenRows: one walk
 * a page, redacted when `redact`), page after page as the executor's eventRows reads them; undefined
 * when the scan is not one of exactly logs.all's columns or the run collects statistics (they read parsed responses).
 */
export async function logHitRows(scan: Scan, options: StoreOptions, redact: boolean): Promise<LogRowJson[] | undefined> {
  if (scan.kind !== 'events' || options.reads) return undefined;
  if (scan.columns.length !== LOG_ROW_COLUMNS.length || scan.columns.some((column, position) => column.name !== LOG_ROW_COLUMNS[position])) return undefined;
  const wanted = scan.take.kind === 'limit' ? scan.take.rows : Number.POSITIVE_INFINITY;
  const pageSize = scan.search.size ?? 10;
  const rows: LogRowJson[] = [];
  let after: estypes.SortResults | undefined;
  for (;;) {
    const size = Math.min(pageSize, wanted - rows.length);
    const text = await searchText({ ...scan.search, size, ...(after ? { search_after: after } : {}) }, options);
    const page = (await writtenRows(text, redact)) ?? (await reparsedRows(text, redact));
    rows.push(...page.rows);
    if (page.rows.length < size || rows.length >= wanted || !page.last) return rows;
    after = hitSort(page.last);
  }
}

/** The rows of a response not in the compact form writtenRows reads: its hits parsed and written again in that form. */
async function reparsedRows(text: string, redact: boolean): Promise<WrittenPage> {
  const hits = (JSON.parse(text) as estypes.SearchResponse).hits?.hits ?? [];
  const page = await writtenRows(JSON.stringify({ hits: { hits } }), redact);
  if (!page) throw new Error('a search response written compactly was not read as one');
  return page;
}
