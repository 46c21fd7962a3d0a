/**
 * The BigQuery constructs of issue 19 (:: casts, IS DISTINCT FROM, GROUP BY ALL and ROLLUP, RIGHT
 * and FULL JOIN ... USING, typed literals), printed for and run on a real in-memory DuckDB. Expected
 * rows are worked out by hand from the rows below with BigQuery's semantics.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.ts';
import { translateToDuckDb } from '../../src/executor/duckdb-sql/index.ts';
import { initSqlParser, parseSandboxQuery } from '../../src/sql/index.ts';
import type { SqlType, TableSchema } from '../../src/sql/types.ts';
import { testDuckDb } from '../support/duckdb.ts';

const S: SqlType = { kind: 'string' };
const I: SqlType = { kind: 'int64' };

const TABLES: TableSchema[] = [
  {
    name: 'events',
    columns: [
      { name: 'id', type: S },
      { name: 'event_message', type: S },
      { name: 'n', type: I },
      { name: 'level', type: S },
    ],
  },
  {
    name: 'other',
    columns: [
      { name: 'id', type: S },
      { name: 'name', type: S },
    ],
  },
];

const ROWS = {
  events: [`('ev1', 'cron job started', 1, 'info')`, `('ev2', 'request', 2, 'info')`, `('ev3', NULL, NULL, 'error')`],
  other: [`('ev1', 'one')`, `('ev3', 'three')`, `('zz', 'none')`],
};

let connection: DuckDBConnection;
beforeAll(async () => {
  await initSqlParser();
  connection = await testDuckDb(TABLES, (table) => ROWS[table.name as keyof typeof ROWS]);
});
afterAll(() => connection?.closeSync());

function translate(sql: string) {
  const tree = parseSandboxQuery(sql, { allowedTables: TABLES.map((t) => t.name) });
  const config = loadConfig({});
  return translateToDuckDb(tree, {
    tables: TABLES,
    parameters: {},
    now: 0,
    maxChars: config.SANDBOX_MAX_TRANSLATED_CHARS,
    maxValueBytes: config.SANDBOX_MAX_RESULT_BYTES,
  });
}

async function rows(sql: string): Promise<Record<string, unknown>[]> {
  const reader = await connection.runAndReadAll(translate(sql).sql);
  return reader.getRowObjectsJson() as Record<string, unknown>[];
}

describe('expr::type is CAST(expr AS type), Postgres type names read as BigQuery ones', () => {
  it('text, varchar, int, bigint, double precision, numeric, boolean, timestamptz', async () => {
    expect(await rows(`select id from events where event_message::text like '%cron job%'`)).toEqual([{ id: 'ev1' }]);
    expect(
      await rows(
        `select n::varchar as a, '7'::int + '8'::bigint as b, '1.5'::double precision as c, '2.25'::numeric = 2.25 as d, 'true'::boolean as e, ` +
          `'2024-01-01 00:00:00+00'::timestamptz = timestamp '2024-01-01' as f from events where id = 'ev1'`,
      ),
    ).toEqual([{ a: '1', b: '15', c: 1.5, d: true, e: true, f: true }]);
  });

  it("BigQuery type names work too, and the cast has CAST's types", () => {
    expect(translate(`select '12'::int64 as x, n::string as y from events`).columns.map((c) => c.type.kind)).toEqual(['int64', 'string']);
  });

  it('an unknown type name is a 400 naming it', () => {
    expect(() => translate('select id::uuid from events')).toThrow(/unknown type uuid in a :: cast/);
    expect(() => translate('select id::widget from events')).toThrow(/unknown type widget in a :: cast/);
  });
});

describe('IS [NOT] DISTINCT FROM: equality where NULL equals NULL', () => {
  it('compares NULLs as values', async () => {
    expect(
      await rows('select 1 is distinct from null as a, null is not distinct from null as b, 1 is distinct from 1 as c, 2 is not distinct from 3 as d'),
    ).toEqual([{ a: true, b: true, c: false, d: false }]);
    expect(await rows('select id from events where n is not distinct from null')).toEqual([{ id: 'ev3' }]);
    expect(await rows(`select id from events where event_message is distinct from 'request' order by id`)).toEqual([{ id: 'ev1' }, { id: 'ev3' }]);
  });

  it('needs operands of one type', () => {
    expect(() => translate(`select n is distinct from 'x' from events`)).toThrow(/No matching signature/);
  });
});

describe('GROUP BY ALL groups by the select items that hold no aggregate or window call', () => {
  it('infers the keys, leaving out aggregates and constants', async () => {
    expect(await rows('select level, count(*) as c, 7 as k from events group by all order by level')).toEqual([
      { level: 'error', c: '1', k: '7' },
      { level: 'info', c: '2', k: '7' },
    ]);
    expect(await rows('select upper(level) as l, max(n) + 1 as m from events group by all order by l')).toEqual([
      { l: 'ERROR', m: null },
      { l: 'INFO', m: '3' },
    ]);
  });

  it('an item with only constants and aggregates is one group, even over no rows', async () => {
    expect(await rows(`select 'x' as x, count(*) as c from events where false group by all`)).toEqual([{ x: 'x', c: '0' }]);
  });

  it('refuses what it cannot infer', () => {
    expect(() => translate('select * from events group by all')).toThrow(/GROUP BY ALL with SELECT \*/);
    expect(() => translate('select 1 as one from events group by all')).toThrow(/GROUP BY ALL found no column/);
  });
});

