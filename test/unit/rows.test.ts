import { describe, expect, it } from 'vitest';
import { columnRows, logRows, metadataRows } from '../../src/executor/rows/logs.ts';
import { datetimeTextFromMillis as bucketTimestamp, microsecondsFromStoredTimestamp } from '../../shared/stored-timestamp.ts';
import { usageRows } from '../../src/executor/rows/usage.ts';

describe('microsecondsFromStoredTimestamp', () => {
  it.each([
    ['1970-01-01T00:00:00.000000Z', 0],
    ['2024-01-01T00:00:00.000000Z', 1_704_067_200_000_000],
    ['2024-01-01T00:00:00.123456Z', 1_704_067_200_123_456],
    ['2024-02-29T23:59:59.999999Z', Date.UTC(2024, 1, 29, 23, 59, 59) * 1000 + 999_999],
    ['2000-03-01T12:34:56.000001Z', Date.UTC(2000, 2, 1, 12, 34, 56) * 1000 + 1],
    ['2099-12-31T23:59:59.5Z', Date.UTC(2099, 11, 31, 23, 59, 59) * 1000 + 500_000],
    ['2024-01-01T00:00:00.123456789Z', 1_704_067_200_123_456],
    ['2024-01-01T00:00:00Z', 1_704_067_200_000_000],
  ])('%s -> %d', (text, micros) => {
    expect(microsecondsFromStoredTimestamp(text)).toBe(micros);
    expect(Number.isInteger(microsecondsFromStoredTimestamp(text))).toBe(true);
  });

  it('keeps the microsecond digits a Date would lose', () => {
    expect(microsecondsFromStoredTimestamp('2024-06-15T10:20:30.654321Z') % 1000).toBe(321);
  });

  it('refuses a timestamp that is not in the stored form', () => {
    expect(() => microsecondsFromStoredTimestamp('2024-01-01 00:00')).toThrow(/stored timestamp/);
  });
});

describe('metadataRows', () => {
  it('turns nested records into arrays of records and keeps arrays of scalars', () => {
    const stored = {
      request: { url: 'https://x.supabase.co/rest/v1/t', path: '/rest/v1/t', headers: { host: 'x' }, cf: { tls: { cipher: 'a' } } },
      tags: ['a', 'b'],
      level: 'info',
      list: [{ a: { b: 1 } }, 3],
    };
    expect(metadataRows(stored)).toEqual([
      {
        request: [{ url: 'https://x.supabase.co/rest/v1/t', path: '/rest/v1/t', headers: [{ host: 'x' }], cf: [{ tls: [{ cipher: 'a' }] }] }],
        tags: ['a', 'b'],
        level: 'info',
        list: [{ a: [{ b: 1 }] }, 3],
      },
    ]);
  });

  it('keeps an array of request records as it is', () => {
    expect(metadataRows([{ request: [{ path: '/a' }, { path: '/b' }] }])).toEqual([{ request: [{ path: '/a' }, { path: '/b' }] }]);
  });

  it('answers an empty array for missing metadata', () => {
    expect(metadataRows(undefined)).toEqual([]);
  });
});

describe('metadataRows and a stored "__proto__" key', () => {
  it('keeps it as data in the row, never as the prototype', () => {
    const rows = metadataRows(JSON.parse('{"__proto__":{"x":1},"a":{"b":[1,{"c":2}]}}'));
    expect(JSON.stringify(rows)).toBe('[{"__proto__":[{"x":1}],"a":[{"b":[1,{"c":2}]}]}]');
    expect(Object.getPrototypeOf(rows[0])).toBe(Object.prototype);
  });
});

