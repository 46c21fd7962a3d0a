import type { estypes } from '@elastic/elasticsearch';
import type { StoredEvent } from '../shared/event-index.ts';
import type { CanonicalEvent } from './event.ts';
import { conflictingField } from './type-conflict.ts';

/** What happened to one event of a bulk request. */
export type ItemOutcome =
  | { kind: 'indexed' }
  | { kind: 'retry'; cause: string }
  | { kind: 'type_conflict'; field: string; reason: string }
  | { kind: 'rejected'; reason: string };

const MAPPING_ERRORS = new Set(['document_parsing_exception', 'mapper_parsing_exception', 'illegal_argument_exception']);

/** Sorts a bulk item result into indexed, worth retrying, a type conflict to work around, or permanently rejected. */
export function classifyItem(item: estypes.BulkResponseItem): ItemOutcome {
  if (item.status >= 200 && item.status < 300) return { kind: 'indexed' };
  const error = item.error;
  if (item.status === 429 || item.status >= 500) return { kind: 'retry', cause: error?.type ?? `status_${item.status}` };
  const reason = error ? `${error.type}: ${error.reason ?? ''}` : `status ${item.status}`;
  if (error && MAPPING_ERRORS.has(error.type)) {
    const field = conflictingField(error.reason ?? '') ?? conflictingField(error.caused_by?.reason ?? '');
    if (field) return { kind: 'type_conflict', field, reason };
  }
  return { kind: 'rejected', reason };
}

/**
 * A whole bulk request that failed: connection errors, timeouts, 429 and 5xx are worth retrying;
 * anything else (a 400 for the request as a whole) is a fault in the request itself.
 */
export function isRetriableRequestError(error: unknown): boolean {
  // connection errors and timeouts carry statusCode 0 (or none): Elasticsearch never answered
  if ((error as { name?: string }).name !== 'ResponseError') return true;
  const status = (error as { meta?: { statusCode?: number } }).meta?.statusCode ?? 0;
  return status === 0 || status === 408 || status === 429 || status >= 500;
}

/**
 * A shared buffer bulk entries are cut from, and how many of its entries are still held: once none
 * is and it is no longer being filled, its bytes are reused for new entries (releaseEntries).
 */
export class Slab {
  held = 0;
  constructor(readonly bytes: Buffer) {}
}

/**
 * An event ready for a bulk body: its id and partition, and its two NDJSON lines (action and
 * document) serialised once, at decoding, into bytes outside the JavaScript heap. The parsed event
 * becomes garbage at once, young, instead of being kept until Elasticsearch answers. The lines are
 * kept as a range of their slab, not a Buffer view each: one object less per event held.
 */
export class BulkEntry {
  constructor(
    readonly id: string,
    readonly index: string,
    /** The slab the lines lie in, from `start`: a chunk's entries usually follow each other in one. */
    readonly slab: Slab,
    readonly start: number,
    /** Bytes of the two lines. */
    readonly length: number,
  ) {}

  /** The two lines (a view of the slab). */
  get lines(): Buffer {
    return this.slab.bytes.subarray(this.start, this.start + this.length);
  }
}

export function bulkEntry(index: string, event: StoredEvent): BulkEntry {
  return entryBytes(event.id, index, actionLine(index, JSON.stringify(event.id)), JSON.stringify(event));
}

/** The NDJSON action line of an event (its id as JSON): `index`, not `create`, so a redelivered event overwrites itself with identical content. */
function actionLine(index: string, quotedId: string): string {
  return `${actionPrefix(index)}${quotedId}}}\n`;
}

/** The action line up to the id, per index: a source writes to a few partitions at a time. */
const actionPrefixes = new Map<string, string>();
const MEMO_INDICES = 1024;

function actionPrefix(index: string): string {
  let prefix = actionPrefixes.get(index);
  if (prefix === undefined) {
    if (actionPrefixes.size >= MEMO_INDICES) actionPrefixes.clear();
    prefix = `{"index":{"_index":${JSON.stringify(index)},"_id":`;
    actionPrefixes.set(index, prefix);
  }
  return prefix;
}

/**
 * Entries are cut from shared slabs instead of a Buffer each: one allocation per few hundred
 * events, and the lines are encoded straight into place without joining them into one string first.
 * A slab lives as long as any entry in it; the entries of a chunk are written and released together.
 * Released slabs are filled again instead of being left to the garbage collector: a slab freed only
 * when V8 collects it (old by then: a major collection) kept tens of megabytes of native memory
 * alive that no entry used, and a new one each time touched fresh pages.
 */
const SLAB_BYTES = 256 * 1024;
/** Free slabs kept for reuse at most (8 MB): about what one bulk request releases at once. */
const FREE_SLABS_KEPT = 32;
const freeSlabs: Slab[] = [];
let slab = new Slab(Buffer.alloc(0));
let slabUsed = 0;

