import { describe, expect, it } from 'vitest';
import { CursorSigner } from '../../src/export/cursor.ts';
import { exportRequest, withoutExportParameters } from '../../src/export/export-request.ts';
import { RowBudget } from '../../src/export/row-budget.ts';
import { columnsOf, csvField, rowEncoder } from '../../src/export/row-encoding.ts';
import { ManualClock } from '../support/manual-clock.ts';

describe('CSV encoding (RFC 4180)', () => {
  it('quotes fields holding a comma, a quote, CR or LF and doubles their quotes', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('line\nbreak')).toBe('"line\nbreak"');
    expect(csvField('carriage\rreturn')).toBe('"carriage\rreturn"');
    expect(csvField(' spaces kept ')).toBe(' spaces kept ');
  });

  it('writes null and absent as empty fields, numbers and booleans as text, nested values as JSON text', () => {
    expect([null, undefined, 0, 12.5, true].map(csvField)).toEqual(['', '', '0', '12.5', 'true']);
    expect(csvField([{ path: '/a,b', n: 1 }])).toBe('"[{""path"":""/a,b"",""n"":1}]"');
  });

  it('starts with a header row and ends every record with CRLF, columns in the given order', () => {
    const encoder = rowEncoder('csv', ['id', 'event_message', 'metadata']);
    const text = encoder.head() + encoder.rows([{ metadata: [], id: 'e1', event_message: 'GET "/", ok\n' }, { id: 'e2' }]);
    expect(text).toBe('id,event_message,metadata\r\ne1,"GET ""/"", ok\n",[]\r\ne2,,\r\n');
  });

  it('takes the columns of rows of unknown shape in the order first seen', () => {
    expect(
      columnsOf([
        { a: 1, b: 2 },
        { c: 3, a: 4 },
      ]),
    ).toEqual(['a', 'b', 'c']);
    expect(rowEncoder('csv', []).head()).toBe('');
  });
});

describe('NDJSON encoding', () => {
  it('writes one JSON object per line, newlines inside values escaped', () => {
    const encoder = rowEncoder('ndjson', ['id']);
    const text = encoder.head() + encoder.rows([{ id: 'a', message: 'x\ny' }, { id: 'b' }]);
    expect(text).toBe('{"id":"a","message":"x\\ny"}\n{"id":"b"}\n');
    expect(
      text
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as unknown),
    ).toEqual([{ id: 'a', message: 'x\ny' }, { id: 'b' }]);
  });
});

describe('export request', () => {
  it('is the JSON answer with no format or format=json', () => {
    expect(exportRequest({})).toBeUndefined();
    expect(exportRequest({ format: 'json' })).toBeUndefined();
  });

  it('reads the format, the cursor and the page size', () => {
    expect(exportRequest({ format: 'ndjson' })).toEqual({ format: 'ndjson', cursor: undefined, pageSize: 10_000 });
    expect(exportRequest({ format: 'csv', cursor: 'abc.def', page_size: '250' })).toEqual({ format: 'csv', cursor: 'abc.def', pageSize: 250 });
    expect(exportRequest({ format: 'csv', page_size: 100_000 })?.pageSize).toBe(100_000);
  });

  it('refuses another format naming the accepted ones', () => {
    expect(() => exportRequest({ format: 'xml' })).toThrow('format must be one of json, ndjson, csv; got "xml"');
    expect(() => exportRequest({ format: 'NDJSON' })).toThrow(/format must be one of json, ndjson, csv/);
    expect(() => exportRequest({ format: ['csv'] })).toThrow(/got an array/);
  });

  it('refuses a page size out of range and a cursor or page size with JSON', () => {
    for (const size of ['0', '100001', '1.5', 'ten', -1])
      expect(() => exportRequest({ format: 'ndjson', page_size: size }), String(size)).toThrow(/page_size must be a whole number from 1 to 100000/);
    expect(() => exportRequest({ cursor: 'x' })).toThrow(/cursor and page_size apply to exports only/);
    expect(() => exportRequest({ format: 'json', page_size: '10' })).toThrow(/cursor and page_size apply to exports only/);
  });

  it('keeps the export names away from the endpoint parameters', () => {
    expect({ ...withoutExportParameters({ project: 'p', format: 'csv', cursor: 'c', page_size: '5', sql: 's' }) }).toEqual({ project: 'p', sql: 's' });
  });
});

