/**
 * JSON_VALUE(text, '$.a.b') as the engine answers it (duckdb-sql/functions.ts prints it as
 * `CASE WHEN json_valid(t) AND json_type(t, p) NOT IN ('OBJECT', 'ARRAY') THEN json_extract_string(t, p) END`),
 * or undefined where this is not sure of the engine's answer (the engine's turn). Found by asking DuckDB:
 * - text that is not JSON is NULL, and so is any document that is not an object (the path has a step);
 * - a string is unescaped, true and false are their words, null, an object or an array is NULL;
 * - an integer is its digits as a 64-bit integer prints them (-0 is 0); a fraction or an exponent is
 *   a DOUBLE DuckDB prints its own way (100.0, 1e23): declined;
 * - of duplicate keys DuckDB reads the first (JavaScript would read the last): declined on the path;
 * - DuckDB's reader accepts more than RFC 8259 (trailing commas, NaN, Infinity): so a document that
 *   starts as an object but is not strict JSON is declined, as is an escaped lone surrogate or NUL.
 * `steps` are member names, at least one.
 */
export function jsonValue(text: string, steps: readonly string[]): string | null | undefined {
  return jsonValueReader(steps)(text);
}

/**
 * JSON_VALUE at one path, for many texts. Text without a backslash whose path's names each occur at most
 * once as quoted text (so no key on the path is duplicated) is read by JSON.parse, which is strict RFC 8259
 * and native; a number there, and any other text, is read by the scanner below, which keeps number text.
 */
export function jsonValueReader(steps: readonly string[]): (text: string) => string | null | undefined {
  const quoted = steps.map((step) => JSON.stringify(step));
  return (text) => {
    if (text.charCodeAt(skipSpace(text, 0)) !== OPEN_BRACE) return null;
    if (!text.includes('\\') && quoted.every((name) => atMostOnce(text, name))) {
      const document = parsed(text);
      if (document === NOT_STRICT) return undefined;
      let value: unknown = document;
      for (const step of steps) {
        value =
          value !== null && typeof value === 'object' && !Array.isArray(value) && Object.hasOwn(value, step) ? (value as Record<string, unknown>)[step] : null;
      }
      if (typeof value !== 'number') return typeof value === 'string' || typeof value === 'boolean' ? String(value) : null;
    }
    return scanned(text, steps);
  };
}

function atMostOnce(text: string, name: string): boolean {
  const first = text.indexOf(name);
  return first < 0 || text.indexOf(name, first + 1) < 0;
}

/** The last text JSON.parse read: a row's several JSON_VALUEs (WHERE, keys, aggregates) read the same message. */
let lastText: string | undefined;
let lastDocument: unknown;

function parsed(text: string): unknown {
  if (text === lastText) return lastDocument;
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    // not strict JSON, though it starts as an object: DuckDB may read it (trailing commas, NaN)
    document = NOT_STRICT;
  }
  lastText = text;
  lastDocument = document;
  return document;
}

function scanned(text: string, steps: readonly string[]): string | null | undefined {
  const scanner = new JsonScanner(text, steps);
  let at = skipSpace(text, 0);
  try {
    at = skipSpace(text, scanner.value(at, 0));
  } catch (error) {
    if (error === NOT_STRICT) return undefined;
    throw error;
  }
  if (at !== text.length) return undefined;
  return scanner.found;
}

/** Thrown inside the scanner when the text is not strict JSON (or holds what it declines). */
const NOT_STRICT = Symbol('not strict JSON');

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
/** Deeper documents are left to the engine rather than to this recursion. */
const MAX_DEPTH = 512;
const INT64_MIN = -(2n ** 63n);
const UINT64_MAX = 2n ** 64n - 1n;
const INTEGER = /-?(0|[1-9]\d*)/y;
const NUMBER = /-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

function skipSpace(text: string, from: number): number {
  let at = from;
  for (;;) {
    const code = text.charCodeAt(at);
    if (code !== 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) return at;
    at += 1;
  }
}

function fail(): never {
  throw NOT_STRICT;
}

/** A validating pass over the whole document that keeps the value at the path (null when there is none). */
class JsonScanner {
  found: string | null = null;

  constructor(
    private readonly text: string,
    private readonly steps: readonly string[],
  ) {}

