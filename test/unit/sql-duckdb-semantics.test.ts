/**
 * BigQuery rules the printer must keep, checked on a real in-memory DuckDB. Queries are written as
 * text and parsed by the sandbox front end; expected rows are worked out by hand from the rows
 * below with BigQuery's semantics.
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
const record = (fields: Record<string, SqlType>): SqlType => ({ kind: 'struct', fields: Object.entries(fields).map(([name, type]) => ({ name, type })) });

const TABLES: TableSchema[] = [
  {
    name: 'events',
    columns: [
      { name: 'id', type: S },
      { name: 'timestamp', type: { kind: 'timestamp' } },
      { name: 'event_message', type: S },
      { name: 'n', type: I },
      {
        name: 'metadata',
        type: {
          kind: 'array',
          element: record({ level: S, tags: { kind: 'array', element: S }, request: { kind: 'array', element: record({ path: S, status: I }) } }),
        },
      },
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
  events: [
    // ev1 is on a Sunday
    `('ev1', TIMESTAMPTZ '2024-01-07 10:00:00+00', 'alpha', 1, [{'level': 'info', 'tags': ['a', 'b'], 'request': [{'path': '/x', 'status': 200}, {'path': '/y', 'status': 500}]}])`,
    `('ev2', TIMESTAMPTZ '2024-01-08 11:30:00+00', 'beta', 2, [{'level': 'error', 'tags': [], 'request': []}])`,
    `('ev3', TIMESTAMPTZ '2024-01-09 12:00:00+00', NULL, NULL, [{'level': NULL, 'tags': ['c'], 'request': [{'path': '/x', 'status': 404}]}])`,
  ],
  other: [`('ev1', 'one')`, `('ev3', 'three')`, `('zz', 'none')`],
};

let connection: DuckDBConnection;
beforeAll(async () => {
  await initSqlParser();
  connection = await testDuckDb(TABLES, (table) => ROWS[table.name as keyof typeof ROWS]);
});
afterAll(() => connection?.closeSync());

const NOW = Date.parse('2024-02-01T00:00:00Z');

function translate(sql: string, parameters: Record<string, string> = {}) {
  const tree = parseSandboxQuery(sql, { allowedTables: TABLES.map((t) => t.name), parameterNames: Object.keys(parameters) });
  return translateToDuckDb(tree, {
    tables: TABLES,
    parameters,
    now: NOW,
    maxChars: loadConfig({}).SANDBOX_MAX_TRANSLATED_CHARS,
    maxValueBytes: loadConfig({}).SANDBOX_MAX_RESULT_BYTES,
  });
}

async function rows(sql: string, parameters: Record<string, string> = {}): Promise<Record<string, unknown>[]> {
  const reader = await connection.runAndReadAll(translate(sql, parameters).sql);
  return reader.getRowObjectsJson() as Record<string, unknown>[];
}

/** The single value of `select <expr> as v`. */
async function value(expr: string): Promise<unknown> {
  return (await rows(`select ${expr} as v`))[0]!.v;
}