describe('GROUP BY ROLLUP adds the subtotals of each prefix of its keys, with NULL in the rolled-up columns', () => {
  it('two keys: groups, subtotals per first key, grand total', async () => {
    expect(await rows('select level, n, count(*) as c from events group by rollup (level, n) order by level nulls first, n nulls first, c')).toEqual([
      { level: null, n: null, c: '3' },
      { level: 'error', n: null, c: '1' },
      { level: 'error', n: null, c: '1' },
      { level: 'info', n: null, c: '2' },
      { level: 'info', n: '1', c: '1' },
      { level: 'info', n: '2', c: '1' },
    ]);
  });

  it('by ordinal and alias', async () => {
    expect(await rows('select upper(level) as l, count(*) as c from events group by rollup (l) order by 1')).toEqual([
      { l: null, c: '3' },
      { l: 'ERROR', c: '1' },
      { l: 'INFO', c: '2' },
    ]);
    expect(await rows('select level, count(*) as c from events group by rollup (1) order by 1')).toEqual([
      { level: null, c: '3' },
      { level: 'error', c: '1' },
      { level: 'info', c: '2' },
    ]);
  });

  it('refuses ROLLUP beside other keys and CUBE', () => {
    expect(() => translate('select level, n, count(*) from events group by level, rollup (n)')).toThrow(/ROLLUP beside other GROUP BY items/);
    expect(() => translate('select level, count(*) from events group by cube (level)')).toThrow(/CUBE/);
  });
});

describe("format elements strftime and strptime lack, with BigQuery's meaning", () => {
  const value = async (expr: string) => (await rows(`select ${expr} as v`))[0]!.v;
  const at = (text: string) => `timestamp '${text}+00'`;

  it.each([
    ['%C|%g|%Q|%E4Y', '2050-12-25 15:30:55', '20|50|4|2050'],
    ['%k|%l', '2050-12-25 15:30:55', '15| 3'],
    ['%k|%l|%P', '2050-12-25 03:30:55', ' 3| 3|am'],
    ['%l %P', '2050-12-25 00:05:00', '12 am'],
    ['%r', '2050-12-25 15:30:55', '03:30:55 PM'],
    ['%c', '2050-12-05 15:30:55', 'Mon Dec  5 15:30:55 2050'],
    ['%E1S|%E2S|%E4S|%E5S', '2050-12-25 15:30:55.123456', '55.1|55.12|55.1234|55.12345'],
    ['%E3S', '2050-12-25 15:30:55', '55.000'],
    ['a%tb%nc', '2050-12-25 15:30:55', 'a\tb\nc'],
    ['%E4Y', '0099-01-01 00:00:00', '0099'],
  ])('format_timestamp(%j)', async (format, timestamp, expected) => {
    expect(await value(`format_timestamp('${format}', ${at(timestamp)})`)).toBe(expected);
  });

  it('%Ez reads an offset or Z, with or without a fraction', async () => {
    const parsed = (text: string) => value(`unix_micros(parse_timestamp('%Y-%m-%dT%H:%M:%E*S%Ez', '${text}'))`);
    expect(await parsed('2024-01-01T00:00:00.000Z')).toBe('1704067200000000');
    expect(await parsed('2024-01-01T00:00:00Z')).toBe('1704067200000000');
    expect(await parsed('2024-01-01T01:00:00.5+01:00')).toBe('1704067200500000');
    expect(
      await value(`coalesce(parse_timestamp('%Y-%m-%dT%H:%M:%E*S%Ez', '2024-01-01T00:00:00.000Z'), timestamp '2000-01-01') = timestamp '2024-01-01'`),
    ).toBe(true);
  });

  it('parses %c, %e, %k, %l, %P, %r, %E4Y and %E#S', async () => {
    expect(await value(`unix_seconds(parse_timestamp('%c', 'Thu Dec 25 07:30:00 2008'))`)).toBe('1230190200');
    expect(await value(`parse_date('%A %b %e %Y', 'Thursday Dec  5 2008')`)).toBe('2008-12-05');
    expect(await value(`unix_seconds(parse_timestamp('%F %k:%M', '2008-12-25  7:30'))`)).toBe('1230190200');
    expect(await value(`unix_seconds(parse_timestamp('%F %l:%M %P', '2008-12-25  7:30 pm'))`)).toBe('1230233400');
    expect(await value(`unix_seconds(parse_timestamp('%E4Y-%m-%d %r', '2008-12-25 07:30:00 AM'))`)).toBe('1230190200');
    expect(await value(`unix_millis(parse_timestamp('%F %H:%M:%E2S', '2008-12-25 07:30:00.25'))`)).toBe('1230190200250');
  });

  it('keeps refusing what does not fix a date when parsing, naming the element', () => {
    expect(() => translate(`select parse_timestamp('%Y %Q', '2024 1') as t`)).toThrow(/format element %Q/);
    expect(() => translate(`select parse_timestamp('%Y-%m-%dT%T%Ez%Ez', 'x') as t`)).toThrow(/2 %Ez elements/);
  });
});

