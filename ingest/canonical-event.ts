import { isAscii } from 'node:buffer';
import type { EventFieldNames } from './event-fields.ts';
import { MAX_ID_BYTES } from './event-id.ts';

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
/** The message as one byte per character, for native searches (String indexOf, regular expressions). */
let latin1 = '';
/** Whether the message has no byte above 0x7f. */
let ascii = true;
/** The first backslash or byte above 0x7f at or after the string being scanned (the message's length when none): bytes a string's quick check cannot take. */
let nextSpecial = 0;
/**
 * A byte below 0x20 has no place in canonical form: escaped inside strings, and no whitespace outside
 * them. Matching the whole text with a run (anchored) costs about half a search for one of them.
 */
const NO_CONTROL = /^[ -\xff]*$/;
/** A run of printable ASCII but the backslash, from lastIndex: where it stops is the next special byte. */
const ORDINARY_RUN = /[ -[\]-\x7f]*/y;

/**
 * The keys of the objects being scanned (the innermost last), each object's from its base, up to
 * `keyCount`: where each starts, and a fingerprint of its length and first and last bytes. Keys with
 * the same fingerprint are compared in full, so two keys are told apart exactly without hashing every
 * byte. In canonical form a key's bytes are the only way to write its text, so equal text means equal bytes.
 */
const keyStarts = new Int32Array(4096);
const keyPrints = new Float64Array(4096);
let keyCount = 0;
let arrays: PathNode[] = [];
let multi: PathNode[] = [];

const PROTO = Buffer.from('__proto__');
const PROTO_PRINT = keyPrint(PROTO, 0, PROTO.length);

function keyPrint(bytes: Buffer, start: number, end: number): number {
  return (end - start) * 0x10000 + bytes[start]! * 0x100 + bytes[end - 1]!;
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
  latin1 = bytes.toString('latin1');
  if (!NO_CONTROL.test(latin1)) return undefined;
  ascii = isAscii(bytes);
  nextSpecial = findSpecial(0);
  keyCount = 0;
  arrays = [];
  multi = [];
  if (nodeCount > MAX_NODES) {
    metadataNode = pathNode('metadata', 'metadata', undefined);
    shapeRoot = shapeNode();
    nodeCount = 0;
  }
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
        arrays.push(metadataNode);
        at = scanObject(bytes, start, metadataNode, 1);
      } else if (first === OPEN_ARRAY) at = scanArray(bytes, start, metadataNode, 1, true);
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
  event.shape = shapeText();
  return event;
}

/**
 * The shape's paths as a tree of nodes, one per path, so that a path met again costs a lookup by its
 * last key and is compared by identity. The shapes themselves hang off a second tree walked with a
 * message's paths in the order met: messages of one kind share a shape, and sorting and serialising
 * it cost more than the rest of the scan. Both trees start over past MAX_NODES nodes.
 */
interface PathNode {
  path: string;
  /** The last key, and the next child of the same parent with the same key fingerprint. */
  key: string;
  samePrint: PathNode | undefined;
  children: Map<number, PathNode>;
}

interface ShapeNode {
  next: Map<PathNode, ShapeNode>;
  shape: string | undefined;
}

const MAX_NODES = 10_000;
let nodeCount = 0;
let metadataNode = pathNode('metadata', 'metadata', undefined);
let shapeRoot = shapeNode();
/** Between a shape's arrays and its multi-element arrays. */
const MULTI_FOLLOWS = pathNode('', '', undefined);

function pathNode(path: string, key: string, samePrint: PathNode | undefined): PathNode {
  nodeCount += 1;
  return { path, key, samePrint, children: new Map() };
}

function shapeNode(): ShapeNode {
  nodeCount += 1;
  return { next: new Map(), shape: undefined };
}

/** The node of `parent`'s path with the plain key at [start, end) appended, found by the key's fingerprint and compared in place. */
function childNode(parent: PathNode, start: number, end: number, print: number): PathNode {
  const first = parent.children.get(print);
  for (let child = first; child !== undefined; child = child.samePrint) if (latin1.startsWith(child.key, start)) return child;
  const key = latin1.slice(start, end);
  const child = pathNode(`${parent.path}.${key}`, key, first);
  parent.children.set(print, child);
  return child;
}