describe('query shapes', () => {
  it('window functions with QUALIFY on a select alias', async () => {
    expect(await rows('select id, row_number() over (order by timestamp desc) as rn from events qualify rn <= 2 order by rn')).toEqual([
      { id: 'ev3', rn: '1' },
      { id: 'ev2', rn: '2' },
    ]);
  });

  it('LAG over a partition of unnested records', async () => {
    const sql =
      'select r.path, lag(r.status) over (partition by r.path order by e.timestamp) as prev from events e cross join unnest(e.metadata) as m cross join unnest(m.request) as r order by e.timestamp, path';
    expect(await rows(sql)).toEqual([
      { path: '/x', prev: null },
      { path: '/y', prev: null },
      { path: '/x', prev: '200' },
    ]);
  });

  it('a correlated EXISTS over an unnest of the outer row', async () => {
    expect(await rows(`select id from events e where exists (select 1 from unnest(e.metadata) as m where m.level = 'error')`)).toEqual([{ id: 'ev2' }]);
  });

  it('IN (subquery) and IN UNNEST(array)', async () => {
    expect(await rows('select id from events where id in (select id from other) order by id')).toEqual([{ id: 'ev1' }, { id: 'ev3' }]);
    expect(await rows(`select id from events cross join unnest(metadata) as m where 'c' in unnest(m.tags)`)).toEqual([{ id: 'ev3' }]);
  });

  it('SELECT * EXCEPT, t.* over a table and over an unnested record', async () => {
    expect(translate('select * except (metadata, event_message) from events').columns.map((c) => c.name)).toEqual(['id', 'timestamp', 'n']);
    expect(await rows('select o.* from other o order by id limit 1')).toEqual([{ id: 'ev1', name: 'one' }]);
    expect(await rows('select m.* except (request, tags) from events cross join unnest(metadata) as m order by level')).toEqual([
      { level: null },
      { level: 'error' },
      { level: 'info' },
    ]);
  });

  it('SELECT DISTINCT over comma joins of unnests', async () => {
    expect(await rows('select distinct r.path from events, unnest(metadata) as m, unnest(m.request) as r order by path')).toEqual([
      { path: '/x' },
      { path: '/y' },
    ]);
  });

  it('UNION DISTINCT, INTERSECT DISTINCT, EXCEPT DISTINCT', async () => {
    expect(await rows('select 1 as x union distinct select 1 union distinct select 2 order by x')).toEqual([{ x: '1' }, { x: '2' }]);
    expect(await rows('select id from events intersect distinct select id from other order by 1')).toEqual([{ id: 'ev1' }, { id: 'ev3' }]);
    expect(await rows('select id from events except distinct select id from other')).toEqual([{ id: 'ev2' }]);
  });

  it('a derived table and a scalar subquery', async () => {
    expect(await rows('select d.c, (select count(*) from other) as total from (select count(*) as c from events) d')).toEqual([{ c: '3', total: '3' }]);
  });

  it('LIMIT with OFFSET', async () => {
    expect(await rows('select id from events order by id limit 1 offset 1')).toEqual([{ id: 'ev2' }]);
  });

  it('GROUP BY an ordinal and HAVING on a select alias', async () => {
    expect(await rows('select m.level, count(*) as c from events, unnest(metadata) as m group by 1 having c >= 1 order by level nulls last')).toEqual([
      { level: 'error', c: '1' },
      { level: 'info', c: '1' },
      { level: null, c: '1' },
    ]);
  });

  it('ORDER BY puts NULLs first ascending and last descending, as BigQuery', async () => {
    expect((await rows('select n from events order by n')).map((r) => r.n)).toEqual([null, '1', '2']);
    expect((await rows('select n from events order by n desc')).map((r) => r.n)).toEqual(['2', '1', null]);
  });

  it('LEFT JOIN ... ON keeps unmatched rows', async () => {
    expect(await rows('select e.id, o.name from events e left join other o on e.id = o.id order by e.id')).toEqual([
      { id: 'ev1', name: 'one' },
      { id: 'ev2', name: null },
      { id: 'ev3', name: 'three' },
    ]);
  });

  it("JOIN ... USING: the bare column is the left side's, and SELECT * shows it once", async () => {
    expect(await rows('select id, name from events join other using (id) order by id')).toEqual([
      { id: 'ev1', name: 'one' },
      { id: 'ev3', name: 'three' },
    ]);
    expect(await rows('with j as (select * from other o1 join other o2 using (id)) select * except (name) from j order by id')).toEqual([
      { id: 'ev1' },
      { id: 'ev3' },
      { id: 'zz' },
    ]);
  });

  it('WITH: later CTEs read earlier ones', async () => {
    expect(await rows('with a as (select id from events where n is not null), b as (select count(*) as c from a) select c from b')).toEqual([{ c: '2' }]);
  });

  it('string_agg with ORDER BY, array_agg, any_value', async () => {
    expect(
      await rows(
        `select string_agg(id, ',' order by id desc) as s, array_length(array_agg(id)) as k, any_value(event_message) is not null or true as a from events`,
      ),
    ).toEqual([{ s: 'ev3,ev2,ev1', k: '3', a: true }]);
  });

  it('array_agg of a NULL is an error in BigQuery; IGNORE NULLS drops it', async () => {
    await expect(rows('select array_agg(n) as a from events')).rejects.toThrow(/null element/);
    expect(await rows('select array_agg(n ignore nulls) as a from events')).toEqual([{ a: ['1', '2'] }]);
  });

  it('a column two tables have is ambiguous', () => {
    expect(() => translate('select id from events, other')).toThrow(/Column name id is ambiguous/);
  });

  it('a parameter is a string literal, coerced when compared with a timestamp', async () => {
    expect(await rows('select id from events where timestamp >= @start order by id', { start: '2024-01-08T00:00:00.000Z' })).toEqual([
      { id: 'ev2' },
      { id: 'ev3' },
    ]);
  });
});

