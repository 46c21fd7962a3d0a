import type { SetAsideField, StoredEvent } from '../shared/event-index.ts';

/**
 * A field whose type clashes with the index mapping (an object where a keyword was mapped, a value
 * where an object was mapped) must not cost the event. The clashing subtree is moved out of
 * `metadata` into `metadata_unindexed` (stored, never indexed) and the event is written again;
 * restoreSetAsideFields() in shared/event-index.ts puts it back for readers.
 */

// "failed to parse field [metadata.a.b] of type ..." / "object mapping for [metadata.a] tried to parse ..."
const FIELD_IN_REASON = /\[(metadata(?:\.[^\]\s]+)?)\]/;

/** The dotted path of the clashing field named in an Elasticsearch mapping error, if it lies under metadata. */
export function conflictingField(reason: string): string | undefined {
  const path = FIELD_IN_REASON.exec(reason)?.[1];
  return path === undefined || path === 'metadata' ? undefined : path;
}

/**
 * The event with every value at `dottedPath` (through arrays too) moved to `metadata_unindexed`,
 * or undefined when nothing lives at that path (so retrying would not help).
 */
export function setAsideField(event: StoredEvent, dottedPath: string): StoredEvent | undefined {
  if (event.metadata === undefined) return undefined;
  const segments = dottedPath.split('.').slice(1);
  const metadata = structuredClone(event.metadata) as unknown;
  const moved: SetAsideField[] = [];
  removeAt(metadata, segments, [], moved);
  if (moved.length === 0) return undefined;
  return {
    ...event,
    metadata: metadata as StoredEvent['metadata'],
    metadata_unindexed: [...(event.metadata_unindexed ?? []), ...moved],
  };
}

function removeAt(node: unknown, segments: string[], at: (string | number)[], moved: SetAsideField[]): void {
  if (Array.isArray(node)) {
    node.forEach((element, index) => removeAt(element, segments, [...at, index], moved));
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const record = node as Record<string, unknown>;
  // keys may themselves contain dots, so try the longest key first
  for (let length = segments.length; length >= 1; length -= 1) {
    const key = segments.slice(0, length).join('.');
    if (!Object.hasOwn(record, key)) continue;
    if (length === segments.length) {
      moved.push({ path: [...at, key], value: record[key] });
      delete record[key];
    } else {
      removeAt(record[key], segments.slice(length), [...at, key], moved);
    }
    return;
  }
}
