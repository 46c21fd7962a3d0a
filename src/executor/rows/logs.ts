import type { estypes } from '@elastic/elasticsearch';
import { restoreSetAsideFields, type StoredEvent } from '../../../shared/event-index.ts';
import { microsecondsFromStoredTimestamp } from '../../../shared/stored-timestamp.ts';

export interface LogRow {
  id: string;
  timestamp: number;
  event_message: string;
  metadata: Record<string, unknown>[];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * metadata in the BigQuery shape clients read as metadata[0].request[0].path (docs/design/DESIGN.md 1):
 * every nested record becomes an array of records, arrays of scalars stay as they are. Converted in
 * place, no record copied: the hits are fresh from the store and read once (columnRows), and copying
 * every record of every row cost three times the conversion in place.
 */
function metadataRowsInPlace(metadata: unknown): Record<string, unknown>[] {
  if (metadata === undefined || metadata === null) return [];
  const records = Array.isArray(metadata) ? metadata : [metadata];
  return records.filter(isRecord).map(recordFieldsInPlace);
}

/** The same conversion over a copy, for metadata its caller keeps reading (stored events reused in tests and tools). */
export function metadataRows(metadata: unknown): Record<string, unknown>[] {
  return metadataRowsInPlace(structuredClone(metadata));
}

function recordFieldsInPlace(record: Record<string, unknown>): Record<string, unknown> {
  for (const key of Object.keys(record)) {
    const value = record[key];
    if (typeof value !== 'object' || value === null) continue;
    // a stored "__proto__" key is an own data property of the parsed record: defined again, never assigned
    if (key === '__proto__') Object.defineProperty(record, key, { value: nestedValueInPlace(value), enumerable: true, writable: true, configurable: true });
    else record[key] = nestedValueInPlace(value);
  }
  return record;
}

function nestedValueInPlace(value: object): unknown {
  if (!Array.isArray(value)) return [recordFieldsInPlace(value as Record<string, unknown>)];
  for (let position = 0; position < value.length; position += 1) {
    const element: unknown = value[position];
    if (typeof element === 'object' && element !== null) value[position] = isRecord(element) ? recordFieldsInPlace(element) : nestedValueInPlace(element);
  }
  return value;
}

const LOG_COLUMNS = ['id', 'timestamp', 'event_message', 'metadata'] as const;

/** Search hits of stored events -> logs.all rows. */
export function logRows(hits: estypes.SearchHit<Record<string, unknown>>[]): LogRow[] {
  return columnRows(hits, LOG_COLUMNS) as unknown as LogRow[];
}

/**
 * Search hits of stored events -> rows of the chosen columns of a source CTE (id, timestamp, event_message, metadata, project).
 * The rows' metadata is the hits' own, converted in place: the hits are the caller's, fresh from the store, and not read again.
 */
export function columnRows(hits: estypes.SearchHit<Record<string, unknown>>[], columns: readonly string[]): Record<string, unknown>[] {
  const withMetadata = columns.includes('metadata');
  return hits.map((hit) => {
    const stored = (hit._source ?? {}) as Pick<StoredEvent, 'metadata_unindexed'> & Record<string, unknown>;
    // restoring copies the event: only the rare one with fields set aside needs it
    const source = withMetadata && stored.metadata_unindexed !== undefined ? restoreSetAsideFields(stored) : stored;
    const row: Record<string, unknown> = {};
    for (const column of columns) row[column] = columnValue(column, source, hit);
    return row;
  });
}

function columnValue(column: string, source: Record<string, unknown>, hit: estypes.SearchHit<Record<string, unknown>>): unknown {
  switch (column) {
    case 'id':
      return typeof source.id === 'string' ? source.id : hit._id!;
    case 'timestamp':
      return microsecondsFromStoredTimestamp(String(source.timestamp));
    case 'event_message':
      return typeof source.event_message === 'string' ? source.event_message : '';
    case 'metadata':
      return metadataRowsInPlace(source.metadata);
    default:
      return source[column] ?? null;
  }
}