describe('functions', () => {
  const cases: [string, unknown][] = [
    [`split('a,b,,c')`, ['a', 'b', '', 'c']],
    [`strpos('hello', 'l')`, '3'],
    [`starts_with('hello', 'he')`, true],
    [`trim('  x  ')`, 'x'],
    [`replace('a-b-c', '-', '+')`, 'a+b+c'],
    [`length('héllo')`, '5'],
    [`upper('abc') || lower('DEF')`, 'ABCdef'],
    [`substr('hello', 2)`, 'ello'],
    [`mod(-7, 2)`, '-1'],
    [`div(-7, 2)`, '-3'],
    [`ifnull(null, 'x')`, 'x'],
    [`nullif(1, 1)`, null],
    [`if(1 < 2, 'yes', 'no')`, 'yes'],
    [`least(3, 1, 2)`, '1'],
    [`round(1.2345, 2)`, 1.23],
    [`unix_micros(timestamp_micros(1704067200000001))`, '1704067200000001'],
    [`timestamp_add(timestamp '2024-01-01 00:00:00+00', interval 90 minute)`, '2024-01-01 01:30:00+00'],
    [`timestamp_sub(timestamp '2024-01-01 00:00:00+00', interval 1 day)`, '2023-12-31 00:00:00+00'],
    [`timestamp '2024-01-01 00:00:00' + interval 1 hour`, '2024-01-01 01:00:00+00'],
    [`unix_micros(parse_timestamp('%Y-%m-%dT%H:%M:%E*SZ', '2024-01-01T00:00:00.5Z'))`, '1704067200500000'],
    [`unix_micros(parse_timestamp('%Y-%m-%dT%H:%M:%E*SZ', '2024-01-01T00:00:00Z'))`, '1704067200000000'],
    [`format_timestamp('%H:%M:%E*S', timestamp '2024-01-01 10:11:12.5')`, '10:11:12.5'],
    [`format_timestamp('%d/%m/%Y %a %b %j', timestamp '2024-01-07 00:00:00')`, '07/01/2024 Sun Jan 007'],
    [`cast('TRUE' as bool)`, true],
    [`safe_cast('yes' as bool)`, null],
    [`cast(timestamp '2024-01-01 00:00:00' as string)`, '2024-01-01 00:00:00+00'],
    [`cast(1.0 as string)`, '1'],
    [`timestamp_trunc(timestamp '2024-01-07 10:00:00', week)`, '2024-01-07 00:00:00+00'],
    [`timestamp_trunc(timestamp '2024-01-07 10:00:00', isoweek)`, '2024-01-01 00:00:00+00'],
    [`extract(dayofweek from timestamp '2024-01-07 10:00:00')`, '1'],
    [`extract(millisecond from timestamp '2024-01-07 10:00:05.123')`, '123'],
    [`json_query('{"a": {"b": 1}}', '$.a')`, '{"b":1}'],
    [`json_extract_scalar('{"a": 5}', '$.a')`, '5'],
    [`json_value_array('{"a": [1, "x"]}', '$.a')`, ['1', 'x']],
    [`date_add(date '2024-01-31', interval 1 month)`, '2024-02-29'],
    [`date_diff(date '2024-01-08', date '2024-01-06', week)`, '1'],
    [`current_date()`, '2024-02-01'],
    [`generate_array(1, 5, 2)`, ['1', '3', '5']],
    [`array_concat([1], [2, 3])`, ['1', '2', '3']],
    [`array_to_string(['a', null, 'b'], '-')`, 'a-b'],
    [`regexp_replace('aaa', 'a', 'b')`, 'bbb'],
    [`regexp_extract_all('a1b22', '[0-9]+')`, ['1', '22']],
    [`to_hex(md5('a'))`, '0cc175b9c0f1b6a831c399e269772661'],
    [`struct(1 as a, 'x' as b)`, { a: '1', b: 'x' }],
    [`[10, 20, 30][ordinal(3)]`, '30'],
    [`'x' like '\\\\%' or 'a%' like 'a\\\\%'`, true],
  ];
  for (const [expr, expected] of cases) {
    it(expr, async () => expect(await value(expr)).toEqual(expected));
  }

  it('INT64 overflow is an error', async () => {
    await expect(value('9223372036854775807 + 1')).rejects.toThrow(/[Oo]verflow/);
  });

  it('a malformed INT64 text is an error, where DuckDB would round it', async () => {
    await expect(value(`cast('1.5' as int64)`)).rejects.toThrow(/Bad int64 value: 1.5/);
  });

  it('a string is not silently compared with a number', () => {
    expect(() => translate(`select 1 from events where event_message = 1`)).toThrow(/No matching signature for operator = for argument types STRING, INT64/);
  });
});

