import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.ts';
import { InvalidQuery } from '../../src/errors.ts';
import { duckDbTypeName } from '../../src/executor/engine/duckdb-type.ts';
import { translateToDuckDb } from '../../src/executor/duckdb-sql/index.ts';
import type { Expr, FromItem, Join, OrderItem, Query, Relation, Select, SelectItem } from '../../src/sql/syntax.ts';
import type { SqlType, TableSchema } from '../../src/sql/types.ts';

// ---- syntax tree builders (the parser front end is not there yet) ----
const id = (...path: string[]): Expr => ({ kind: 'identifier', path });
const str = (value: string): Expr => ({ kind: 'string', value });
const num = (text: string): Expr => ({ kind: 'number', text });
const nul: Expr = { kind: 'null' };
const call = (name: string, ...args: Expr[]): Expr => ({ kind: 'call', name, args, star: false, distinct: false });
const countStar: Expr = { kind: 'call', name: 'count', args: [], star: true, distinct: false };
const bin = (operator: Extract<Expr, { kind: 'binary' }>['operator'], left: Expr, right: Expr): Expr => ({ kind: 'binary', operator, left, right });
const part = (p: Extract<Expr, { kind: 'date_part' }>['part']): Expr => ({ kind: 'date_part', part: p });
const item = (expr: Expr, alias?: string): SelectItem => ({ kind: 'expression', expr, ...(alias ? { alias } : {}) });
const table = (name: string, alias?: string): Relation => ({ kind: 'table', name: [name], ...(alias ? { alias } : {}) });
const unnest = (array: Expr, alias?: string, offsetAlias?: string): Relation => ({
  kind: 'unnest',
  array,
  withOffset: offsetAlias !== undefined,
  ...(alias ? { alias } : {}),
  ...(offsetAlias ? { offsetAlias } : {}),
});
const cross = (relation: Relation): Join => ({ kind: 'cross', relation });
const asc = (expr: Expr): OrderItem => ({ expr, descending: false });
const desc = (expr: Expr): OrderItem => ({ expr, descending: true });
function select(parts: Partial<Select> & { items: SelectItem[] }): Select {
  return { kind: 'select', distinct: false, from: [], groupBy: [], ...parts };
}
function query(body: Select | Query['body'], rest: Partial<Query> = {}): Query {
  return { kind: 'query', with: [], body, orderBy: [], ...rest };
}
const from = (relation: Relation, ...joins: Join[]): FromItem[] => [{ relation, joins }];

// ---- tables and rows ----
const S: SqlType = { kind: 'string' };
const I: SqlType = { kind: 'int64' };
const F: SqlType = { kind: 'float64' };
const TS: SqlType = { kind: 'timestamp' };
const struct = (fields: Record<string, SqlType>): SqlType => ({ kind: 'struct', fields: Object.entries(fields).map(([name, type]) => ({ name, type })) });
const arr = (element: SqlType): SqlType => ({ kind: 'array', element });

const edgeMetadata = arr(
  struct({
    request: arr(struct({ method: S, path: S, cf: arr(struct({ country: S })) })),
    response: arr(struct({ status_code: I, origin_time: F })),
  }),
);
const edgeLogs: TableSchema = {
  name: 'edge_logs',
  columns: [
    { name: 'id', type: S },
    { name: 'timestamp', type: TS },
    { name: 'event_message', type: S },
    { name: 'metadata', type: edgeMetadata },
  ],
};
const fnMetadata = arr(struct({ function_id: S, level: S, event_type: S }));
const functionLogs: TableSchema = {
  name: 'function_logs',
  columns: [
    { name: 'id', type: S },
    { name: 'timestamp', type: TS },
    { name: 'event_message', type: S },
    { name: 'metadata', type: fnMetadata },
  ],
};

