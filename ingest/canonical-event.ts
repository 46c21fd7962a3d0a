import type { EventFieldNames } from './event-fields.ts';

/**
 * A validating byte scanner for messages already in canonical form: one JSON object holding only the
 * event fields under their own names, written exactly as JSON.stringify would write what JSON.parse
 * reads from it (no whitespace, shortest escapes, numbers as JavaScript prints them, no repeated
 * keys, no `__proto__` or array-index keys, valid UTF-8). For such a message the stored document can
 * be put together from the message's own bytes, without JSON.parse and JSON.stringify. The scanner
 * declines (undefined) anything it is not sure of; the caller then decodes the message as always.
 */
export interface ScannedEvent {
  /** The message's `event_message` string, quotes included, as byte offsets [start, end). */
  messageStart: number;
  messageEnd: number;
  /** `project` (a string, quotes included), or -1 when absent. */
  projectStart: number;
  projectEnd: number;
  /** `metadata` (an object or an array of objects), or -1 when absent. */
  metadataStart: number;
  metadataEnd: number;
  /** `id` as a string without escapes, or undefined when absent. */
  id: string | undefined;
  /** `timestamp` as given (a string without escapes, or a number), or undefined when absent. */
  timestamp: string | number | undefined;
  /** The event's shape (shared/event-shape.ts) as JSON.stringify writes it. */
  shape: string;
}

/** Elasticsearch refuses longer `_id`s; the usual decoding explains that. */
const MAX_ID_BYTES = 512;
/** Deeper nesting than this is left to JSON.parse. */
const MAX_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** Escapes JSON.stringify writes as a letter; every other escaped character is \u00XX (below 0x20) or not escaped. */
const SHORT_ESCAPES = new Set([QUOTE, BACKSLASH, 0x62, 0x66, 0x6e, 0x72, 0x74]);
/** Control characters JSON.stringify writes with a letter (\b \t \n \f \r), never as \u00XX. */
const LETTER_CONTROLS = new Set([0x08, 0x09, 0x0a, 0x0c, 0x0d]);

/** Whether the last string scanned had no escape and no byte above 0x7f. */
let plain = true;
/** A hash of the last key's bytes (scanKey). */
let stringHash = 0;
/** Hashes of the keys of the objects being scanned (the innermost last), each object's from its base, up to `keyCount`. */
const keyHashes = new Int32Array(4096);
let keyCount = 0;
let arrays: string[] = [];
let multi: string[] = [];

const PROTO_HASH = hashOf(Buffer.from('__proto__'));

function hashOf(bytes: Buffer): number {
  let hash = 0;
  for (const byte of bytes) hash = (Math.imul(hash, 31) + byte) | 0;
  return hash;
}

/** Whether a route's field names read each event field under its own name and no other field's. */
const plainNames = new WeakMap<EventFieldNames, boolean>();
const FIELDS = ['event_message', 'timestamp', 'id', 'project', 'metadata'] as const;

function hasPlainNames(names: EventFieldNames): boolean {
  let known = plainNames.get(names);
  if (known === undefined) {
    known = FIELDS.every((field) => names[field].includes(field) && FIELDS.every((other) => other === field || !names[other].includes(field)));
    plainNames.set(names, known);
  }
  return known;
}

