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
  const found: Found = { arrays: [], multi: [] };
  const root = metadata === undefined || metadata === null ? [] : Array.isArray(metadata) ? metadata.filter(isRecord) : isRecord(metadata) ? [metadata] : [];
  visitArray(root, 'metadata', found);
  return { version: EVENT_SHAPE_VERSION, arrays: sorted(found.arrays), multi: sorted(found.multi) };
}

/** Paths seen so far; an event has a handful, so a list is cheaper than a Set (this runs for every event ingested). */
interface Found {
  arrays: string[];
  multi: string[];
}

const sorted = (paths: string[]) => (paths.length > 1 ? paths.sort() : paths);

/** Each child path made once per worker: the same few paths recur in every event of a source. */
const childPaths = new Map<string, Map<string, string>>();
/** Producers with ever new field names would grow the memo without end: it is emptied past this many paths. */
const MEMO_PATHS = 65_536;
let memoSize = 0;

function childPath(path: string, key: string): string {
  let children = childPaths.get(path);
  if (children === undefined) childPaths.set(path, (children = new Map()));
  let child = children.get(key);
  if (child === undefined) {
    if (memoSize >= MEMO_PATHS) {
      childPaths.clear();
      memoSize = 0;
    }
    child = `${path}.${key}`;
    children.set(key, child);
    memoSize += 1;
  }
  return child;
}

/** An array of the view at `path`: its elements are records (visited field by field), arrays, or scalars. */
function visitArray(elements: unknown[], path: string, found: Found): void {
  if (elements.length === 0) return;
  if (!found.arrays.includes(path)) found.arrays.push(path);
  if (elements.length > 1 && !found.multi.includes(path)) found.multi.push(path);
  for (const element of elements) {
    if (isRecord(element)) visitRecord(element, path, found);
    else if (Array.isArray(element)) visitArray(element, path, found);
  }
}

function visitRecord(record: Record<string, unknown>, path: string, found: Found): void {
  // for...in over a parsed JSON object sees its own keys only; scalars (most fields) cost no path string
  for (const key in record) {
    const value = record[key];
    if (value === null || typeof value !== 'object') continue;
    // a nested record is a one-element array of records in the view
    if (Array.isArray(value)) visitArray(value, childPath(path, key), found);
    else visitNested(value as Record<string, unknown>, childPath(path, key), found);
  }
}

/** A nested record: a one-element array of it, without making that array. */
function visitNested(record: Record<string, unknown>, path: string, found: Found): void {
  if (!found.arrays.includes(path)) found.arrays.push(path);
  visitRecord(record, path, found);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
