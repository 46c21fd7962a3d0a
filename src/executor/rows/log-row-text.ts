import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { estypes } from '@elastic/elasticsearch';
import { redactPii, redactText } from '../../redaction.ts';
import { microsecondsFromStoredTimestamp } from '../../../shared/stored-timestamp.ts';
import { columnRows } from './logs.ts';

/**
 * logs.all's rows made from the store's response text instead of parsed objects (issue 20: parsing
 * the response and serialising the rows again was half the service's CPU per request). A hit's row is
 * written in one walk over its text: the four columns in their order, the timestamp as microseconds,
 * metadata's records wrapped in arrays as columnRows does, every string and key redacted when asked.
 * The bytes are those JSON.stringify writes for the rows columnRows makes (redactPii'd when asked):
 * strings and numbers are copied when already in that form, else decoded and written again. A hit
 * the walk cannot vouch for (fields set aside, a non-string id or timestamp, an array-index key whose
 * place a parsed object would change, text out of the compact form) is made the old way, parsed.
 * A repeated key is looked for only when redacting: Elasticsearch refuses a document that has one.
 */

/** One search hit of a stored event, as the store's JSON text: one the walk leaves to the parsed path, or a page's last. */
export class LogHitText {
  constructor(readonly text: string) {}
}

/** The columns a logs.all row holds, in order: only scans of exactly these are answered from the text. */
export const LOG_ROW_COLUMNS = ['id', 'timestamp', 'event_message', 'metadata'] as const;

/** Thrown inside the walk when a hit needs the parsed path. */
class NeedsParsing extends Error {}

const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_OBJECT = 123;
const CLOSE_OBJECT = 125;
const OPEN_ARRAY = 91;
const CLOSE_ARRAY = 93;
const COMMA = 44;
const COLON = 58;
const DIGIT_0 = 48;
const DIGIT_9 = 57;

/** Integers JSON.stringify writes back as they are: no sign on zero, no leading zero, exact as a double. */
const CANONICAL_INTEGER = /^(?:0|-?[1-9]\d{0,14})$/;
/** Keys a parsed object moves ahead of the others (array indices), so the text's order is not the row's. */
const ARRAY_INDEX = /^(?:0|[1-9]\d{0,9})$/;

/** A cursor over JSON text in the compact form Elasticsearch writes (no whitespace between tokens). */
class JsonWalk {
  pos = 0;
  /** Where the next backslash at or after `pos` is (text.length: none); strings before it need no decoding. */
  private backslash = -1;
  /** Where the search for `backslash` started: it vouches for [backslashFrom, backslash) only. */
  private backslashFrom = 0;

  constructor(readonly text: string) {}

  code(): number {
    return this.text.charCodeAt(this.pos);
  }

  expect(code: number): void {
    if (this.text.charCodeAt(this.pos) !== code) throw new NeedsParsing();
    this.pos += 1;
  }

  /** At an opening quote: where its closing quote is. */
  private stringEnd(): number {
    const { text } = this;
    let quote = text.indexOf('"', this.pos + 1);
    for (;;) {
      if (quote === -1) throw new NeedsParsing();
      let before = quote - 1;
      while (text.charCodeAt(before) === BACKSLASH) before -= 1;
      if ((quote - 1 - before) % 2 === 0) return quote;
      quote = text.indexOf('"', quote + 1);
    }
  }

  private escapedBefore(start: number, end: number): boolean {
    if (this.backslash < start || start < this.backslashFrom) {
      const next = this.text.indexOf('\\', start);
      this.backslash = next === -1 ? this.text.length : next;
      this.backslashFrom = start;
    }
    return this.backslash < end;
  }

  /** Whether the string stringValue read last held an escape (else its text between the quotes is its value). */
  escaped = false;

  /** At an opening quote: moves past the string and returns its value. */
  stringValue(): string {
    const start = this.pos;
    const end = this.stringEnd();
    this.pos = end + 1;
    this.escaped = this.escapedBefore(start, end);
    return this.escaped ? (JSON.parse(this.text.slice(start, end + 1)) as string) : this.text.slice(start + 1, end);
  }