const at = (iso: string): number => Date.parse(iso) * 1000;
const req = (method: string, path: string, country: string | null = null) => ({ method, path, cf: country === null ? [] : [{ country }] });
const res = (status_code: number | null, origin_time = 10) => ({ status_code, origin_time });
const edgeRows = [
  {
    id: 'e1',
    timestamp: at('2024-01-01T00:00:10Z'),
    event_message: 'GET /rest/v1/a',
    metadata: [{ request: [req('GET', '/rest/v1/a', 'DE')], response: [res(200, 10)] }],
  },
  {
    id: 'e2',
    timestamp: at('2024-01-01T00:00:50Z'),
    event_message: 'POST /auth/v1/token',
    metadata: [{ request: [req('POST', '/auth/v1/token', 'FR')], response: [res(500, 30)] }],
  },
  {
    id: 'e3',
    timestamp: at('2024-01-01T00:01:05Z'),
    event_message: 'GET /rest/v1/b',
    metadata: [{ request: [req('GET', '/rest/v1/b')], response: [res(404, 20)] }],
  },
  // no response record: dropped by CROSS JOIN UNNEST(m.response), kept by LEFT JOIN
  { id: 'e4', timestamp: at('2023-12-31T17:00:00Z'), event_message: 'old', metadata: [{ request: [req('GET', '/old')], response: [] }] },
];
const functionRows = [
  { id: 'f1', timestamp: at('2024-01-01T00:00:01Z'), event_message: 'boom', metadata: [{ function_id: 'fa', level: 'error', event_type: 'log' }] },
  { id: 'f2', timestamp: at('2024-01-01T00:00:02Z'), event_message: 'fine', metadata: [{ function_id: 'fa', level: 'info', event_type: 'log' }] },
  { id: 'f3', timestamp: at('2024-01-01T00:00:03Z'), event_message: 'other', metadata: [{ function_id: 'fb', level: 'error', event_type: 'log' }] },
];

function valueSql(value: unknown, type: SqlType): string {
  if (value === null || value === undefined) return `CAST(NULL AS ${duckDbTypeName(type)})`;
  switch (type.kind) {
    case 'string':
      return `'${String(value).replaceAll("'", "''")}'`;
    case 'int64':
      return `CAST(${value} AS BIGINT)`;
    case 'float64':
      return `CAST(${value} AS DOUBLE)`;
    case 'timestamp':
      return `make_timestamptz(CAST(${value} AS BIGINT))`;
    case 'array':
      return `CAST([${(value as unknown[]).map((v) => valueSql(v, type.element)).join(', ')}] AS ${duckDbTypeName(type)})`;
    case 'struct':
      return `struct_pack(${type.fields.map((f) => `"${f.name}" := ${valueSql((value as Record<string, unknown>)[f.name], f.type)}`).join(', ')})`;
    default:
      throw new Error(`no test rows of ${type.kind}`);
  }
}

let connection: DuckDBConnection;
beforeAll(async () => {
  const instance = await DuckDBInstance.create(':memory:');
  connection = await instance.connect();
  await connection.run(`SET TimeZone='UTC'`);
  for (const [schema, rows] of [
    [edgeLogs, edgeRows],
    [functionLogs, functionRows],
  ] as const) {
    await connection.run(`CREATE TABLE "${schema.name}" (${schema.columns.map((c) => `"${c.name}" ${duckDbTypeName(c.type)}`).join(', ')})`);
    for (const row of rows as readonly Record<string, unknown>[]) {
      await connection.run(`INSERT INTO "${schema.name}" VALUES (${schema.columns.map((c) => valueSql(row[c.name], c.type)).join(', ')})`);
    }
  }
});
afterAll(() => connection?.closeSync());

const context = {
  tables: [edgeLogs, functionLogs],
  parameters: { project: 'default', iso_timestamp_start: '2024-01-01T00:00:00.000Z' },
  now: Date.parse('2024-01-01T01:00:00Z'),
  maxChars: loadConfig({}).SANDBOX_MAX_TRANSLATED_CHARS,
  maxValueBytes: loadConfig({}).SANDBOX_MAX_RESULT_BYTES,
};
const translate = (q: Query) => translateToDuckDb(q, context);

async function run(q: Query): Promise<Record<string, unknown>[]> {
  const { sql } = translate(q);
  const reader = await connection.runAndReadAll(sql);
  return reader.getRowObjectsJson() as Record<string, unknown>[];
}

/** Runs one expression over no table. */
async function evaluate(expr: Expr): Promise<unknown> {
  const rows = await run(query(select({ items: [item(expr, 'v')] })));
  return rows[0]!.v;
}

const edgeJoins = (alias = 't') =>
  from(
    table('edge_logs', alias),
    cross(unnest(id('metadata'), 'm')),
    cross(unnest(id('m', 'request'), 'request')),
    cross(unnest(id('m', 'response'), 'response')),
  );

