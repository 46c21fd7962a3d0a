import { BadParameter } from '../errors.ts';

/** The formats rows can be exported in besides the JSON answer. */
export const EXPORT_FORMATS = ['ndjson', 'csv'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Names the query route reads itself for exports: never endpoint parameters (queries/endpoint-record.ts reserves them). */
export const EXPORT_PARAMETERS = ['format', 'cursor', 'page_size'] as const;

/** Rows per page of a paged export when the caller names no page_size, and the most one page may hold. */
export const DEFAULT_PAGE_SIZE = 10_000;
export const MAX_PAGE_SIZE = 100_000;

/** The most characters a cursor may have: ours are about 150; anything far longer is not one. */
const MAX_CURSOR_LENGTH = 2000;

export interface ExportRequest {
  format: ExportFormat;
  /** The cursor of the previous page, as the caller sent it; absent on the first page. */
  cursor?: string;
  pageSize: number;
}

/**
 * `format`, `cursor` and `page_size` from the merged query string and body. `format=json` or no
 * format is the JSON answer (undefined), and then a cursor or page size is refused rather than
 * ignored: a caller paging JSON would otherwise get the same 1000 rows again and again.
 */
export function exportRequest(parameters: Record<string, unknown>): ExportRequest | undefined {
  const format = parameters.format;
  const cursor = parameters.cursor;
  const pageSize = parameters.page_size;
  const accepted = `json, ${EXPORT_FORMATS.join(', ')}`;
  if (format !== undefined && format !== null && typeof format !== 'string')
    throw new BadParameter(`format must be one of ${accepted}; got ${describe(format)}`);
  if (format === undefined || format === null || format === 'json') {
    if (present(cursor) || present(pageSize)) throw new BadParameter(`cursor and page_size apply to exports only: send format=ndjson or format=csv with them`);
    return undefined;
  }
  if (!(EXPORT_FORMATS as readonly string[]).includes(format)) {
    const shown = format.length > 20 ? `${JSON.stringify(format.slice(0, 20))}...` : JSON.stringify(format);
    throw new BadParameter(`format must be one of ${accepted}; got ${shown}`);
  }
  return { format: format as ExportFormat, cursor: cursorText(cursor), pageSize: pageSizeOf(pageSize) };
}

/** The parameters without the export's own names, for the endpoint's declared-parameter checks. */
export function withoutExportParameters(parameters: Record<string, unknown>): Record<string, unknown> {
  const kept: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const [name, value] of Object.entries(parameters)) {
    if (!(EXPORT_PARAMETERS as readonly string[]).includes(name)) kept[name] = value;
  }
  return kept;
}

function cursorText(cursor: unknown): string | undefined {
  if (cursor === undefined || cursor === null || cursor === '') return undefined;
  const expected = "the text of a previous page's X-Next-Cursor header";
  if (typeof cursor !== 'string') throw new BadParameter(`cursor must be ${expected}; got ${describe(cursor)}`, 'invalid_cursor');
  if (cursor.length > MAX_CURSOR_LENGTH) throw new BadParameter(`cursor is ${cursor.length} characters long; ${expected} is far shorter`, 'invalid_cursor');
  return cursor;
}

function pageSizeOf(value: unknown): number {
  if (value === undefined || value === null || value === '') return DEFAULT_PAGE_SIZE;
  const text = typeof value === 'number' ? String(value) : value;
  if (typeof text !== 'string' || !/^\d{1,7}$/.test(text.trim()) || Number(text) < 1 || Number(text) > MAX_PAGE_SIZE) {
    throw new BadParameter(`page_size must be a whole number from 1 to ${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE}); got ${describe(value)}`);
  }
  return Number(text);
}

function present(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '';
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return value.length > 20 ? `${JSON.stringify(value.slice(0, 20))}...` : JSON.stringify(value);
  return typeof value === 'object' ? 'an object' : String(value);
}