describe('a value read several times is printed once', () => {
  // each argument below is more than a column or a literal, so the translation binds it once
  const cases: [string, unknown][] = [
    [`substr(substr(concat('ab', 'cdef'), 2), -2, 1)`, 'e'],
    [`substr(concat('a', null), 1)`, null],
    [`cast(concat('1', '2') as int64)`, '12'],
    [`safe_cast(concat('1', '.5') as int64)`, null],
    [`cast(concat('TR', 'UE') as bool)`, true],
    [`cast(timestamp_add(timestamp '2024-01-01 00:00:00.5', interval 1 second) as string)`, '2024-01-01 00:00:01.500+00'],
    [`format_timestamp('%e|%s|%E*S', timestamp_add(timestamp '2024-01-07 10:00:00.25', interval 1 second))`, ' 7|1704621601|01.25'],
    [`split(concat('a,', 'b'))[offset(1)]`, 'b'],
    [`split(concat('a,', 'b'))[safe_offset(5)]`, null],
    [`1 / (1 / (2 - 1))`, 1],
    [`mod(length(concat('abc', 'd')), 3)`, '1'],
    [`sqrt(length(concat('abcd', '')))`, 2],
    [`lpad(concat('a', 'b'), 4, concat('-', ''))`, '--ab'],
    [`repeat(concat('a', 'b'), length('xx'))`, 'abab'],
    [`greatest(concat('a', 'b'), 'aa', concat('b', ''))`, 'b'],
    [`replace(concat('a-b', ''), concat('-', ''), '+')`, 'a+b'],
    [`regexp_extract(concat('xab', 'c'), 'a(b)')`, 'b'],
    [`json_value(concat('{"a":', ' 5}'), '$.a')`, '5'],
    [`generate_array(length('a'), length('abc'))`, ['1', '2', '3']],
  ];
  for (const [expr, expected] of cases) {
    it(expr, async () => expect(await value(expr)).toEqual(expected));
  }

  it('grouped by, and ordered by, a bound expression', async () => {
    expect(await rows(`select substr(concat(event_message, 'x'), 2) as s, count(*) as n from events group by s order by s`)).toEqual([
      { s: null, n: '1' },
      { s: 'etax', n: '1' },
      { s: 'lphax', n: '1' },
    ]);
  });

  it("reading an enclosing query's column and an aggregate", async () => {
    const correlated = `select id, (select substr(concat(o.name, e.id), 2) from other o where o.id = e.id) as x from events e order by id`;
    expect(await rows(correlated)).toEqual([
      { id: 'ev1', x: 'neev1' },
      { id: 'ev2', x: null },
      { id: 'ev3', x: 'hreeev3' },
    ]);
    expect(await rows(`select substr(string_agg(id, ',' order by id), 2) as s from events`)).toEqual([{ s: 'v1,ev2,ev3' }]);
  });
});