  /**
   * Scans the value at `from`; `depth` is the number of path steps matched on the way to it (-1 when off
   * the path). Returns where the value ends.
   */
  value(from: number, depth: number, nesting = 0): number {
    if (nesting > MAX_DEPTH) fail();
    const text = this.text;
    const code = text.charCodeAt(from);
    const atTarget = depth === this.steps.length;
    if (code === OPEN_BRACE) return this.object(from, depth, nesting);
    if (code === OPEN_BRACKET) return this.array(from, nesting);
    if (code === QUOTE) {
      const { end, value } = this.string(from, atTarget);
      if (atTarget) this.found = value;
      return end;
    }
    for (const word of ['true', 'false', 'null'] as const) {
      if (text.startsWith(word, from)) {
        if (atTarget && word !== 'null') this.found = word;
        return from + word.length;
      }
    }
    NUMBER.lastIndex = from;
    const number = NUMBER.exec(text);
    if (!number) fail();
    if (atTarget) {
      INTEGER.lastIndex = from;
      const integer = INTEGER.exec(text);
      if (integer?.[0].length !== number[0].length) fail();
      const value = BigInt(number[0]);
      if (value < INT64_MIN || value > UINT64_MAX) fail();
      this.found = value.toString();
    }
    return from + number[0].length;
  }

  private object(from: number, depth: number, nesting: number): number {
    const text = this.text;
    const onPath = depth >= 0 && depth < this.steps.length;
    let matched = false;
    let at = skipSpace(text, from + 1);
    if (text.charCodeAt(at) === CLOSE_BRACE) return at + 1;
    for (;;) {
      if (text.charCodeAt(at) !== QUOTE) fail();
      const key = this.string(at, onPath);
      at = skipSpace(text, key.end);
      if (text.charCodeAt(at) !== COLON) fail();
      const hit = onPath && key.value === this.steps[depth];
      // DuckDB reads the first of duplicate keys: such a document is left to it
      if (hit && matched) fail();
      matched ||= hit;
      at = skipSpace(text, this.value(skipSpace(text, at + 1), hit ? depth + 1 : -1, nesting + 1));
      const next = text.charCodeAt(at);
      if (next === CLOSE_BRACE) return at + 1;
      if (next !== COMMA) fail();
      at = skipSpace(text, at + 1);
    }
  }

  private array(from: number, nesting: number): number {
    const text = this.text;
    let at = skipSpace(text, from + 1);
    if (text.charCodeAt(at) === CLOSE_BRACKET) return at + 1;
    for (;;) {
      at = skipSpace(text, this.value(at, -1, nesting + 1));
      const next = text.charCodeAt(at);
      if (next === CLOSE_BRACKET) return at + 1;
      if (next !== COMMA) fail();
      at = skipSpace(text, at + 1);
    }
  }

  /** The string at `from` (its opening quote): where it ends, and its text when `read`. */
  private string(from: number, read: boolean): { end: number; value: string | null } {
    const text = this.text;
    let value = '';
    let start = from + 1;
    for (let at = start; at < text.length; at += 1) {
      const code = text.charCodeAt(at);
      if (code < 0x20) fail();
      if (code === QUOTE) return { end: at + 1, value: read ? value + text.slice(start, at) : null };
      if (code !== BACKSLASH) continue;
      if (read) value += text.slice(start, at);
      const escape = text[at + 1];
      if (escape === 'u') {
        const unit = hexUnit(text, at + 2);
        // a surrogate (paired or not) or NUL: the engine's reader and its text differ from JavaScript's here
        if (unit === undefined || unit === 0 || (unit >= 0xd800 && unit <= 0xdfff)) fail();
        if (read) value += String.fromCharCode(unit);
        at += 5;
      } else {
        const unescaped = escape === undefined ? undefined : ESCAPES[escape];
        if (unescaped === undefined) fail();
        if (read) value += unescaped;
        at += 1;
      }
      start = at + 1;
    }
    return fail();
  }
}

function hexUnit(text: string, from: number): number | undefined {
  const digits = text.slice(from, from + 4);
  return /^[0-9a-fA-F]{4}$/.test(digits) ? Number.parseInt(digits, 16) : undefined;
}