describe('logRows', () => {
  it('formats hits into the four columns', () => {
    const rows = logRows([
      {
        _index: 'i',
        _id: 'e1',
        _source: { id: 'e1', timestamp: '2024-01-01T00:00:00.000001Z', event_message: 'hi', project: 'p', metadata: { request: { path: '/x' } } },
      },
    ]);
    expect(rows).toEqual([{ id: 'e1', timestamp: 1_704_067_200_000_001, event_message: 'hi', metadata: [{ request: [{ path: '/x' }] }] }]);
  });

  it('puts metadata values the ingest worker set aside back in place', () => {
    const rows = logRows([
      {
        _index: 'i',
        _id: 'e2',
        _source: {
          id: 'e2',
          timestamp: '2024-01-01T00:00:00.000000Z',
          event_message: '',
          metadata: { request: [{ path: '/x' }] },
          metadata_unindexed: [{ path: ['request', 0, 'status'], value: { code: 1 } }],
        },
      },
    ]);
    expect(rows[0]!.metadata).toEqual([{ request: [{ path: '/x', status: [{ code: 1 }] }] }]);
    expect(rows[0]).not.toHaveProperty('metadata_unindexed');
  });

  it('formats only the columns a narrowed scan read (its _source holds no others)', () => {
    expect(columnRows([{ _index: 'i', _id: 'e3', _source: { id: 'e3' } }], ['id'])).toEqual([{ id: 'e3' }]);
    expect(columnRows([{ _index: 'i', _id: 'e4', _source: { event_message: 'm', project: 'p' } }], ['id', 'event_message', 'project'])).toEqual([
      { id: 'e4', event_message: 'm', project: 'p' },
    ]);
    expect(columnRows([{ _index: 'i', _id: 'e5', _source: {} }], ['project'])).toEqual([{ project: null }]);
  });
});

describe('columnRows converting metadata in place', () => {
  const stored = '{"__proto__":{"x":1},"request":{"path":"/a","cf":{"tls":{"cipher":"c"}}},"list":[{"a":{"b":1}},3,[{"c":{"d":2}}]],"tags":["t"]}';

  it('gives the rows metadataRows gives, "__proto__" kept as data', () => {
    const [row] = columnRows([{ _index: 'i', _id: 'e6', _source: { metadata: JSON.parse(stored) } }], ['metadata']);
    expect(JSON.stringify(row!.metadata)).toBe(JSON.stringify(metadataRows(JSON.parse(stored))));
    expect(JSON.stringify(row!.metadata)).toBe(
      '[{"__proto__":[{"x":1}],"request":[{"path":"/a","cf":[{"tls":[{"cipher":"c"}]}]}],"list":[{"a":[{"b":1}]},3,[{"c":[{"d":2}]}]],"tags":["t"]}]',
    );
    expect(Object.getPrototypeOf((row!.metadata as object[])[0])).toBe(Object.prototype);
  });

  it("makes no copy of the hit's records", () => {
    const metadata = JSON.parse(stored) as Record<string, unknown>;
    const [row] = columnRows([{ _index: 'i', _id: 'e7', _source: { metadata } }], ['metadata']);
    expect((row!.metadata as unknown[])[0]).toBe(metadata);
  });
});

describe('usageRows', () => {
  const columns = ['total_rest_requests', 'total_storage_requests', 'total_auth_requests', 'total_realtime_requests'];

  it('formats bucket starts without a zone and fills missing counts with 0', () => {
    const aggregations = {
      buckets: {
        buckets: [
          {
            key: { timestamp: Date.UTC(2024, 0, 1, 5) },
            doc_count: 3,
            requests: {
              doc_count: 4,
              matching_requests: { doc_count: 4, path_counts: { buckets: { total_rest_requests: { doc_count: 2 }, total_auth_requests: { doc_count: 1 } } } },
            },
          },
          { key: { timestamp: Date.UTC(2024, 0, 1, 6) }, doc_count: 1 },
        ],
      },
    };
    expect(usageRows(aggregations, columns)).toEqual([
      { timestamp: '2024-01-01T05:00:00', total_rest_requests: 2, total_storage_requests: 0, total_auth_requests: 1, total_realtime_requests: 0 },
      { timestamp: '2024-01-01T06:00:00', total_rest_requests: 0, total_storage_requests: 0, total_auth_requests: 0, total_realtime_requests: 0 },
    ]);
  });

  it('answers no rows when there are no buckets', () => {
    expect(usageRows(undefined, columns)).toEqual([]);
  });

  it('bucketTimestamp is UTC', () => {
    expect(bucketTimestamp(Date.UTC(2023, 11, 31, 23, 59))).toBe('2023-12-31T23:59:00');
  });
});
