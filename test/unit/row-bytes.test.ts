import { describe, expect, it } from 'vitest';
import { rowBytes } from '../../src/executor/row-bytes.ts';

describe('what rows are reckoned to take in the heap (SANDBOX_MAX_HELD_BYTES)', () => {
  it('counts headers, slots, characters and boxed numbers, recursing into records and arrays', () => {
    // array 32 + slot 8; object 24 + 3 slots; 'ab' 16 + 2; 1.5 boxed 16; 7 a small integer; [null] 32 + 8
    expect(rowBytes([{ s: 'ab', n: 1.5, a: [null] }])).toBe(32 + 8 + 24 + 3 * 8 + 18 + 16 + 40);
    expect(rowBytes([{ n: 7 }])).toBe(32 + 8 + 24 + 8);
  });

  it('reckons text outside Latin-1 at two bytes a character, as V8 keeps it', () => {
    expect(rowBytes(['ééé']) - rowBytes(['abc'])).toBe(0);
    expect(rowBytes(['日本語']) - rowBytes(['abc'])).toBe(3);
  });

  it('grows with the rows: a wider row weighs more than a narrow one', () => {
    const narrow = { id: 'x', timestamp: 1 };
    const wide = { ...narrow, metadata: [{ request: [{ path: '/rest/v1/items', headers: [{ user_agent: 'bench' }] }] }] };
    expect(rowBytes([wide, wide])).toBeGreaterThan(rowBytes([narrow, narrow]));
  });
});