/** The message's event fields and shape when the message is in canonical form; undefined when not sure. */
export function scanCanonicalEvent(bytes: Buffer, names: EventFieldNames): ScannedEvent | undefined {
  if (!hasPlainNames(names) || bytes.length < 2 || bytes[0] !== OPEN_OBJECT) return undefined;
  keyCount = 0;
  arrays = [];
  multi = [];
  const event: ScannedEvent = {
    messageStart: -1,
    messageEnd: -1,
    projectStart: -1,
    projectEnd: -1,
    metadataStart: -1,
    metadataEnd: -1,
    id: undefined,
    timestamp: undefined,
    shape: '',
  };
  let seen = 0;
  let at = 1;
  if (bytes[at] === CLOSE_OBJECT) return undefined;
  for (;;) {
    if (bytes[at] !== QUOTE) return undefined;
    const keyStart = at;
    at = scanString(bytes, at);
    if (at < 0 || !plain) return undefined;
    const field = fieldIndex(bytes, keyStart + 1, at - 1);
    if (field < 0 || (seen & (1 << field)) !== 0 || bytes[at] !== COLON) return undefined;
    seen |= 1 << field;
    const start = at + 1;
    const first = bytes[start];
    if (field === 0 || field === 3) {
      if (first !== QUOTE) return undefined;
      at = scanString(bytes, start);
      if (at < 0) return undefined;
      if (field === 0) {
        event.messageStart = start;
        event.messageEnd = at;
      } else {
        event.projectStart = start;
        event.projectEnd = at;
      }
    } else if (field === 1 || field === 2) {
      if (first === QUOTE) {
        at = scanString(bytes, start);
        if (at < 0 || !plain || at - start === 2) return undefined;
        const text = bytes.toString('latin1', start + 1, at - 1);
        if (field === 1) event.timestamp = text;
        else if (text.length <= MAX_ID_BYTES) event.id = text;
        else return undefined;
      } else if (field === 1 && (first === 0x2d || (first !== undefined && first >= 0x30 && first <= 0x39))) {
        at = scanNumber(bytes, start);
        if (at < 0) return undefined;
        event.timestamp = Number(bytes.toString('latin1', start, at));
      } else return undefined;
    } else {
      if (first === OPEN_OBJECT) {
        arrays.push('metadata');
        at = scanObject(bytes, start, 'metadata', 1);
      } else if (first === OPEN_ARRAY) at = scanArray(bytes, start, 'metadata', 1, true);
      else return undefined;
      if (at < 0) return undefined;
      event.metadataStart = start;
      event.metadataEnd = at;
    }
    if (bytes[at] === COMMA) {
      at += 1;
      continue;
    }
    if (bytes[at] !== CLOSE_OBJECT || at + 1 !== bytes.length) return undefined;
    break;
  }
  if (event.messageStart < 0) return undefined;
  if (arrays.length > 1) arrays.sort();
  if (multi.length > 1) multi.sort();
  event.shape = JSON.stringify({ version: 1, arrays, multi });
  return event;
}

/** The event field a top-level key names (its index in FIELDS), or -1. */
function fieldIndex(bytes: Buffer, start: number, end: number): number {
  for (let field = 0; field < FIELDS.length; field += 1) if (sameText(bytes, start, end, FIELDS[field]!)) return field;
  return -1;
}

function sameText(bytes: Buffer, start: number, end: number, text: string): boolean {
  if (end - start !== text.length) return false;
  for (let index = 0; index < text.length; index += 1) if (bytes[start + index] !== text.charCodeAt(index)) return false;
  return true;
}

/** Any value inside metadata, at `path` of the shape's view; the offset after it, or -1. */
function scanValue(bytes: Buffer, at: number, path: string, depth: number): number {
  const first = bytes[at];
  if (first === QUOTE) return scanString(bytes, at);
  if (first === OPEN_OBJECT) return scanObject(bytes, at, path, depth + 1);
  if (first === OPEN_ARRAY) return scanArray(bytes, at, path, depth + 1, false);
  if (first === 0x74) return literal(bytes, at, 'true');
  if (first === 0x66) return literal(bytes, at, 'false');
  if (first === 0x6e) return literal(bytes, at, 'null');
  return scanNumber(bytes, at);
}

function literal(bytes: Buffer, at: number, text: string): number {
  return sameText(bytes, at, at + text.length, text) ? at + text.length : -1;
}

/**
 * A record of the view at `path`: its nested records and arrays add their paths to the shape, as
 * eventShape's visitRecord does. Keys are canonical strings, none repeated, none `__proto__`, none
 * starting with a digit (JSON.parse would put array-index keys first).
 */