describe('name resolution and unnest', () => {
  it('chart_edge: GROUP BY the select alias timestamp (not the raw column), count(case), timestamp vs string literal', async () => {
    const status = id('response', 'status_code');
    const q = query(
      select({
        items: [
          item(call('timestamp_trunc', id('t', 'timestamp'), part('minute')), 'timestamp'),
          item(call('count', { kind: 'case', whens: [{ when: bin('>=', status, num('500')), then: num('1') }] }), 'error_count'),
          item(
            call('count', { kind: 'case', whens: [{ when: bin('and', bin('>=', status, num('400')), bin('<', status, num('500'))), then: num('1') }] }),
            'warning_count',
          ),
        ],
        from: edgeJoins(),
        where: bin('>', id('t', 'timestamp'), str('2023-12-31T18:00:00.000Z')),
        groupBy: [id('timestamp')],
      }),
      { orderBy: [asc(id('timestamp'))] },
    );
    // e4 is before the bound; e1 and e2 share minute 00:00, e3 is in 00:01
    expect(await run(q)).toEqual([
      { timestamp: '2024-01-01 00:00:00+00', error_count: '1', warning_count: '0' },
      { timestamp: '2024-01-01 00:01:00+00', error_count: '0', warning_count: '1' },
    ]);
    expect(translate(q).columns).toEqual([
      { name: 'timestamp', type: TS },
      { name: 'error_count', type: I },
      { name: 'warning_count', type: I },
    ]);
  });

  it('a bare field name means the one unnested record that has it; group by two aliases', async () => {
    const q = query(
      select({
        items: [item(id('function_id')), item(countStar, 'count')],
        from: from(table('function_logs'), cross(unnest(id('metadata'), 'm'))),
        where: bin('=', id('level'), str('error')),
        groupBy: [id('function_id')],
      }),
      { orderBy: [asc(id('function_id'))] },
    );
    expect(await run(q)).toEqual([
      { function_id: 'fa', count: '1' },
      { function_id: 'fb', count: '1' },
    ]);
  });

  it('an unnest alias shadows the column of the same name (metadata.level is the record field)', async () => {
    const q = query(
      select({
        items: [item(id('id')), item(id('function_logs', 'timestamp')), item(id('metadata', 'level'))],
        from: from(table('function_logs'), cross(unnest(id('metadata'), 'metadata'))),
        where: bin('and', bin('=', id('metadata', 'level'), str('error')), bin('=', id('metadata', 'function_id'), str('fa'))),
      }),
      { orderBy: [desc(id('timestamp'))], limit: num('100') },
    );
    expect(await run(q)).toEqual([{ id: 'f1', timestamp: '2024-01-01 00:00:01+00', level: 'error' }]);
  });

  it('a field name two unnested records have is ambiguous', () => {
    const q = query(
      select({
        items: [item(id('function_id'))],
        from: from(table('function_logs'), cross(unnest(id('metadata'), 'a')), cross(unnest(id('metadata'), 'b'))),
      }),
    );
    expect(() => translate(q)).toThrow(/ambiguous/);
  });

  it('a field no scanned record has reads as NULL (the store is schemaless), and so does an array no record has', async () => {
    const missingField = query(
      select({ items: [item(id('m', 'nope')), item(id('nope_either'))], from: from(table('function_logs'), cross(unnest(id('metadata'), 'm'))) }),
    );
    expect(translate(missingField).columns.map((column) => column.type.kind)).toEqual(['unknown', 'unknown']);
    const rows = await run(missingField);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((row) => row.nope === null && row.nope_either === null)).toBe(true);
    const missingArray = query(
      select({ items: [item(id('x', 'y'))], from: from(table('function_logs'), cross(unnest(id('metadata'), 'm')), cross(unnest(id('m', 'nothing'), 'x'))) }),
    );
    expect(await run(missingArray)).toEqual([]);
    // a field of something that is not a record stays an error
    expect(() =>
      translate(query(select({ items: [item(id('m', 'level', 'x'))], from: from(table('function_logs'), cross(unnest(id('metadata'), 'm'))) }))),
    ).toThrow(InvalidQuery);
  });

  it('CROSS JOIN UNNEST drops an event with an empty array, LEFT JOIN UNNEST keeps it with NULLs', async () => {
    const items = [item(id('t', 'id')), item(id('r', 'status_code'))];
    const base = [cross(unnest(id('metadata'), 'm'))];
    const crossed = query(select({ items, from: from(table('edge_logs', 't'), ...base, cross(unnest(id('m', 'response'), 'r'))) }), {
      orderBy: [asc(id('id'))],
    });
    const left = query(select({ items, from: from(table('edge_logs', 't'), ...base, { kind: 'left', relation: unnest(id('m', 'response'), 'r') }) }), {
      orderBy: [asc(id('id'))],
    });
    expect((await run(crossed)).map((r) => r.id)).toEqual(['e1', 'e2', 'e3']);
    expect(await run(left)).toEqual([
      { id: 'e1', status_code: '200' },
      { id: 'e2', status_code: '500' },
      { id: 'e3', status_code: '404' },
      { id: 'e4', status_code: null },
    ]);
  });

  it('WITH OFFSET numbers elements from 0, and comma joins read as cross joins', async () => {
    const q = query(
      select({
        items: [item(id('x')), item(id('o'))],
        from: [{ relation: unnest({ kind: 'array', elements: [str('a'), str('b')] }, 'x', 'o'), joins: [] }],
      }),
      { orderBy: [asc(id('o'))] },
    );
    expect(await run(q)).toEqual([
      { x: 'a', o: '0' },
      { x: 'b', o: '1' },
    ]);
  });
});

