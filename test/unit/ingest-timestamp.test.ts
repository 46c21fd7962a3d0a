import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatMicros, isStoredForm, parseTimestamp } from '../../shared/stored-timestamp.ts';

const stored = (value: unknown) => {
  const result = parseTimestamp(value);
  return result.ok ? formatMicros(result.micros) : `error: ${result.reason}`;
};

describe('event timestamps', () => {
  it('tells epoch seconds, milliseconds and microseconds apart by magnitude', () => {
    expect(stored(1679582313)).toBe('2023-03-23T14:38:33.000000Z');
    expect(stored(1679582313.25)).toBe('2023-03-23T14:38:33.250000Z');
    expect(stored(1679582313259)).toBe('2023-03-23T14:38:33.259000Z');
    expect(stored(1679582313259245)).toBe('2023-03-23T14:38:33.259245Z');
    expect(stored('1679582313259245')).toBe('2023-03-23T14:38:33.259245Z');
  });

  it('keeps microseconds of ISO strings and truncates nanoseconds', () => {
    expect(stored('2023-03-23T14:34:17.643993277+00:00')).toBe('2023-03-23T14:34:17.643993Z');
    expect(stored('2024-01-01T00:00:00.1Z')).toBe('2024-01-01T00:00:00.100000Z');
    expect(stored('2024-01-01T00:00:00Z')).toBe('2024-01-01T00:00:00.000000Z');
  });

  it('converts zone offsets to UTC and reads a naive time as UTC', () => {
    expect(stored('2024-01-01T02:30:00.5+02:30')).toBe('2024-01-01T00:00:00.500000Z');
    expect(stored('2023-12-31T19:00:00-0500')).toBe('2024-01-01T00:00:00.000000Z');
    expect(stored('2024-01-01T12:00:00.123456')).toBe('2024-01-01T12:00:00.123456Z');
    expect(stored('2023-03-23 14:40:18.149 UTC')).toBe('2023-03-23T14:40:18.149000Z');
  });

  it('rejects what cannot be a stored timestamp, saying why', () => {
    expect(stored('yesterday')).toMatch(/not ISO 8601/);
    expect(stored('2024-02-31T00:00:00Z')).toMatch(/not a valid calendar date/);
    expect(stored('1960-01-01T00:00:00Z')).toMatch(/outside the storable range/);
    expect(stored(true)).toMatch(/got boolean/);
    expect(stored(Number.NaN)).toMatch(/not a finite number/);
  });

  it('recognises the stored form exactly when formatting would give the same text back', () => {
    // 1970 to 2262, the storable range
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 9_200_000_000_000_000 }), (micros) => {
        const text = formatMicros(micros);
        expect(isStoredForm(text)).toBe(true);
        const parsed = parseTimestamp(text);
        expect(parsed.ok && formatMicros(parsed.micros)).toBe(text);
      }),
    );
    for (const other of [
      '2024-01-01T00:00:00.123Z',
      '2024-01-01T00:00:00.123456+00:00',
      ' 2024-01-01T00:00:00.123456Z',
      '2024-01-01 00:00:00.123456Z',
      '2024-01-01T00:00:00.1234567Z',
    ]) {
      expect(isStoredForm(other)).toBe(false);
    }
  });
});