function scanObject(bytes: Buffer, at: number, path: string, depth: number): number {
  if (depth > MAX_DEPTH) return -1;
  at += 1;
  if (bytes[at] === CLOSE_OBJECT) return at + 1;
  const base = keyCount;
  for (;;) {
    if (bytes[at] !== QUOTE) return -1;
    const keyStart = at;
    at = scanKey(bytes, at);
    if (at < 0 || bytes[at] !== COLON) return -1;
    const leading = bytes[keyStart + 1]!;
    if (leading >= 0x30 && leading <= 0x39) return -1;
    const hash = stringHash;
    if (hash === PROTO_HASH) return -1;
    for (let index = base; index < keyCount; index += 1) if (keyHashes[index] === hash) return -1;
    if (keyCount === keyHashes.length) return -1;
    keyHashes[keyCount++] = hash;
    at += 1;
    const first = bytes[at];
    if (first === OPEN_OBJECT || first === OPEN_ARRAY) {
      // only records and arrays have a path in the shape: scalars (most fields) cost no key text
      if (!plain) return -1;
      const child = `${path}.${bytes.toString('latin1', keyStart + 1, at - 2)}`;
      if (first === OPEN_OBJECT) {
        if (!arrays.includes(child)) arrays.push(child);
        at = scanObject(bytes, at, child, depth + 1);
      } else at = scanArray(bytes, at, child, depth + 1, false);
    } else at = scanValue(bytes, at, path, depth);
    if (at < 0) return -1;
    if (bytes[at] === COMMA) {
      at += 1;
      continue;
    }
    if (bytes[at] !== CLOSE_OBJECT) return -1;
    keyCount = base;
    return at + 1;
  }
}

/** An array of the view at `path` (eventShape's visitArray); `recordsOnly` for metadata itself, which must hold records. */
function scanArray(bytes: Buffer, at: number, path: string, depth: number, recordsOnly: boolean): number {
  if (depth > MAX_DEPTH) return -1;
  at += 1;
  if (bytes[at] === CLOSE_ARRAY) return at + 1;
  if (!arrays.includes(path)) arrays.push(path);
  let count = 0;
  for (;;) {
    const first = bytes[at];
    if (first === OPEN_OBJECT) at = scanObject(bytes, at, path, depth + 1);
    else if (recordsOnly) return -1;
    else if (first === OPEN_ARRAY) at = scanArray(bytes, at, path, depth + 1, false);
    else at = scanValue(bytes, at, path, depth);
    if (at < 0) return -1;
    count += 1;
    if (count === 2 && !multi.includes(path)) multi.push(path);
    if (bytes[at] === COMMA) {
      at += 1;
      continue;
    }
    return bytes[at] === CLOSE_ARRAY ? at + 1 : -1;
  }
}

/**
 * A string from its opening quote: valid UTF-8, escapes only where JSON.stringify writes them and
 * as it writes them; the offset after the closing quote, or -1. Sets `plain`.
 */
function scanString(bytes: Buffer, at: number): number {
  const length = bytes.length;
  at += 1;
  // the common run of printable ASCII first, then what needs a closer look
  while (at < length) {
    const byte = bytes[at]!;
    if (byte < 0x20 || byte >= 0x80 || byte === QUOTE || byte === BACKSLASH) break;
    at += 1;
  }
  if (at >= length) return -1;
  if (bytes[at] === QUOTE) {
    plain = true;
    return at + 1;
  }
  return scanStringRest(bytes, at);
}

/** The rest of a string from its first escape or byte outside printable ASCII (scanString), hashing nothing. */
function scanStringRest(bytes: Buffer, at: number): number {
  const length = bytes.length;
  while (at < length) {
    const byte = bytes[at]!;
    if (byte === QUOTE) {
      plain = false;
      return at + 1;
    }
    if (byte >= 0x20 && byte < 0x80 && byte !== BACKSLASH) at += 1;
    else if (byte === BACKSLASH) at = escapeEnd(bytes, at);
    else if (byte < 0x20) return -1;
    else at = utf8Sequence(bytes, at);
    if (at < 0) return -1;
  }
  return -1;
}

