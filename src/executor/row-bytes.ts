/**
 * What rows cost in the V8 heap, reckoned from their values (a page of scanned events, for
 * SANDBOX_MAX_HELD_BYTES): an object's header and a slot per property, an array's header and a slot
 * per element, a string's header and its characters (one byte each when Latin-1, as JSON.parse makes
 * ASCII text), a boxed number where it is not a small integer. Hidden classes and V8's rounding are
 * left out: a reckoning close enough to bound memory by, not an exact count.
 */
const OBJECT_HEADER = 24;
const ARRAY_HEADER = 32;
const STRING_HEADER = 16;
const SLOT = 8;
const HEAP_NUMBER = 16;

export function rowBytes(rows: readonly unknown[]): number {
  let bytes = ARRAY_HEADER + rows.length * SLOT;
  for (const row of rows) bytes += valueBytes(row);
  return bytes;
}

function valueBytes(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return STRING_HEADER + (isOneByte(value) ? value.length : 2 * value.length);
    case 'number':
      return Number.isInteger(value) && Math.abs(value) < 2 ** 30 ? 0 : HEAP_NUMBER;
    case 'object': {
      if (value === null) return 0;
      if (Array.isArray(value)) {
        let bytes = ARRAY_HEADER + value.length * SLOT;
        for (const element of value) bytes += valueBytes(element);
        return bytes;
      }
      let bytes = OBJECT_HEADER;
      for (const key in value) bytes += SLOT + valueBytes((value as Record<string, unknown>)[key]);
      return bytes;
    }
    default:
      return 0;
  }
}

/** A character past Latin-1 (U+0100 and up). */
const TWO_BYTE = /[\u0100-\uffff]/;

/** Whether every character fits a byte: V8 then keeps the string at a byte per character. */
function isOneByte(text: string): boolean {
  return !TWO_BYTE.test(text);
}