function shapeText(): string {
  let node = shapeRoot;
  for (const path of arrays) node = nextShapeNode(node, path);
  node = nextShapeNode(node, MULTI_FOLLOWS);
  for (const path of multi) node = nextShapeNode(node, path);
  if (node.shape === undefined) {
    // one path can have two nodes (key `b` under `a`, and key `a.b`): the shape names it once
    const sorted = (paths: PathNode[]) => [...new Set(paths.map((path) => path.path))].sort();
    node.shape = JSON.stringify({ version: 1, arrays: sorted(arrays), multi: sorted(multi) });
  }
  return node.shape;
}

function nextShapeNode(node: ShapeNode, path: PathNode): ShapeNode {
  let next = node.next.get(path);
  if (next === undefined) {
    next = shapeNode();
    node.next.set(path, next);
  }
  return next;
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

/** A scalar inside metadata (records and arrays are scanned by their containers, for the shape); the offset after it, or -1. */
function scanScalar(bytes: Buffer, at: number): number {
  const first = bytes[at];
  if (first === QUOTE) return scanString(bytes, at);
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
function scanObject(bytes: Buffer, at: number, path: PathNode, depth: number): number {
  if (depth > MAX_DEPTH) return -1;
  at += 1;
  if (bytes[at] === CLOSE_OBJECT) return at + 1;
  const base = keyCount;
  for (;;) {
    if (bytes[at] !== QUOTE) return -1;
    const keyStart = at;
    at = scanString(bytes, at);
    if (at < 0 || bytes[at] !== COLON) return -1;
    const start = keyStart + 1;
    const end = at - 1;
    const leading = bytes[start]!;
    if (leading >= 0x30 && leading <= 0x39) return -1;
    const print = keyPrint(bytes, start, end);
    if (print === PROTO_PRINT && bytes.compare(PROTO, 0, PROTO.length, start, end) === 0) return -1;
    for (let index = base; index < keyCount; index += 1) {
      if (keyPrints[index] === print && bytes.compare(bytes, keyStarts[index]!, keyStarts[index]! + end - start, start, end) === 0) return -1;
    }
    if (keyCount === keyPrints.length) return -1;
    keyStarts[keyCount] = start;
    keyPrints[keyCount++] = print;
    at += 1;
    const first = bytes[at];
    if (first === OPEN_OBJECT || first === OPEN_ARRAY) {
      // only records and arrays have a path in the shape: scalars (most fields) cost no key text
      if (!plain) return -1;
      const child = childNode(path, start, end, print);
      if (first === OPEN_OBJECT) {
        if (!arrays.includes(child)) arrays.push(child);
        at = scanObject(bytes, at, child, depth + 1);
      } else at = scanArray(bytes, at, child, depth + 1, false);
    } else at = scanScalar(bytes, at);
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
function scanArray(bytes: Buffer, at: number, path: PathNode, depth: number, recordsOnly: boolean): number {
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
    else at = scanScalar(bytes, at);
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
 * as it writes them; the offset after the closing quote, or -1. Sets `plain`. The message holds no
 * control byte (scanCanonicalEvent), so a string ending before the next backslash or byte above 0x7f
 * is plain ASCII as it stands; any other is checked byte by byte from the first of those.
 */
function scanString(bytes: Buffer, at: number): number {
  const close = latin1.indexOf('"', at + 1);
  if (close < 0) return -1;
  if (close < nextSpecial) {
    plain = true;
    return close + 1;
  }
  const end = scanStringRest(bytes, Math.max(nextSpecial, at + 1));
  if (end >= 0) nextSpecial = findSpecial(end);
  return end;
}

/** The first backslash or byte above 0x7f at or after `from`, or the message's length. */
function findSpecial(from: number): number {
  if (ascii) {
    const found = latin1.indexOf('\\', from);
    return found < 0 ? latin1.length : found;
  }
  ORDINARY_RUN.lastIndex = from;
  ORDINARY_RUN.test(latin1);
  return ORDINARY_RUN.lastIndex;
}

/** The rest of a string from its first escape or byte outside printable ASCII (scanString). */
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
