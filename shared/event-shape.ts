/**
 * The shape of an event's record arrays, stored with each event (`shape`) for the query planner: it
 * tells whether an aggregation over metadata can be pushed down exactly, without reading `_source`.
 *
 * It describes the "BigQuery view" of metadata that logs.all returns (src/rows/logs.ts
 * metadataRows): metadata is an array of records (an object is a one-element array), every nested
 * record is a one-element array of records, arrays stay arrays. Paths are dotted field names from
 * `metadata`, without array positions.
 */
export interface EventShape {
  /** 1 for this definition; events stored before `shape` existed have none. */
  version: 1;
  /** Paths of every non-empty array in the view, `metadata` itself included; each once, sorted. */
  arrays: string[];
  /** Paths of the arrays that have two or more elements somewhere in the event; each once, sorted. */
  multi: string[];
}

export const EVENT_SHAPE_VERSION = 1;

export function eventShape(metadata: unknown): EventShape {
  const arrays = new Set<string>();
  const multi = new Set<string>();
  const root = metadata === undefined || metadata === null ? [] : Array.isArray(metadata) ? metadata.filter(isRecord) : isRecord(metadata) ? [metadata] : [];
  visitArray(root, 'metadata', arrays, multi);
  return { version: EVENT_SHAPE_VERSION, arrays: [...arrays].sort(), multi: [...multi].sort() };
}

/** An array of the view at `path`: its elements are records (visited field by field), arrays, or scalars. */
function visitArray(elements: unknown[], path: string, arrays: Set<string>, multi: Set<string>): void {
  if (elements.length === 0) return;
  arrays.add(path);
  if (elements.length > 1) multi.add(path);
  for (const element of elements) {
    if (isRecord(element)) visitRecord(element, path, arrays, multi);
    else if (Array.isArray(element)) visitArray(element, path, arrays, multi);
  }
}

function visitRecord(record: Record<string, unknown>, path: string, arrays: Set<string>, multi: Set<string>): void {
  // for...in over a parsed JSON object sees its own keys only; scalars (most fields) cost no path string
  for (const key in record) {
    const value = record[key];
    if (value === null || typeof value !== 'object') continue;
    // a nested record is a one-element array of records in the view
    if (Array.isArray(value)) visitArray(value, `${path}.${key}`, arrays, multi);
    else visitArray([value], `${path}.${key}`, arrays, multi);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
