import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sourceColumns } from '../../queries/endpoint.ts';
import { EVENT_INDEX_MAPPINGS } from '../../shared/event-index.ts';
import { EVENT_COLUMNS, INTERNAL_FIELDS, isInternalPath, sourceFieldsOf } from '../../shared/stored-event.ts';
import { microsecondsFromStoredTimestamp, millisFromNanosText, nanosTextFromMicros } from '../../shared/stored-timestamp.ts';

describe('the stored event', () => {
  it('maps every column and internal field it names', () => {
    const mapped = Object.keys(EVENT_INDEX_MAPPINGS.properties!);
    // folded_fields and key_field are mapped dynamically
    for (const field of [...EVENT_COLUMNS, ...INTERNAL_FIELDS.filter((name) => name !== 'folded_fields' && name !== 'key_field')])
      expect(mapped).toContain(field);
  });

  it('keeps internal fields and meta fields out of reach, and nothing else', () => {
    for (const path of ['shape', 'shape.multi', 'metadata_unindexed', 'folded_fields', 'key_field.x', '_id', '_ignored'])
      expect(isInternalPath(path)).toBe(true);
    for (const path of ['shaped', 'metadata.shape', 'project', 'key_fields', 'metadata.metadata_unindexed']) expect(isInternalPath(path)).toBe(false);
  });

  it('reads metadata together with the values the worker set aside', () => {
    expect(sourceFieldsOf('metadata')).toEqual(['metadata', 'metadata_unindexed']);
    expect(sourceFieldsOf('event_message')).toEqual(['event_message']);
  });

  it('gives a source CTE its columns in row order, project only where the source keeps it', () => {
    expect(sourceColumns(true).map((column) => column.name)).toEqual(['id', 'timestamp', 'event_message', 'metadata', 'project']);
    expect(sourceColumns(false).map((column) => column.name)).toEqual(['id', 'timestamp', 'event_message', 'metadata']);
    expect(sourceColumns(false).find((column) => column.name === 'timestamp')?.type).toEqual({ kind: 'timestamp' });
  });
});

describe('nine-digit timestamp text', () => {
  it('writes microseconds with three zero digits below them, and reads them back', () => {
    expect(nanosTextFromMicros(1_704_067_200_123_456)).toBe('2024-01-01T00:00:00.123456000Z');
    expect(nanosTextFromMicros(0)).toBe('1970-01-01T00:00:00.000000000Z');
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 9_200_000_000_000_000 }), (micros) => {
        expect(microsecondsFromStoredTimestamp(nanosTextFromMicros(micros))).toBe(micros);
      }),
    );
  });

  it('reads epoch milliseconds, rounding what lies below them as asked', () => {
    // 2024-01-01T00:00:00Z is 1704067200000 ms, written here independently of the code under test
    expect(millisFromNanosText('2024-01-01T00:00:00.123000000Z', 'exact')).toBe(1_704_067_200_123);
    expect(millisFromNanosText('2024-01-01T00:00:00.123000001Z', 'exact')).toBeUndefined();
    expect(millisFromNanosText('2024-01-01T00:00:00.123000001Z', 'down')).toBe(1_704_067_200_123);
    expect(millisFromNanosText('2024-01-01T00:00:00.123000001Z', 'up')).toBe(1_704_067_200_124);
    // a whole millisecond is not rounded up (0.007 * 1000 is 7.000000000000001 in floating point)
    expect(millisFromNanosText('2024-01-01T00:00:00.007000000Z', 'up')).toBe(1_704_067_200_007);
    expect(millisFromNanosText('2024-01-01T00:00:00.123456Z', 'down')).toBeUndefined();
  });
});
