import { setImmediate as yieldToLoop } from 'node:timers/promises';
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

/**
 * The answer's JSON body, `{"result":[...]}` in UTF-8, redacted first when asked. Rows are encoded one
 * by one and the event loop is given back whenever a slice has run for SLICE_MS, so a huge answer
 * delays other requests by one slice at a time instead of by its whole cost. Ordinary answers fit in
 * one slice and never wait. A cached answer is these bytes, sent again and again.
 */
export async function encodeAnswer(rows: readonly unknown[], options: { redact: boolean }): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let pending = '{"result":[';
  let sliceStarted = performance.now();
  for (let index = 0; index < rows.length; index += 1) {
    const row = options.redact ? redactPii(rows[index]) : rows[index];
    // JSON.stringify turns undefined into null inside an array; alone it would give undefined
    const text = JSON.stringify(row) ?? 'null';
    pending += index === 0 ? text : `,${text}`;
    if (performance.now() - sliceStarted >= SLICE_MS && index < rows.length - 1) {
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