  /** At an opening quote: moves past the string and returns it as JSON.stringify writes its value (redacted when asked). */
  stringJson(redact: boolean): string {
    const start = this.pos;
    const end = this.stringEnd();
    this.pos = end + 1;
    const escaped = this.escapedBefore(start, end);
    this.escaped = escaped;
    if (!escaped && !redact) return this.text.slice(start, end + 1);
    const value = escaped ? (JSON.parse(this.text.slice(start, end + 1)) as string) : this.text.slice(start + 1, end);
    if (!redact) return JSON.stringify(value);
    const redacted = redactText(value);
    return redacted === value && !escaped ? this.text.slice(start, end + 1) : JSON.stringify(redacted);
  }

  /** At an opening quote: moves past the string and returns whether it holds an escape (no copy of it made). */
  skipString(): boolean {
    const start = this.pos;
    const end = this.stringEnd();
    this.pos = end + 1;
    return this.escapedBefore(start, end);
  }

  /**
   * A number, true, false or null: moves past it and returns it as JSON.stringify writes the parsed value where that
   * differs from the text, else undefined; a short integer (most of a record's numbers) is read without a copy of it.
   */
  literalRewrite(): string | undefined {
    const { text } = this;
    const start = this.pos;
    let position = text.charCodeAt(start) === 45 ? start + 1 : start;
    const digits = position;
    for (let code = text.charCodeAt(position); code >= DIGIT_0 && code <= DIGIT_9; code = text.charCodeAt(++position));
    const count = position - digits;
    const next = text.charCodeAt(position);
    const ends = next === COMMA || next === CLOSE_OBJECT || next === CLOSE_ARRAY;
    // CANONICAL_INTEGER's form: a lone 0, or 1-15 digits without a leading zero after an optional minus
    if (ends && count > 0 && count <= 15 && (text.charCodeAt(digits) !== DIGIT_0 ? true : count === 1 && digits === start)) {
      this.pos = position;
      return undefined;
    }
    const json = this.literalJson();
    return this.rewritten ? json : undefined;
  }

  /** Whether the literal literalJson read last is written otherwise than the text has it. */
  rewritten = false;

  /** A number, true, false or null: moves past it and returns it as JSON.stringify writes the parsed value. */
  literalJson(): string {
    const { text } = this;
    const start = this.pos;
    let end = start;
    for (let code = text.charCodeAt(end); end < text.length; code = text.charCodeAt(++end)) {
      if (code === COMMA || code === CLOSE_OBJECT || code === CLOSE_ARRAY) break;
    }
    this.pos = end;
    const token = text.slice(start, end);
    this.rewritten = false;
    if (token === 'true' || token === 'false' || token === 'null') return token;
    if (CANONICAL_INTEGER.test(token)) return token;
    const number = Number(token);
    if (token === '' || Number.isNaN(number)) throw new NeedsParsing();
    const json = JSON.stringify(number);
    this.rewritten = json !== token;
    return json;
  }

  /** Moves past one value of any kind. */
  skipValue(): void {
    const { text } = this;
    let depth = 0;
    do {
      const code = text.charCodeAt(this.pos);
      if (code === QUOTE) this.pos = this.stringEnd() + 1;
      else if (code === OPEN_OBJECT || code === OPEN_ARRAY) {
        depth += 1;
        this.pos += 1;
      } else if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) {
        depth -= 1;
        this.pos += 1;
      } else if (code === COMMA || code === COLON) this.pos += 1;
      else if (depth === 0) this.literalJson();
      else this.pos += 1;
      if (this.pos > text.length) throw new NeedsParsing();
    } while (depth > 0);
  }

  /** At `{` or `[`: calls `each` at every member (after its key, for an object) until the closing bracket, then moves past it. */
  members(each: (key: string | undefined) => void): void {
    const close = this.code() === OPEN_OBJECT ? CLOSE_OBJECT : CLOSE_ARRAY;
    this.pos += 1;
    if (this.code() === close) {
      this.pos += 1;
      return;
    }
    for (;;) {
      let key: string | undefined;
      if (close === CLOSE_OBJECT) {
        if (this.code() !== QUOTE) throw new NeedsParsing();
        key = this.stringValue();
        this.expect(COLON);
      }
      each(key);
      const code = this.code();
      this.pos += 1;
      if (code === close) return;
      if (code !== COMMA) throw new NeedsParsing();
    }
  }
}

/** The frames of copiedRecord's containers: an object, an object written wrapped in an array, an array. */
const OBJECT = 0;
const WRAPPED = 1;
const ARRAY = 2;
const frames: number[] = [];