describe('names and types of output columns', () => {
  it('implied names: last path identifier, f0_ f1_ for anonymous expressions', () => {
    const q = query(
      select({ items: [item(id('request', 'path')), item(num('1')), item(id('t', 'timestamp')), item(call('upper', str('a')))], from: edgeJoins() }),
    );
    expect(translate(q).columns.map((c) => c.name)).toEqual(['path', 'f0_', 'timestamp', 'f1_']);
  });

  it('duplicate output names are refused, as BigQuery does', () => {
    const q = query(select({ items: [item(id('t', 'id')), item(id('m', 'id'))], from: from(table('edge_logs', 't'), cross(unnest(id('metadata'), 'm'))) }));
    expect(() => translate(query(select({ items: [item(num('1'), 'a'), item(num('2'), 'A')] })))).toThrow(/Duplicate column names.*A/);
    expect(() => translate(q)).toThrow(/Duplicate column names.*id/);
  });

  it('cast(timestamp as datetime) is datetime; avg float64; count int64', () => {
    const q = query(
      select({
        items: [
          item({ kind: 'cast', safe: false, expr: id('t', 'timestamp'), type: 'DATETIME' }, 'timestamp'),
          item(call('avg', id('response', 'origin_time')), 'avg'),
          item(countStar, 'c'),
        ],
        from: edgeJoins(),
        groupBy: [num('1')],
      }),
    );
    expect(translate(q).columns.map((c) => c.type.kind)).toEqual(['datetime', 'float64', 'int64']);
  });
});

describe('printing is a security wall', () => {
  it('quotes identifiers and string literals, whatever they contain', () => {
    const { sql } = translate(query(select({ items: [item(str(`x'); DROP TABLE t; --`), 'a"b')] })));
    expect(sql).toBe(`SELECT 'x''); DROP TABLE t; --' AS "a""b"`);
  });

  it('parameters become string literals; a missing one is an error', async () => {
    expect(await evaluate({ kind: 'parameter', name: 'project' })).toBe('default');
    expect(() => translate(query(select({ items: [item({ kind: 'parameter', name: 'nope' })] })))).toThrow(/@nope has no value/);
  });

  it('a declared parameter is a literal of its type: INT64 (a LIMIT too), FLOAT64, BOOL, TIMESTAMP', async () => {
    const parameters = {
      n: { type: 'int64', text: '-3' },
      ratio: { type: 'float64', text: '-1.5e-1' },
      on: { type: 'bool', text: 'true' },
      since: { type: 'timestamp', text: '2024-01-01T00:00:01.123456789Z' },
      word: 'text',
    } as const;
    const typed = (q: Query) => translateToDuckDb(q, { ...context, parameters });
    const value = async (name: string) => {
      const reader = await connection.runAndReadAll(typed(query(select({ items: [item({ kind: 'parameter', name }, 'v')] }))).sql);
      return (reader.getRowObjectsJson() as Record<string, unknown>[])[0]!.v;
    };
    expect([await value('n'), await value('ratio'), await value('on')]).toEqual(['-3', -0.15, true]);
    expect(typed(query(select({ items: [item(bin('+', { kind: 'parameter', name: 'n' }, num('1')), 'v')] }))).columns[0]!.type).toEqual(I);
    expect(typed(query(select({ items: [item({ kind: 'parameter', name: 'since' }, 'v')] }))).columns[0]!.type).toEqual(TS);
    expect(await value('since')).toEqual(await evaluate({ kind: 'typed_literal', type: 'TIMESTAMP', value: '2024-01-01T00:00:01.123456Z' }));
    expect(() => typed(query(select({ items: [item(bin('=', { kind: 'parameter', name: 'n' }, str('x')))] })))).toThrow(/No matching signature/);
    const limited = (name: string) => typed(query(select({ items: [item(num('1'), 'v')] }), { limit: { kind: 'parameter', name } }));
    expect(() => limited('n')).toThrow(/LIMIT must not be negative, @n is -3/);
    expect(() => limited('word')).toThrow(/LIMIT @word must be a parameter declared as an integer/);
    expect(
      translateToDuckDb(query(select({ items: [item(num('1'), 'v')] }), { limit: { kind: 'parameter', name: 'n' } }), {
        ...context,
        parameters: { n: { type: 'int64', text: '2' } },
      }).sql,
    ).toMatch(/ LIMIT 2$/);
  });

  it('nesting forms that read an operand twice grows the text by the same amount at each level, not geometrically', async () => {
    const divisions = (depth: number): Expr => (depth === 0 ? num('1') : bin('/', num('1'), divisions(depth - 1)));
    const length = (depth: number) => translate(query(select({ items: [item(divisions(depth), 'v')] }))).sql.length;
    expect(length(40) - length(39)).toBe(length(39) - length(38));
    expect(await evaluate(divisions(40))).toBe(1);
  });

  it('a date part is looked up as data, not as an object property', () => {
    const diff = call('timestamp_diff', id('t', 'timestamp'), id('t', 'timestamp'), part('constructor' as Extract<Expr, { kind: 'date_part' }>['part']));
    expect(() => translate(query(select({ items: [item(diff)], from: from(table('edge_logs', 't')) })))).toThrow(/unsupported date part CONSTRUCTOR/);
  });
});

