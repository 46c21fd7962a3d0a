/**
 * The event as the query side reads it: the columns of a source CTE and the fields the ingest
 * worker stores beside them for its own use. The stored document is StoredEvent
 * (shared/event-index.ts); its timestamp text belongs to shared/stored-timestamp.ts.
 */

/** The columns of a source CTE, in the order a row lists them; `project` only where the source keeps it as a column. */
export const EVENT_COLUMNS = ['id', 'timestamp', 'event_message', 'metadata', 'project'] as const;

export type EventColumn = (typeof EVENT_COLUMNS)[number];

const EVENT_COLUMN_NAMES: ReadonlySet<string> = new Set(EVENT_COLUMNS);

export function isEventColumn(name: string): name is EventColumn {
  return EVENT_COLUMN_NAMES.has(name);
}

/** Columns every stored event has: the worker refuses an event without a message and fills in id and timestamp. */
export const ALWAYS_PRESENT_COLUMNS: ReadonlySet<string> = new Set<EventColumn>(['id', 'timestamp', 'event_message']);

/** Columns whose every value is a single keyword (event_message through its keyword subfield). */
export const KEYWORD_COLUMNS: ReadonlySet<string> = new Set<EventColumn>(['id', 'event_message', 'project']);

/**
 * Stored beside the columns, never part of a row nor reachable by a query: the values set aside on
 * a type conflict, where folded fields and the Kafka key went, and the record-array shape.
 */
export const INTERNAL_FIELDS = ['metadata_unindexed', 'folded_fields', 'key_field', 'shape'] as const;

/** The field holding the metadata values the worker set aside because their type clashed with the mapping. */
export const SET_ASIDE_FIELD = 'metadata_unindexed';

/** Fields of the stored record-array shape (shared/event-shape.ts) the planner filters on. */
export const SHAPE_FIELDS = { version: 'shape.version', arrays: 'shape.arrays', multi: 'shape.multi' } as const;

/** Whether a dotted path names an internal field or something inside one (or an Elasticsearch meta field). */
export function isInternalPath(path: string): boolean {
  if (path.startsWith('_')) return true;
  const top = path.split('.', 1)[0]!;
  return (INTERNAL_FIELDS as readonly string[]).includes(top);
}

/** The `_source` fields behind a column: metadata comes with the values the worker set aside. */
export function sourceFieldsOf(column: string): string[] {
  return column === 'metadata' ? ['metadata', SET_ASIDE_FIELD] : [column];
}

/** The store field a column's exact text is matched on: event_message is analysed text, its keyword subfield the text as produced. */
export function exactTextField(column: string): string {
  return column === 'event_message' ? 'event_message.keyword' : column;
}
