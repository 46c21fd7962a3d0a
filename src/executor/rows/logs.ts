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
 * Every nested record becomes an array of records; arrays of scalars stay as they are. Plain loops:
 * this runs over every field of every row of logs.all, where entries/fromEntries cost twice the
 * JSON parse of the same response.
 */
function recordFields(record: Record<string, unknown>): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const key of Object.keys(record)) {
    const value = nestedValue(record[key]);
    // a stored "__proto__" key is data: defined, never assigned (assignment would set the prototype)
    if (key === '__proto__') Object.defineProperty(fields, key, { value, enumerable: true, writable: true, configurable: true });
    else fields[key] = value;
  }
  return fields;
}

function nestedValue(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (!Array.isArray(value)) return [recordFields(value as Record<string, unknown>)];
  const elements = new Array<unknown>(value.length);
  for (let position = 0; position < value.length; position += 1) {
    const element: unknown = value[position];
    elements[position] = isRecord(element) ? recordFields(element) : nestedValue(element);
  }
  return elements;
}

/** metadata in the BigQuery shape clients read as metadata[0].request[0].path (docs/design/DESIGN.md 1). */
export function metadataRows(metadata: unknown): Record<string, unknown>[] {
  if (metadata === undefined || metadata === null) return [];
  const records = Array.isArray(metadata) ? metadata : [metadata];
  return records.filter(isRecord).map(recordFields);
}

/**
 * What metadataRows does, done to the stored metadata itself: each nested record is wrapped in a
 * one-element array where it stands, no record is copied. For hits fresh from the store and read
 * once (columnRows): copying every record of every row cost three times the conversion in place.
 */
function metadataRowsInPlace(metadata: unknown): Record<string, unknown>[] {
  if (metadata === undefined || metadata === null) return [];
  const records = Array.isArray(metadata) ? metadata : [metadata];
  return records.filter(isRecord).map(recordFieldsInPlace);
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