/**
 * At `{`: a record as record() writes it unredacted, copied from the text in long spans: only a record
 * value's brackets are added, and only escaped strings and numbers JSON.stringify writes otherwise
 * are written again. Keys are not checked for repeats: Elasticsearch refuses a document with a
 * repeated key (Duplicate field), so a stored source holds none.
 */
function copiedRecord(walk: JsonWalk): string {
  const { text } = walk;
  let out = '';
  let copied = walk.pos;
  let position = walk.pos;
  let previous = COLON;
  frames.length = 0;
  for (;;) {
    const code = text.charCodeAt(position);
    if (code === QUOTE) {
      walk.pos = position;
      const key = previous !== COLON && frames[frames.length - 1] !== ARRAY;
      if (key) {
        const first = text.charCodeAt(position + 1);
        if (first >= DIGIT_0 && first <= DIGIT_9) {
          const name = walk.stringValue();
          if (ARRAY_INDEX.test(name) && Number(name) < 4294967295) throw new NeedsParsing();
          walk.pos = position;
        }
      }
      if (walk.skipString()) {
        out += text.slice(copied, position) + JSON.stringify(JSON.parse(text.slice(position, walk.pos)) as string);
        copied = walk.pos;
      }
      position = walk.pos;
      previous = QUOTE;
    } else if (code === OPEN_OBJECT) {
      if (previous === COLON && frames.length > 0) {
        out += `${text.slice(copied, position)}[`;
        copied = position;
        frames.push(WRAPPED);
      } else frames.push(OBJECT);
      position += 1;
      previous = code;
    } else if (code === OPEN_ARRAY) {
      frames.push(ARRAY);
      position += 1;
      previous = code;
    } else if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) {
      const frame = frames.pop();
      position += 1;
      if (frame === WRAPPED) {
        out += `${text.slice(copied, position)}]`;
        copied = position;
      }
      if (frames.length === 0) {
        walk.pos = position;
        return out + text.slice(copied, position);
      }
      previous = code;
    } else if (code === COLON || code === COMMA) {
      position += 1;
      previous = code;
    } else {
      walk.pos = position;
      const json = walk.literalRewrite();
      if (json !== undefined) {
        out += text.slice(copied, position) + json;
        copied = walk.pos;
      }
      position = walk.pos;
      previous = code;
    }
  }
}

/** The date (`2024-01-01`) whose first microsecond dayStart holds: a page's hits mostly share their date. */
let dayText = '';
let dayStart = 0;

function digitAt(text: string, position: number): number {
  const digit = text.charCodeAt(position) - DIGIT_0;
  return digit >= 0 && digit <= 9 ? digit : Number.NaN;
}

/**
 * microsecondsFromStoredTimestamp without its pattern match for the form the ingest worker writes
 * (`2024-01-01T00:00:00.123456789Z`), the date's microseconds kept; any other text goes to it, to be read or refused.
 */
function timestampMicros(text: string): number {
  const length = text.length;
  const fractionDigits = length - 21;
  const form =
    text.charCodeAt(4) === 45 && text.charCodeAt(7) === 45 && text.charCodeAt(10) === 84 && text.charCodeAt(13) === COLON && text.charCodeAt(16) === COLON;
  if (!form || text.charCodeAt(length - 1) !== 90 || text.charCodeAt(19) !== 46 || fractionDigits < 1 || fractionDigits > 9) {
    return microsecondsFromStoredTimestamp(text);
  }
  const date = text.slice(0, 10);
  if (date !== dayText) {
    // the date's digits are checked by the pattern match, which refuses the whole text if they are not digits
    if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) return microsecondsFromStoredTimestamp(text);
    dayStart = microsecondsFromStoredTimestamp(`${date}T00:00:00Z`);
    dayText = date;
  }
  const seconds =
    (digitAt(text, 11) * 10 + digitAt(text, 12)) * 3600 + (digitAt(text, 14) * 10 + digitAt(text, 15)) * 60 + digitAt(text, 17) * 10 + digitAt(text, 18);
  let fraction = 0;
  for (let position = 20; position < 26; position += 1) fraction = fraction * 10 + (position < length - 1 ? digitAt(text, position) : 0);
  for (let position = 26; position < length - 1; position += 1) if (Number.isNaN(digitAt(text, position))) fraction = Number.NaN;
  return Number.isNaN(seconds + fraction) ? microsecondsFromStoredTimestamp(text) : dayStart + seconds * 1_000_000 + fraction;
}

