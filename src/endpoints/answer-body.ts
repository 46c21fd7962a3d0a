import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { LogRowJson } from '../executor/rows/log-row-text.ts';
import { redactPii } from '../redaction.ts';

/**
 * How long one slice of encoding may hold the event loop before other requests get a turn. Rows are
 * bounded in number (1000) but not in size: redacting and serialising 1000 rows of 60 KB in one go
 * held the loop for five seconds.
 */
const SLICE_MS = 8;

/** The rows of each encoded answer, so a cached body's count is known without reading it again. */
const rowCounts = new WeakMap<Buffer, number>();

/** How many rows an answer made by encodeAnswer holds. */
export function answerRowCount(body: Buffer): number | undefined {
  return rowCounts.get(body);
}

/** The most rows serialised in one go: bounds a slice should the rows grow large after small ones. */
const MAX_BATCH_ROWS = 64;

/**
 * The answer's JSON body, `{"result":[...]}` in UTF-8, redacted first when asked. Rows are encoded a
 * batch at a time (one JSON.stringify of a batch costs two thirds of one per row), the batch doubling
 * while batches take well under a slice, and the event loop is given back whenever a slice has run
 * for SLICE_MS, so a huge answer delays other requests by one slice at a time instead of by its whole
 * cost. Ordinary answers fit in one slice and never wait. A cached answer is these bytes, sent again and again.
 */
export async function encodeAnswer(rows: readonly unknown[], options: { redact: boolean }): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let pending = '{"result":[';
  let sliceStarted = performance.now();
  let batch = 1;
  for (let index = 0; index < rows.length; ) {
    const batchStarted = performance.now();
    const end = Math.min(rows.length, index + batch);
    const part = rows.slice(index, end);
    const text = batchJson(part, options.redact);
    pending += index === 0 ? text : `,${text}`;
    index = end;
    const now = performance.now();
    if (now - batchStarted < SLICE_MS / 8 && batch < MAX_BATCH_ROWS) batch *= 2;
    if (now - sliceStarted >= SLICE_MS && index < rows.length) {
      chunks.push(Buffer.from(pending));
      pending = '';
      await yieldToLoop();
      sliceStarted = performance.now();
    }
  }
  pending += ']}';
  chunks.push(Buffer.from(pending));
  const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
  rowCounts.set(body, rows.length);
  return body;
}

/** Rows as the members of a JSON array, comma-separated; a row already written from the store's text (LogRowJson) copied as it is. */
function batchJson(rows: readonly unknown[], redact: boolean): string {
  if (!rows.some((row) => row instanceof LogRowJson)) {
    // an array serialises undefined as null, as the answer always has
    return JSON.stringify(redact ? rows.map((row) => redactPii(row)) : rows).slice(1, -1);
  }
  return rows.map((row) => (row instanceof LogRowJson ? row.json : (JSON.stringify(redact ? redactPii(row) : row) ?? 'null'))).join(',');
}