describe('export cursors', () => {
  const position = { windowEnd: 1_700_000_000_000, after: ['2023-11-14T22:13:20.000001000Z', 'event-1'] as [string, string] };

  it('give back the position they were made with, for the same endpoint and scope', () => {
    const signer = new CursorSigner('a secret of sixteen or more');
    const cursor = signer.encode('endpoint-a', 'scope', position);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(signer.decode(cursor, 'endpoint-a', 'scope')).toEqual(position);
    // another replica with the same secret reads it too
    expect(new CursorSigner('a secret of sixteen or more').decode(cursor, 'endpoint-a', 'scope')).toEqual(position);
  });

  it('refuses a cursor altered, of another endpoint, of another scope or signed with another secret', () => {
    const signer = new CursorSigner('a secret of sixteen or more');
    const cursor = signer.encode('endpoint-a', 'scope', position);
    const [payload, signature] = cursor.split('.') as [string, string];
    const moved = Buffer.from(JSON.stringify({ e: 'endpoint-a', w: position.windowEnd, a: ['2099-01-01T00:00:00.000000000Z', 'x'] })).toString('base64url');
    expect(() => signer.decode(`${moved}.${signature}`, 'endpoint-a', 'scope')).toThrow(/cursor is not valid here: it was altered/);
    expect(() => signer.decode(`${payload}.${signature.slice(1)}`, 'endpoint-a', 'scope')).toThrow(/it was altered/);
    expect(() => signer.decode(cursor, 'endpoint-b', 'scope')).toThrow(/it belongs to another endpoint/);
    expect(() => signer.decode(cursor, 'endpoint-a', 'other scope')).toThrow(/the parameters, the redaction header or the API key differ/);
    expect(() => new CursorSigner('another secret of sixteen').decode(cursor, 'endpoint-a', 'scope')).toThrow(/it was altered/);
    for (const text of ['', 'nonsense', 'a.b.c', `${Buffer.from('[]').toString('base64url')}.${signature}`]) {
      expect(() => signer.decode(text, 'endpoint-a', 'scope'), text).toThrow(/it is not a cursor this service made/);
    }
  });
});

describe('export row budget', () => {
  it('grants up to a minute of rows at once, then refuses with the wait for the next row', async () => {
    const clock = new ManualClock(0);
    const budget = new RowBudget(600, clock);
    expect(budget.reserve('k', 500)).toEqual({ kind: 'granted', rows: 500 });
    expect(budget.reserve('k', 500)).toEqual({ kind: 'granted', rows: 100 });
    expect(budget.reserve('k', 1)).toEqual({ kind: 'spent', retryAfterSeconds: 1 });
    // other keys have their own
    expect(budget.reserve('other', 10)).toEqual({ kind: 'granted', rows: 10 });
    await clock.advance(10_000);
    expect(budget.reserve('k', 500)).toEqual({ kind: 'granted', rows: 100 });
  });

  it('takes back rows reserved and not sent, and makes the key wait for rows sent beyond its reservation', () => {
    const clock = new ManualClock(0);
    const budget = new RowBudget(60, clock);
    expect(budget.reserve('k', 60)).toEqual({ kind: 'granted', rows: 60 });
    budget.settle('k', 60, 20);
    expect(budget.reserve('k', 100)).toEqual({ kind: 'granted', rows: 40 });
    budget.settle('k', 40, 100);
    // 60 rows owed at one per second
    expect(budget.reserve('k', 1)).toEqual({ kind: 'spent', retryAfterSeconds: 61 });
  });

  it('grants everything when off', () => {
    expect(new RowBudget(0, new ManualClock(0)).reserve('k', 100_000)).toEqual({ kind: 'granted', rows: 100_000 });
  });
});