/** Writes one hit's logs.all row from its text, or throws NeedsParsing. */
class RowWriter {
  constructor(
    private readonly walk: JsonWalk,
    private readonly redact: boolean,
  ) {}

  row(): string {
    const { walk } = this;
    let row: string | undefined;
    if (walk.code() !== OPEN_OBJECT) throw new NeedsParsing();
    walk.members((key) => {
      if (key === '_source' && walk.code() === OPEN_OBJECT) row = this.source();
      else walk.skipValue();
    });
    // without a source object the row's id is the hit's _id: the parsed path's
    if (row === undefined) throw new NeedsParsing();
    return row;
  }

  /** The row of a hit's _source, each column written where the text holds it (a repeated key: the last, as JSON.parse). */
  private source(): string {
    const { walk } = this;
    let id: string | undefined;
    let timestamp: string | undefined;
    let message = '""';
    let metadata = '[]';
    walk.members((key) => {
      const code = walk.code();
      if (key === 'metadata_unindexed') throw new NeedsParsing();
      if (key === 'id') {
        // a non-string id is replaced by the hit's _id: the parsed path's
        if (code !== QUOTE) throw new NeedsParsing();
        id = walk.stringJson(this.redact);
      } else if (key === 'timestamp') {
        if (code !== QUOTE) throw new NeedsParsing();
        timestamp = JSON.stringify(timestampMicros(walk.stringValue()));
      } else if (key === 'event_message') {
        message = code === QUOTE ? walk.stringJson(this.redact) : '""';
        if (code !== QUOTE) walk.skipValue();
      } else if (key === 'metadata') metadata = this.metadata();
      else walk.skipValue();
    });
    if (id === undefined || timestamp === undefined) throw new NeedsParsing();
    return `{"id":${id},"timestamp":${timestamp},"event_message":${message},"metadata":${metadata}}`;
  }

  /** The stored metadata as its records: one record wrapped, an array's records kept (nothing else), anything else none. */
  private metadata(): string {
    const { walk } = this;
    const code = walk.code();
    if (code === OPEN_OBJECT) return `[${this.redact ? this.record() : copiedRecord(walk)}]`;
    if (code !== OPEN_ARRAY) {
      walk.skipValue();
      return '[]';
    }
    // records held in an array (the BigQuery shape producers send) are copied as a lone record is
    let records = '';
    walk.members(() => {
      if (walk.code() !== OPEN_OBJECT) return walk.skipValue();
      const record = this.redact ? this.record() : copiedRecord(walk);
      records = records === '' ? record : `${records},${record}`;
    });
    return `[${records}]`;
  }

  /** A record whose record values become arrays of one record; arrays keep their elements, their records converted the same way. */
  private record(): string {
    const { walk, redact } = this;
    walk.pos += 1;
    if (walk.code() === CLOSE_OBJECT) {
      walk.pos += 1;
      return '{}';
    }
    let text = '{';
    // a key written twice is kept once by JSON.parse, at its first place with its last value: the parsed path's
    const names: string[] = [];
    let many: Set<string> | undefined;
    // redactPii tells apart keys that redaction makes equal: REDACTED, REDACTED_2, ...
    const seen = redact ? new Set<string>() : undefined;
    let suffix = 1;
    for (;;) {
      if (walk.code() !== QUOTE) throw new NeedsParsing();
      const keyStart = walk.pos;
      const name = walk.stringValue();
      const first = name.charCodeAt(0);
      if (first >= DIGIT_0 && first <= DIGIT_9 && ARRAY_INDEX.test(name) && Number(name) < 4294967295) throw new NeedsParsing();
      if (many ? many.has(name) : names.includes(name)) throw new NeedsParsing();
      if (many) many.add(name);
      else if (names.push(name) > 32) many = new Set(names);
      let keyJson: string;
      if (seen) {
        let redacted = redactText(name);
        const base = redacted;
        while (seen.has(redacted)) redacted = `${base}_${++suffix}`;
        seen.add(redacted);
        keyJson = redacted === name && !walk.escaped ? walk.text.slice(keyStart, walk.pos) : JSON.stringify(redacted);
      } else keyJson = walk.escaped ? JSON.stringify(name) : walk.text.slice(keyStart, walk.pos);
      walk.expect(COLON);
      text += `${keyJson}:${this.fieldValue()}`;
      const code = walk.code();
      walk.pos += 1;
      if (code === CLOSE_OBJECT) return `${text}}`;
      if (code !== COMMA) throw new NeedsParsing();
      text += ',';
    }
  }