function entryBytes(id: string, index: string, action: string, document: string): BulkEntry {
  // UTF-8 takes at most 3 bytes per UTF-16 unit; the newline after the document is the 1
  const most = (action.length + document.length) * 3 + 1;
  if (most > SLAB_BYTES) {
    const lines = Buffer.from(`${action}${document}\n`);
    return new BulkEntry(id, index, new Slab(lines), 0, lines.length);
  }
  const bytes = slabWithRoom(most);
  const start = slabUsed;
  slabUsed += bytes.write(action, slabUsed);
  slabUsed += bytes.write(document, slabUsed);
  bytes[slabUsed++] = 10;
  slab.held += 1;
  return new BulkEntry(id, index, slab, start, slabUsed - start);
}

/** The current slab's bytes, with room for `most` more (a fresh or free slab when it has not). */
function slabWithRoom(most: number): Buffer {
  if (slabUsed + most > slab.bytes.length) {
    const filled = slab;
    slab = freeSlabs.pop() ?? new Slab(Buffer.allocUnsafeSlow(SLAB_BYTES));
    slabUsed = 0;
    if (filled.held === 0) keepFree(filled);
  }
  return slab.bytes;
}

const PROJECT_MEMBER = ',"project":';
const METADATA_MEMBER = ',"metadata":';

/**
 * The entry of a message in canonical form: the same two lines bulkEntry writes for its event,
 * with the message, project and metadata copied from the message's bytes as they are.
 */
export function canonicalBulkEntry(index: string, event: CanonicalEvent): BulkEntry {
  const { scanned, value } = event;
  const id = JSON.stringify(event.id);
  const action = actionLine(index, id);
  const head = `{"id":${id},"timestamp":"${event.timestamp}","event_message":`;
  const tail = `,"shape":${scanned.shape}}\n`;
  const copied =
    scanned.messageEnd -
    scanned.messageStart +
    (scanned.projectStart < 0 ? 0 : PROJECT_MEMBER.length + scanned.projectEnd - scanned.projectStart) +
    (scanned.metadataStart < 0 ? 0 : METADATA_MEMBER.length + scanned.metadataEnd - scanned.metadataStart);
  const most = (action.length + head.length + tail.length) * 3 + copied;
  const owner = most > SLAB_BYTES ? new Slab(Buffer.allocUnsafe(most)) : undefined;
  const bytes = owner === undefined ? slabWithRoom(most) : owner.bytes;
  const start = owner === undefined ? slabUsed : 0;
  let at = start;
  at += bytes.write(action, at);
  at += bytes.write(head, at);
  at += value.copy(bytes, at, scanned.messageStart, scanned.messageEnd);
  if (scanned.projectStart >= 0) {
    at += bytes.write(PROJECT_MEMBER, at);
    at += value.copy(bytes, at, scanned.projectStart, scanned.projectEnd);
  }
  if (scanned.metadataStart >= 0) {
    at += bytes.write(METADATA_MEMBER, at);
    at += value.copy(bytes, at, scanned.metadataStart, scanned.metadataEnd);
  }
  at += bytes.write(tail, at);
  if (owner !== undefined) return new BulkEntry(event.id, index, owner, 0, at);
  slabUsed = at;
  slab.held += 1;
  return new BulkEntry(event.id, index, slab, start, at - start);
}

/**
 * The entries will not be read again (their chunk is written, dead-lettered or given up): their
 * slabs may be reused once no other entry holds them. Each entry is released at most once; an entry
 * never released only keeps its slab from being reused.
 */
export function releaseEntries(items: readonly { entry: BulkEntry }[]): void {
  for (const { entry } of items) {
    const owner = entry.slab;
    owner.held -= 1;
    if (owner.held === 0 && owner !== slab) keepFree(owner);
  }
}

function keepFree(owner: Slab): void {
  // entries too large for a slab have a buffer of their own: left to the garbage collector
  if (owner.bytes.length === SLAB_BYTES && freeSlabs.length < FREE_SLABS_KEPT) freeSlabs.push(owner);
}

/** The stored event back from its entry, for the rare event that must be changed and written again (a type conflict). */
export function entryEvent(entry: BulkEntry): StoredEvent {
  const documentStart = entry.lines.indexOf(10) + 1;
  return JSON.parse(entry.lines.toString('utf8', documentStart, entry.lines.length - 1)) as StoredEvent;
}

/**
 * One write per id, the latest in Kafka order: the final document is the same as writing them in
 * turn, and a retried earlier version can never overwrite a later one that already succeeded.
 */
export function latestPerId<T extends { entry: BulkEntry }>(items: T[]): T[] {
  const latest = new Map<string, T>();
  for (const item of items) {
    latest.delete(item.entry.id);
    latest.set(item.entry.id, item);
  }
  return [...latest.values()];
}

/** Splits items into consecutive runs bounded by count and by approximate serialised size. */
export function chunkBySize<T>(items: T[], sizeOf: (item: T) => number, maxBytes: number, maxCount: number): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = sizeOf(item);
    if (current.length > 0 && (current.length >= maxCount || bytes + size > maxBytes)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/** Capped exponential backoff: initial, 2x, 4x ... never above max. */
export function backoffMs(attempt: number, initialMs: number, maxMs: number): number {
  return Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 30));
}