describe('BigQuery semantics on real DuckDB', () => {
  const cases: [string, Expr, unknown][] = [
    ['regexp_contains is a partial match', call('regexp_contains', str('/auth/v1'), str('auth')), true],
    ['contains_substr ignores case', call('contains_substr', str('Object NotFound'), str('notfound')), true],
    [
      'to_json_string writes compact JSON',
      call('to_json_string', {
        kind: 'struct',
        fields: [
          { expr: num('1'), name: 'a' },
          { expr: str('x'), name: 'b' },
        ],
      }),
      '{"a":1,"b":"x"}',
    ],
    ['regexp_extract returns the capture group', call('regexp_extract', str('id=42;'), str('id=(\\d+)')), '42'],
    ['regexp_extract without a match is NULL', call('regexp_extract', str('abc'), str('x')), null],
    ['json_value unquotes a scalar', call('json_value', str('{"a":{"b":"x"}}'), str('$.a.b')), 'x'],
    ['json_value of an object is NULL', call('json_value', str('{"a":{"b":"x"}}'), str('$.a')), null],
    ['json_value of text that is not JSON is NULL', call('json_value', str('plain text'), str('$.a')), null],
    ['concat with a NULL is NULL', call('concat', str('a'), nul), null],
    ['greatest with a NULL is NULL', call('greatest', num('1'), nul), null],
    ['safe_divide by zero is NULL', call('safe_divide', num('1'), num('0')), null],
    ['integer division gives FLOAT64', bin('/', num('7'), num('2')), 3.5],
    ['round is half away from zero', call('round', { kind: 'unary', operator: '-', operand: num('2.5') }), -3],
    ['cast float to int64 rounds half away from zero', { kind: 'cast', safe: false, expr: num('2.5'), type: 'INT64' }, '3'],
    ['safe_cast of a malformed int64 is NULL', { kind: 'cast', safe: true, expr: str('1.5'), type: 'INT64' }, null],
    ['substr with a negative start counts from the end', call('substr', str('hello'), { kind: 'unary', operator: '-', operand: num('3') }, num('2')), 'll'],
    ['safe_offset out of range is NULL', { kind: 'subscript', mode: 'safe_offset', expr: { kind: 'array', elements: [num('1')] }, index: num('1') }, null],
    ['offset is 0-based', { kind: 'subscript', mode: 'offset', expr: { kind: 'array', elements: [num('10'), num('20')] }, index: num('1') }, '20'],
    ['ordinal is 1-based', { kind: 'subscript', mode: 'ordinal', expr: { kind: 'array', elements: [num('10'), num('20')] }, index: num('1') }, '10'],
    [
      'timestamp_trunc to week starts on Sunday',
      call('timestamp_trunc', { kind: 'typed_literal', type: 'TIMESTAMP', value: '2024-01-03 10:00:00' }, part('week')),
      '2023-12-31 00:00:00+00',
    ],
    [
      'timestamp_diff truncates whole units',
      call(
        'timestamp_diff',
        { kind: 'typed_literal', type: 'TIMESTAMP', value: '2024-01-01 01:59:00' },
        { kind: 'typed_literal', type: 'TIMESTAMP', value: '2024-01-01 00:00:00' },
        part('hour'),
      ),
      '1',
    ],
    [
      'cast(timestamp as string) is BigQuery text',
      { kind: 'cast', safe: false, expr: { kind: 'typed_literal', type: 'TIMESTAMP', value: '2024-01-01 00:00:00.12' }, type: 'STRING' },
      '2024-01-01 00:00:00.120+00',
    ],
    [
      'format_timestamp %F %T %Ez',
      call('format_timestamp', str('%FT%T%Ez'), { kind: 'typed_literal', type: 'TIMESTAMP', value: '2024-01-02 03:04:05' }),
      '2024-01-02T03:04:05+00:00',
    ],
    ['current_timestamp is the request time', call('unix_micros', call('current_timestamp')), String(Date.parse('2024-01-01T01:00:00Z') * 1000)],
    [
      'to_json_string writes a TIMESTAMP in the JSON form',
      call('to_json_string', { kind: 'typed_literal', type: 'TIMESTAMP', value: '2017-06-24 01:00:00.5' }),
      '"2017-06-24T01:00:00.500Z"',
    ],
    [
      'to_json_string quotes an INT64 beyond 2^53, inside records and arrays too',
      call('to_json_string', {
        kind: 'struct',
        fields: [
          { expr: { kind: 'array', elements: [num('9007199254740993'), num('1')] }, name: 'a' },
          { expr: { kind: 'typed_literal', type: 'DATETIME', value: '2024-01-01 00:00:00' }, name: 'd' },
        ],
      }),
      '{"a":["9007199254740993",1],"d":"2024-01-01T00:00:00"}',
    ],
    [
      'to_json_string pretty-prints with two spaces',
      call('to_json_string', { kind: 'array', elements: [num('1')] }, { kind: 'boolean', value: true }),
      '[\n  1\n]',
    ],
    ['regexp_extract from a position, the Nth occurrence', call('regexp_extract', str('a1 b2 c3'), str('[a-z](\\d)'), num('2'), num('2')), '3'],
    ['regexp_extract past the last occurrence is NULL', call('regexp_extract', str('a1 b2'), str('[a-z]\\d'), num('1'), num('3')), null],
    ['trunc to digits', call('trunc', { kind: 'unary', operator: '-', operand: num('1.29') }, num('1')), -1.2],
    ['round half to even on NUMERIC', call('round', { kind: 'typed_literal', type: 'NUMERIC', value: '2.5' }, num('0'), str('ROUND_HALF_EVEN')), 2],
    ['timestamp of a civil text in a named zone', call('timestamp', str('2008-12-25 15:30:00'), str('America/Los_Angeles')), '2008-12-25 23:30:00+00'],
    [
      'timestamp of a text with its own offset keeps it',
      call('timestamp', str('2008-12-25 15:30:00+00'), str('America/Los_Angeles')),
      '2008-12-25 15:30:00+00',
    ],
    ['timestamp of a date text at an offset', call('timestamp', str('2008-12-25'), str('-08')), '2008-12-25 08:00:00+00'],
    [
      "timestamp_trunc on a zone's clock",
      call('timestamp_trunc', { kind: 'typed_literal', type: 'TIMESTAMP', value: '2017-11-06 00:00:00+12' }, part('day'), str('Pacific/Auckland')),
      '2017-11-05 11:00:00+00',
    ],
    [
      'datetime of a timestamp in a named zone',
      call('datetime', { kind: 'typed_literal', type: 'TIMESTAMP', value: '2008-12-25 05:30:00+00' }, str('America/Los_Angeles')),
      '2008-12-24 21:30:00',
    ],
    [
      'format_timestamp at an offset',
      call('format_timestamp', str('%F %H:%M'), { kind: 'typed_literal', type: 'TIMESTAMP', value: '2008-12-25 05:30:00+00' }, str('+05:30')),
      '2008-12-25 11:00',
    ],
    [
      'parse_timestamp in a named zone',
      call('unix_seconds', call('parse_timestamp', str('%Y-%m-%d %H:%M'), str('2020-01-01 10:00'), str('America/New_York'))),
      String(Date.parse('2020-01-01T15:00:00Z') / 1000),
    ],
    ['json_value reads a quoted name', call('json_value', str('{"a.b": {"c": "world"}}'), str('$."a.b".c')), 'world'],
    ['json_extract_scalar reads a bracketed name with a space', call('json_extract_scalar', str('{"a": [1, {"x y": "z"}]}'), str("$.a[1]['x y']")), 'z'],
    ['a quoted name is a name, not path syntax', call('json_query', str('{"a": {"b": 1}, "a.b": 2}'), str('$."a.b"')), '2'],
    ["a NULL argument takes the parameter's type (DuckDB could not pick epoch_us of an untyped NULL)", call('unix_seconds', nul), null],
    ['date_trunc to WEEK(MONDAY)', call('date_trunc', { kind: 'typed_literal', type: 'DATE', value: '2017-11-05' }, part('week(monday)')), '2017-10-30'],
    ['date_trunc to WEEK(SATURDAY)', call('date_trunc', { kind: 'typed_literal', type: 'DATE', value: '2017-11-05' }, part('week(saturday)')), '2017-11-04'],
    [
      'date_diff counts WEEK(MONDAY) starts',
      call(
        'date_diff',
        { kind: 'typed_literal', type: 'DATE', value: '2017-12-18' },
        { kind: 'typed_literal', type: 'DATE', value: '2017-12-17' },
        part('week(monday)'),
      ),
      '1',
    ],
    [
      'extract WEEK(MONDAY): days before the first Monday are week 0',
      { kind: 'extract', part: 'week(monday)', expr: { kind: 'typed_literal', type: 'DATE', value: '2017-11-05' } },
      '44',
    ],
    [
      "extract WEEK(TUESDAY) on the year's first Tuesday",
      { kind: 'extract', part: 'week(tuesday)', expr: { kind: 'typed_literal', type: 'DATE', value: '2017-01-03' } },
      '1',
    ],
    [
      "extract at a time zone reads the zone's clock",
      { kind: 'extract', part: 'hour', expr: { kind: 'typed_literal', type: 'TIMESTAMP', value: '2008-12-25 05:30:00+00' }, timeZone: 'America/New_York' },
      '0',
    ],
    ['concat casts its arguments to STRING', call('concat', str('x'), num('1'), num('1.5'), { kind: 'boolean', value: true }), 'x11.5true'],
  ];
  for (const [name, expr, expected] of cases) {
    it(name, async () => expect(await evaluate(expr)).toEqual(expected));
  }

  it('array_agg with ORDER BY and LIMIT keeps the first n; a NULL among them, and only among them, is an error', async () => {
    const aggregated = (elements: Expr[], order: OrderItem, limit: string) =>
      query(
        select({
          items: [item({ kind: 'call', name: 'array_agg', args: [id('x')], star: false, distinct: false, orderBy: [order], limit: num(limit) }, 'xs')],
          from: from(unnest({ kind: 'array', elements }, 'x')),
        }),
      );
    expect(await run(aggregated([num('3'), num('1'), num('2')], asc(id('x')), '2'))).toEqual([{ xs: ['1', '2'] }]);
    // descending puts NULL last, past the limit; ascending puts it first
    expect(await run(aggregated([num('2'), nul, num('1')], desc(id('x')), '2'))).toEqual([{ xs: ['2', '1'] }]);
    await expect(run(aggregated([num('2'), nul, num('1')], asc(id('x')), '2'))).rejects.toThrow(/null element/);
  });

  it('generate_timestamp_array steps from start to end, over a column and a subquery too; a zero interval is an error', async () => {
    const interval = (value: string, unit: 'day' | 'hour') => ({ kind: 'interval', value: num(value), unit }) as const;
    const array = (start: Expr, end: Expr, step = interval('1', 'day')) => call('generate_timestamp_array', start, end, step);
    const day = (d: string): Expr => ({ kind: 'typed_literal', type: 'TIMESTAMP', value: `2016-10-0${d} 00:00:00` });
    expect(await evaluate(array(day('5'), day('7')))).toEqual(['2016-10-05 00:00:00+00', '2016-10-06 00:00:00+00', '2016-10-07 00:00:00+00']);
    expect(await evaluate(array(day('7'), day('5')))).toEqual([]);
    expect(
      await evaluate(array(day('7'), day('5'), { kind: 'interval', value: { kind: 'unary', operator: '-', operand: num('1') }, unit: 'day' })),
    ).toHaveLength(3);
    const overRows = query(
      select({
        items: [
          item(
            array(
              id('timestamp'),
              {
                kind: 'subquery',
                query: query(select({ items: [item(id('timestamp'))], from: from(table('edge_logs')), where: bin('=', id('id'), str('e3')) })),
              },
              interval('1', 'hour'),
            ),
            'v',
          ),
        ],
        from: from(table('edge_logs')),
        where: bin('=', id('id'), str('e1')),
      }),
    );
    expect(await run(overRows)).toEqual([{ v: ['2024-01-01 00:00:10+00'] }]);
    await expect(evaluate(array(day('5'), day('7'), interval('0', 'day')))).rejects.toThrow(/interval cannot be 0/);
  });

  it('string_agg with LIMIT joins the first n values that are not NULL', async () => {
    const joinedFirst = (limit: string) =>
      query(
        select({
          items: [
            item(
              { kind: 'call', name: 'string_agg', args: [id('x'), str('&')], star: false, distinct: false, orderBy: [asc(id('x'))], limit: num(limit) },
              'v',
            ),
          ],
          from: from(unnest({ kind: 'array', elements: [str('b'), nul, str('a'), str('c')] }, 'x')),
        }),
      );
    expect(await run(joinedFirst('2'))).toEqual([{ v: 'a&b' }]);
  });

  it('regexp_extract refuses a position or occurrence below 1, as BigQuery', async () => {
    await expect(evaluate(call('regexp_extract', str('a'), str('a'), num('0')))).rejects.toThrow(/position must be positive/);
    await expect(evaluate(call('regexp_extract', str('a'), str('a'), num('1'), num('0')))).rejects.toThrow(/occurrence must be positive/);
  });

  it('a time zone must be one the zone database knows, and zone elements are written for UTC only', () => {
    const sql = (expr: Expr) => () => translate(query(select({ items: [item(expr, 'v')] })));
    const ts = { kind: 'typed_literal', type: 'TIMESTAMP', value: '2008-12-25 05:30:00+00' } as const;
    expect(sql(call('date', ts, str('Nowhere/Special')))).toThrow(/unknown time zone "Nowhere\/Special"/);
    expect(sql(call('format_timestamp', str('%H %Z'), ts, str('America/Los_Angeles')))).toThrow(/zone elements/);
    expect(sql(call('date', { kind: 'typed_literal', type: 'DATE', value: '2008-12-25' }, str('America/Los_Angeles')))).toThrow(
      /applies to a TIMESTAMP, not DATE/,
    );
  });

  it('each JSON function takes its own JSONPath escape, and nothing beyond names and indexes', () => {
    const sql = (expr: Expr) => () => translate(query(select({ items: [item(expr, 'v')] })));
    expect(sql(call('json_value', str('{}'), str("$['a.b']")))).toThrow(/JSONPath "\$\['a.b'\]" is not supported .*\$\."a\.b"/);
    expect(sql(call('json_extract', str('{}'), str('$."a.b"')))).toThrow(/JSONPath .* is not supported .*\$\['a\.b'\]/);
    expect(sql(call('json_query', str('{}'), str('$.a[*]')))).toThrow(/not supported/);
    expect(sql(call('json_query', str('{}'), str('$."a\\"b"')))).toThrow(/not supported/);
  });

  it('a rounding mode is for NUMERIC only and must be one BigQuery knows', () => {
    const rounded = (value: Expr, mode: string) => () => translate(query(select({ items: [item(call('round', value, num('0'), str(mode)), 'v')] })));
    expect(rounded(num('2.5'), 'ROUND_HALF_EVEN')).toThrow(/NUMERIC only, not FLOAT64/);
    expect(rounded({ kind: 'typed_literal', type: 'NUMERIC', value: '2.5' }, 'ROUND_UP')).toThrow(/unknown rounding mode "ROUND_UP"/);
  });

  it('OFFSET out of range is an error', async () => {
    await expect(evaluate({ kind: 'subscript', mode: 'offset', expr: { kind: 'array', elements: [num('1')] }, index: num('1') })).rejects.toThrow(
      /out of bounds/,
    );
  });

  it('division by zero is an error', async () => {
    await expect(evaluate(bin('/', num('1'), num('0')))).rejects.toThrow(/division by zero/);
  });

  it('approx_quantiles returns N+1 values from min to max', async () => {
    const q = query(
      select({
        items: [
          item({ kind: 'subscript', mode: 'offset', expr: call('approx_quantiles', id('response', 'origin_time'), num('2')), index: num('2') }, 'p100'),
          item(call('approx_quantiles', id('response', 'origin_time'), num('2')), 'q'),
        ],
        from: edgeJoins(),
      }),
    );
    expect(await run(q)).toEqual([{ p100: 30, q: [10, 20, 30] }]);
  });

  it('UNION ALL takes names from the first query, by position', async () => {
    const q = query(
      {
        kind: 'set_operation',
        operator: 'union_all',
        left: select({ items: [item(str('a'), 'x'), item(nul, 'y')] }),
        right: select({ items: [item(str('b'), 'other'), item(num('2'))] }),
      },
      { orderBy: [asc(id('x'))] },
    );
    expect(await run(q)).toEqual([
      { x: 'a', y: null },
      { x: 'b', y: '2' },
    ]);
    expect(translate(q).columns).toEqual([
      { name: 'x', type: S },
      { name: 'y', type: I },
    ]);
  });

  it('ORDER BY prints BigQuery NULL ordering explicitly', () => {
    const { sql } = translate(
      query(select({ items: [item(id('t', 'id'))], from: from(table('edge_logs', 't')) }), { orderBy: [asc(id('id')), desc(id('t', 'timestamp'))] }),
    );
    expect(sql).toMatch(/ORDER BY 1 ASC NULLS FIRST, "t"\."timestamp" DESC NULLS LAST$/);
  });

  it('comparing a string column with a number is a type error, not a silent cast', () => {
    expect(() => translate(query(select({ items: [item(bin('=', id('t', 'id'), num('1')))], from: from(table('edge_logs', 't')) })))).toThrow(
      /No matching signature/,
    );
  });
});