  private fieldValue(): string {
    const code = this.walk.code();
    if (code === OPEN_OBJECT) return `[${this.record()}]`;
    if (code === OPEN_ARRAY) return this.array();
    if (code === QUOTE) return this.walk.stringJson(this.redact);
    return this.walk.literalJson();
  }

  private array(): string {
    const { walk } = this;
    const elements: string[] = [];
    walk.members(() => {
      const code = walk.code();
      elements.push(code === OPEN_OBJECT ? this.record() : this.fieldValue());
    });
    return `[${elements.join(',')}]`;
  }
}

/** A hit's logs.all row as JSON.stringify writes the row columnRows makes of the parsed hit (redactPii'd when asked). */
function parsedRowJson(hit: LogHitText, redact: boolean): string {
  const parsed = JSON.parse(hit.text) as estypes.SearchHit<Record<string, unknown>>;
  const row = columnRows([parsed], LOG_ROW_COLUMNS)[0];
  return JSON.stringify(redact ? redactPii(row) : row);
}

/** A logs.all row already written as JSON (writtenRows), copied into the answer as it is. */
export class LogRowJson {
  constructor(readonly json: string) {}
}

/** A page of rows writtenRows wrote, and the last hit's text (where the next page starts). */
export interface WrittenPage {
  rows: LogRowJson[];
  last: LogHitText | undefined;
}

/** How long writtenRows holds the event loop before other requests get a turn: encodeAnswer's slice. */
const WRITE_SLICE_MS = 8;

const HITS_OPEN = '{"hits":{"hits":[';
const HITS_CLOSE = ']}}';

/**
 * The rows of a search response's text, each as JSON.stringify writes the row columnRows makes of its parsed hit, in one walk over
 * the text (not one to find where each hit ends and another to write it: a third less CPU for 100 demo
 * rows). The event loop is given back every WRITE_SLICE_MS between hits. Undefined when the text
 * is not in the compact form filter_path leaves (`{"hits":{"hits":[...]}}`, or `{}`): the caller parses it.
 */
export async function writtenRows(text: string, redact: boolean): Promise<WrittenPage | undefined> {
  if (text === '{}') return { rows: [], last: undefined };
  if (!text.startsWith(HITS_OPEN) || !text.endsWith(HITS_CLOSE)) return undefined;
  const walk = new JsonWalk(text);
  const rows: LogRowJson[] = [];
  walk.pos = HITS_OPEN.length;
  if (walk.code() === CLOSE_ARRAY) return walk.pos === text.length - HITS_CLOSE.length ? { rows, last: undefined } : undefined;
  let sliceStarted = performance.now();
  let start = walk.pos;
  try {
    for (;;) {
      start = walk.pos;
      rows.push(new LogRowJson(hitRow(walk, redact)));
      const code = walk.code();
      walk.pos += 1;
      if (code === CLOSE_ARRAY) break;
      if (code !== COMMA) return undefined;
      if (performance.now() - sliceStarted >= WRITE_SLICE_MS) {
        await yieldToLoop();
        sliceStarted = performance.now();
      }
    }
  } catch (error) {
    if (error instanceof NeedsParsing) return undefined;
    throw error;
  }
  if (walk.pos !== text.length - HITS_CLOSE.length + 1) return undefined;
  return { rows, last: new LogHitText(text.slice(start, walk.pos - 1)) };
}

/** At a hit's `{`: its row, written from the text or (a hit the walk cannot vouch for) from the parsed hit; moves past it. */
function hitRow(walk: JsonWalk, redact: boolean): string {
  const start = walk.pos;
  try {
    return new RowWriter(walk, redact).row();
  } catch (error) {
    if (!(error instanceof NeedsParsing)) throw error;
  }
  walk.pos = start;
  walk.skipValue();
  return parsedRowJson(new LogHitText(walk.text.slice(start, walk.pos)), redact);
}

/** The sort values of a hit (where the next page starts). */
export function hitSort(hit: LogHitText): estypes.SortResults | undefined {
  return (JSON.parse(hit.text) as estypes.SearchHit).sort;
}
