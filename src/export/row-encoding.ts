import type { ExportFormat } from './export-request.ts';

/** The content type of each export format. */
export const CONTENT_TYPES: Record<ExportFormat, string> = {
  ndjson: 'application/x-ndjson',
  csv: 'text/csv; charset=utf-8',
};

/**
 * Rows as export text: NDJSON (one JSON object per line) or CSV (RFC 4180: a header row of the
 * columns, records ending in CRLF). `head` is written once before any rows; `rows` any number of times.
 */
export interface RowEncoder {
  head(): string;
  rows(rows: readonly Record<string, unknown>[]): string;
}

export function rowEncoder(format: ExportFormat, columns: readonly string[]): RowEncoder {
  if (format === 'ndjson') return { head: () => '', rows: ndjsonLines };
  return {
    head: () => (columns.length === 0 ? '' : csvRecord(columns)),
    rows: (rows) => {
      let text = '';
      for (const row of rows) text += csvRecord(columns.map((column) => row[column]));
      return text;
    },
  };
}

function ndjsonLines(rows: readonly Record<string, unknown>[]): string {
  let text = '';
  for (const row of rows) text += `${JSON.stringify(row)}\n`;
  return text;
}

/** One CSV record, CRLF-terminated. */
export function csvRecord(values: readonly unknown[]): string {
  return `${values.map(csvField).join(',')}\r\n`;
}

/**
 * One CSV field: null and absent are empty, nested values (records, arrays) their JSON text; a field
 * holding a comma, a quote, CR or LF is quoted with its quotes doubled (RFC 4180 2.6, 2.7).
 */
export function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** The columns of rows whose shape is not known in advance: every key, in the order first seen. */
export function columnsOf(rows: readonly Record<string, unknown>[]): string[] {
  const columns = new Set<string>();
  for (const row of rows) for (const key of Object.keys(row)) columns.add(key);
  return [...columns];
}
