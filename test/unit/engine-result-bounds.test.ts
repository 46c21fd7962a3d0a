import { describe, expect, it } from 'vitest';
import { BoundedResult, ResultTooLarge } from '../../src/executor/engine/bounded-result.ts';

const row = (n: number, text = '') => ({ n, text });
const bytesOf = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

describe('BoundedResult', () => {
  it('is full at the row cap, having kept exactly the first maxRows rows', () => {
    const result = new BoundedResult({ maxRows: 3, maxBytes: 1_000_000, batchBytes: 1_000_000 });
    for (let n = 0; !result.full; n += 1) result.add(row(n));
    expect(result.take().map((value) => value.n)).toEqual([0, 1, 2]);
    expect(result.rowCount).toBe(3);
  });

  it('cuts the rows into batches of about batchBytes, in order, none lost', () => {
    const one = bytesOf(row(0, 'x'.repeat(90)));
    const result = new BoundedResult({ maxRows: 1000, maxBytes: 1_000_000, batchBytes: one * 10 });
    const batches: number[][] = [];
    for (let n = 0; n < 95; n += 1) {
      const batch = result.add(row(n, 'x'.repeat(90)));
      if (batch) batches.push(batch.map((value) => value.n as number));
    }
    batches.push(result.take().map((value) => value.n as number));
    expect(batches.length).toBe(10);
    expect(batches.slice(0, 9).every((batch) => batch.length === 10)).toBe(true);
    expect(batches.flat()).toEqual(Array.from({ length: 95 }, (_, n) => n));
    expect(result.take()).toEqual([]);
  });

  it("counts the answer's JSON bytes: rows and the commas between them, up to the cap exactly", () => {
    const first = row(1, 'abc');
    const second = row(2, 'é');
    const exact = bytesOf(first) + 1 + bytesOf(second);
    const result = new BoundedResult({ maxRows: 10, maxBytes: exact, batchBytes: exact });
    expect(result.add(first)).toBeUndefined();
    expect(result.add(second)).toEqual([first, second]);
    expect(() => result.add(row(3))).toThrow(ResultTooLarge);
  });

  it('refuses the row that crosses the byte cap, naming the cap and the row', () => {
    const result = new BoundedResult({ maxRows: 1000, maxBytes: 5000, batchBytes: 1000 });
    const error = (() => {
      try {
        for (let n = 0; n < 1000; n += 1) result.add(row(n, 'y'.repeat(1000)));
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(ResultTooLarge);
    expect((error as ResultTooLarge).rows).toBe(5);
    expect((error as Error).message).toBe('the result exceeds 5000 bytes of JSON at row 5');
    expect(result.rowCount).toBe(4);
  });

  it('refuses a single value larger than the whole cap before keeping it', () => {
    const result = new BoundedResult({ maxRows: 1000, maxBytes: 1024, batchBytes: 256 });
    expect(() => result.add(row(0, 'z'.repeat(2048)))).toThrow(ResultTooLarge);
    expect(result.rowCount).toBe(0);
    expect(result.take()).toEqual([]);
  });
});