/** A key: as scanString, and sets `stringHash` to a hash of its bytes, for telling an object's keys apart. */
function scanKey(bytes: Buffer, at: number): number {
  const start = at + 1;
  const end = scanString(bytes, at);
  if (end < 0) return -1;
  let hash = 0;
  for (let index = start; index < end - 1; index += 1) hash = (Math.imul(hash, 31) + bytes[index]!) | 0;
  stringHash = hash;
  return end;
}

/** The offset after an escape as JSON.stringify writes it (a letter, or \u00XX lowercase for a control character without one), or -1. */
function escapeEnd(bytes: Buffer, at: number): number {
  const escaped = bytes[at + 1];
  if (escaped === undefined) return -1;
  if (SHORT_ESCAPES.has(escaped)) return at + 2;
  if (escaped !== 0x75 || bytes[at + 2] !== 0x30 || bytes[at + 3] !== 0x30) return -1;
  const high = bytes[at + 4];
  const low = bytes[at + 5];
  if (high !== 0x30 && high !== 0x31) return -1;
  const lowValue = low === undefined ? -1 : low >= 0x30 && low <= 0x39 ? low - 0x30 : low >= 0x61 && low <= 0x66 ? low - 0x57 : -1;
  if (lowValue < 0 || LETTER_CONTROLS.has((high - 0x30) * 16 + lowValue)) return -1;
  return at + 6;
}

/** The offset after a well-formed UTF-8 sequence starting at a byte above 0x7f (no overlong forms, no surrogates), or -1. */
function utf8Sequence(bytes: Buffer, at: number): number {
  const lead = bytes[at]!;
  if (lead >= 0xc2 && lead <= 0xdf) return continuation(bytes[at + 1]) ? at + 2 : -1;
  if (lead >= 0xe0 && lead <= 0xef) {
    const second = bytes[at + 1];
    if (second === undefined) return -1;
    const low = lead === 0xe0 ? 0xa0 : 0x80;
    const high = lead === 0xed ? 0x9f : 0xbf;
    return second >= low && second <= high && continuation(bytes[at + 2]) ? at + 3 : -1;
  }
  if (lead >= 0xf0 && lead <= 0xf4) {
    const second = bytes[at + 1];
    if (second === undefined) return -1;
    const low = lead === 0xf0 ? 0x90 : 0x80;
    const high = lead === 0xf4 ? 0x8f : 0xbf;
    return second >= low && second <= high && continuation(bytes[at + 2]) && continuation(bytes[at + 3]) ? at + 4 : -1;
  }
  return -1;
}

function continuation(byte: number | undefined): boolean {
  return byte !== undefined && byte >= 0x80 && byte <= 0xbf;
}

/**
 * A JSON number written as JavaScript prints it (String(Number(text)) === text); the offset after
 * it, or -1. Short integers are canonical by their form alone; anything else is compared as text.
 */
function scanNumber(bytes: Buffer, at: number): number {
  const start = at;
  if (bytes[at] === 0x2d) at += 1;
  const firstDigit = bytes[at];
  if (firstDigit === 0x30) at += 1;
  else if (firstDigit !== undefined && firstDigit >= 0x31 && firstDigit <= 0x39) at = digits(bytes, at + 1);
  else return -1;
  const integerEnd = at;
  if (bytes[at] === 0x2e) {
    const after = digits(bytes, at + 1);
    if (after === at + 1) return -1;
    at = after;
  }
  if (bytes[at] === 0x65 || bytes[at] === 0x45) {
    at += 1;
    if (bytes[at] === 0x2b || bytes[at] === 0x2d) at += 1;
    const after = digits(bytes, at);
    if (after === at) return -1;
    at = after;
  }
  const negative = bytes[start] === 0x2d;
  const digitCount = integerEnd - start - (negative ? 1 : 0);
  if (at === integerEnd && digitCount <= 15) return negative && digitCount === 1 && firstDigit === 0x30 ? -1 : at;
  const text = bytes.toString('latin1', start, at);
  return String(Number(text)) === text ? at : -1;
}

function digits(bytes: Buffer, at: number): number {
  for (;;) {
    const byte = bytes[at];
    if (byte === undefined || byte < 0x30 || byte > 0x39) return at;
    at += 1;
  }
}