describe('literals: bytes and TIME supported, BIGNUMERIC refused with the reason', () => {
  it("a bytes literal is its UTF-8 bytes, escapes read by BigQuery's rules", async () => {
    expect(
      await rows(String.raw`select to_hex(b'abc') as a, to_hex(b'\x41\101\n\\') as b, to_hex(B"é") as c, length(b'''xyz''') as d, b'ab' = b'a\x62' as e`),
    ).toEqual([{ a: '616263', b: '41410a5c', c: 'c3a9', d: '3', e: true }]);
    expect(translate(`select b'x' as x`).columns[0]!.type).toEqual({ kind: 'bytes' });
  });

  it('refuses an escape BigQuery refuses in bytes', () => {
    expect(() => translate(String.raw`select b'\u0041' as x`)).toThrow(/invalid escape sequence \\u in a bytes literal/);
    expect(() => translate(String.raw`select b'\x4' as x`)).toThrow(/invalid escape sequence \\x/);
  });

  it('TIME literals compare and print as HH:MM:SS[.ffffff]', async () => {
    expect(await rows(`select time '12:34:56.5' as t, time '09:00:00' < time '10:00:00' as earlier`)).toEqual([{ t: '12:34:56.5', earlier: true }]);
    expect(() => translate(`select time 'noon' as t`)).toThrow(/invalid TIME literal "noon"/);
  });

  it('BIGNUMERIC literals are refused, saying why', () => {
    expect(() => translate(`select bignumeric '1.5' as x`)).toThrow(/BIGNUMERIC literals are not supported: the engine's decimals hold at most 38 digits/);
  });
});

describe('RIGHT and FULL JOIN ... USING: the bare column is COALESCE of both sides', () => {
  it("RIGHT JOIN keeps the right side's rows, named by their own value", async () => {
    expect(await rows('select id, name, e.id as left_id from events e right join other using (id) order by id')).toEqual([
      { id: 'ev1', name: 'one', left_id: 'ev1' },
      { id: 'ev3', name: 'three', left_id: 'ev3' },
      { id: 'zz', name: 'none', left_id: null },
    ]);
  });

  it("FULL JOIN keeps both sides' rows; SELECT * shows the merged column once", async () => {
    expect(await rows('select * except (event_message, n, level) from events full join other using (id) order by id')).toEqual([
      { id: 'ev1', name: 'one' },
      { id: 'ev2', name: null },
      { id: 'ev3', name: 'three' },
      { id: 'zz', name: 'none' },
    ]);
    expect(await rows(`select count(*) as c from events full join other using (id) where id in ('ev2', 'zz')`)).toEqual([{ c: '2' }]);
  });

  it('a qualified name still reads its own side, NULL where that side is missing', async () => {
    expect(await rows('select id, e.id as l, o.id as r from events e full join other o using (id) order by id')).toEqual([
      { id: 'ev1', l: 'ev1', r: 'ev1' },
      { id: 'ev2', l: 'ev2', r: null },
      { id: 'ev3', l: 'ev3', r: 'ev3' },
      { id: 'zz', l: null, r: 'zz' },
    ]);
    expect(await rows(`select o.* from events e join other o using (id) order by id`)).toEqual([
      { id: 'ev1', name: 'one' },
      { id: 'ev3', name: 'three' },
    ]);
  });

  it('a second USING join reads the merged column', async () => {
    const sql = "select id from events a full join other b using (id) full join (select 'zz' as id union all select 'yy') c using (id) order by id";
    expect(await rows(sql)).toEqual([{ id: 'ev1' }, { id: 'ev2' }, { id: 'ev3' }, { id: 'yy' }, { id: 'zz' }]);
  });
});
