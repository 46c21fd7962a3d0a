import { describe, expect, it } from 'vitest';
import { eventTimestamp } from '../../shared/event-timestamp.ts';
import { parseTimestamp } from '../../shared/stored-timestamp.ts';

describe('ingest: event timestamps in the stored form', () => {
  it('reads every timestamp as parseTimestamp does, when its minute was seen before and when not', () => {
    const values = [
      '2026-11-20T23:58:36.867478Z',
      '2026-11-20T23:58:00.000000Z',
      '2026-11-20T23:58:59.999999Z',
      // the minute is known, the second is not a second
      '2026-11-20T23:58:60.000000Z',
      '2026-11-20T23:59:01.000001Z',
      '2024-02-29T12:00:00.500000Z',
      '2024-02-30T12:00:00.500000Z',
      '2023-02-29T12:00:00.500000Z',
      '1970-01-01T00:00:00.000000Z',
      '2262-04-10T23:59:59.999999Z',
      '2262-04-11T00:00:00.000000Z',
      '2262-04-11T00:00:00.000001Z',
      '2026-11-20 23:58:36.867478Z',
      '2026-11-20T23:58:36.867Z',
    ];
    // twice: the second round reads the minutes the first one remembered
    for (const value of [...values, ...values]) expect([value, eventTimestamp(value)]).toEqual([value, parseTimestamp(value)]);
  });

  it('reads numbers and other forms as parseTimestamp does', () => {
    for (const value of [1732000000, '1732000000123', '2026-11-20T23:58:36+02:00', 'yesterday', null])
      expect(eventTimestamp(value)).toEqual(parseTimestamp(value));
  });
});
