import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueryTooExpensive } from '../../src/errors.ts';
import { EmbeddedEngine, type EngineTable } from '../../src/executor/engine/embedded-engine.ts';

/**
 * Rows cross to the engine process column by column and come back as arrays of values (engine-protocol.ts):
 * what the caller sees must be what row objects gave, byte cap included.
 */
const MAX_RESULT_BYTES = 200;
let engine: EmbeddedEngine;
beforeAll(async () => {
  engine = await EmbeddedEngine.start({ memoryLimit: '256MB', threads: 1, logger: pino({ level: 'silent' }), maxResultBytes: MAX_RESULT_BYTES });
});
afterAll(async () => {
  await engine?.close();
});

const query = (sql: string, tables: EngineTable[] = []) => engine.run({ tables, sql, timeoutMs: 10_000 });

/** What the byte cap counts: each row's JSON, and a comma between rows. */
const resultBytes = (rows: Record<string, unknown>[]) => rows.reduce((sum, row) => sum + Buffer.byteLength(JSON.stringify(row)), rows.length - 1);

describe('columnar rows between the service and the engine', () => {
  it('loads rows with missing keys, undefined values and keys outside the schema as their columns say', async () => {
    const table: EngineTable = {
      schema: {
        name: 't',
        columns: [
          { name: 'n', type: { kind: 'int64' } },
          { name: 'record', type: { kind: 'array', element: { kind: 'struct', fields: [{ name: 'a', type: { kind: 'string' } }] } } },
        ],
      },
      rows: [{ n: 1, record: [{ a: 'x' }], extra: 'ignored' }, { n: undefined, record: [] }, { record: [{ a: 'y' }] }, { n: 4 }],
    };
    const { rows } = await query('select n, record from t order by n nulls last, len(record)', [table]);
    expect(rows).toEqual([
      { n: 1, record: [{ a: 'x' }] },
      { n: 4, record: null },
      { n: null, record: [] },
      { n: null, record: [{ a: 'y' }] },
    ]);
  });

  it('loads timestamps as the same microseconds, at both ends of their range and at the infinities', async () => {
    // beyond 2^53 as decimal text, as rows carry them
    const micros = ['-62135596800000000', -1, 0, 1, 1_704_067_200_123_456, '253402300799999999', '9223372036854775807', '-9223372036854775807'];
    const table: EngineTable = { schema: { name: 't', columns: [{ name: 'ts', type: { kind: 'timestamp' } }] }, rows: micros.map((ts) => ({ ts })) };
    const texts = async (part: string) => (await query(`select CAST(ts AS VARCHAR) as t from t order by rowid ${part}`, [table])).rows.map((row) => row.t);
    expect([...(await texts('limit 4')), ...(await texts('offset 4'))]).toEqual([
      '0001-01-01 00:00:00+00',
      '1969-12-31 23:59:59.999999+00',
      '1970-01-01 00:00:00+00',
      '1970-01-01 00:00:00.000001+00',
      '2024-01-01 00:00:00.123456+00',
      '9999-12-31 23:59:59.999999+00',
      'infinity',
      '-infinity',
    ]);
    expect((await query('select ts from t where epoch_us(ts) = 1704067200123456', [table])).rows).toEqual([{ ts: 1_704_067_200_123_456 }]);
  });

  it('names the row of a bad value by its place in the whole table, across messages', async () => {
    const rows = Array.from({ length: 4_500 }, (_, n) => ({ n: n === 4_321 ? 'not a number' : n, tag: [{ a: 'x' }] }));
    const schema = {
      name: 't',
      columns: [
        { name: 'n', type: { kind: 'int64' as const } },
        { name: 'tag', type: { kind: 'array' as const, element: { kind: 'struct' as const, fields: [{ name: 'a', type: { kind: 'string' as const } }] } } },
      ],
    };
    await expect(query('select count(*) as c from t', [{ schema, rows }])).rejects.toThrow(
      /table t, row 4321, column n: expected an integer, got "not a number"/,
    );
    expect((await query('select count(*) as c from t', [{ schema, rows: rows.slice(0, 4_321) }])).rows).toEqual([{ c: 4_321 }]);
  });

  it("leaves no table of a request behind, its staging table included, whether it answered or failed on the query's own error", async () => {
    const table: EngineTable = {
      schema: { name: 't', columns: [{ name: 'tag', type: { kind: 'array', element: { kind: 'string' } } }] },
      rows: [{ tag: ['a'] }],
    };
    const tables = `select count(*) as tables from duckdb_tables()`;
    expect((await query('select len(tag) as n from t', [table])).rows).toEqual([{ n: 1 }]);
    expect((await query(tables)).rows).toEqual([{ tables: 0 }]);
    await expect(query('select missing from t', [table])).rejects.toThrow(/missing/);
    expect((await query(tables)).rows).toEqual([{ tables: 0 }]);
  });

  it('gives result rows as objects keyed by column, a column named __proto__ an own key', async () => {
    const { rows, columns } = await query(`select 1 as "__proto__", 'b' as "second" union all select 2, 'c' order by 1`);
    expect(columns.map((column) => column.name)).toEqual(['__proto__', 'second']);
    expect(rows.map((row) => JSON.stringify(row))).toEqual(['{"__proto__":1,"second":"b"}', '{"__proto__":2,"second":"c"}']);
    expect(Object.getPrototypeOf(rows[0])).toBe(Object.prototype);
  });

  it("counts the byte cap on the rows' JSON as objects, keys included: a result of exactly the cap passes, one byte more fails", async () => {
    // a key with a quote and a two-byte character, so escapes and UTF-8 count
    const sql = (width: number) => `select repeat('x', ${width}) as "ké""y", 'a"b' as v`;
    const width = MAX_RESULT_BYTES - resultBytes([{ 'ké"y': '', v: 'a"b' }]);
    const exact = await query(sql(width));
    expect(exact.rows).toEqual([{ 'ké"y': 'x'.repeat(width), v: 'a"b' }]);
    expect(resultBytes(exact.rows)).toBe(MAX_RESULT_BYTES);
    await expect(query(sql(width + 1))).rejects.toThrow(QueryTooExpensive);
  });
});
