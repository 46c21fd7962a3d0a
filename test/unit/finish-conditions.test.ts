import { beforeAll, describe, expect, it } from 'vitest';
import { compileCondition, DECLINED, type ValueReader } from '../../src/executor/finish-conditions.ts';
import { finishInService } from '../../src/executor/service-finish.ts';
import { fieldCatalog } from '../../src/planner/field-catalog.ts';
import type { FinishCondition, ValuePath } from '../../src/planner/plan.ts';
import { finishCondition } from '../../src/planner/sandbox/finish-conditions.ts';
import { logsAllParseOptions, planLogsAllSql } from '../support/sandbox-plan.ts';
import { initSqlParser, parseSandboxQuery } from '../../src/sql/index.ts';
import type { Expr } from '../../src/sql/syntax.ts';
import type { SqlType } from '../../src/sql/types.ts';

/** The WHERE of a query over edge_logs. */
function where(condition: string): Expr {
  const query = parseSandboxQuery(`select id from edge_logs where ${condition}`, logsAllParseOptions);
  if (query.body.kind !== 'select' || !query.body.where) throw new Error('no WHERE');
  return query.body.where;
}

/** Every identifier as a column path: its first name the column, the rest record fields. */
const columns = (expr: Expr): ValuePath | undefined =>
  expr.kind === 'identifier' ? { from: 'column', column: expr.path[0]!, fields: expr.path.slice(1) } : undefined;

const column = (name: string) => ({ value: { from: 'column' as const, column: name, fields: [] } });

beforeAll(async () => {
  await initSqlParser();
});

describe('which WHERE conditions the service evaluates', () => {
  it('comparisons with literals, either side, BETWEEN and IN as their comparisons, NOT, IS NULL', () => {
    expect(finishCondition(where("404 <= cast(status as int64) and not (level = 'error') or level is null"), columns)).toEqual({
      kind: 'or',
      operands: [
        {
          kind: 'and',
          operands: [
            { kind: 'compare', operator: '>=', left: { ...column('status'), cast: 'int64' }, right: 404 },
            { kind: 'not', operand: { kind: 'compare', operator: '=', left: column('level'), right: 'error' } },
          ],
        },
        { kind: 'is_null', operand: column('level') },
      ],
    });
    expect(finishCondition(where('n not between -1 and 2.5'), columns)).toEqual({
      kind: 'not',
      operand: {
        kind: 'and',
        operands: [
          { kind: 'compare', operator: '>=', left: column('n'), right: -1 },
          { kind: 'compare', operator: '<=', left: column('n'), right: 2.5 },
        ],
      },
    });
    expect(finishCondition(where('flag in (true, false)'), columns)).toEqual({
      kind: 'or',
      operands: [
        { kind: 'compare', operator: '=', left: column('flag'), right: true },
        { kind: 'compare', operator: '=', left: column('flag'), right: false },
      ],
    });
  });

  it('text matches: REGEXP_CONTAINS of plain text, LIKE with % only', () => {
    expect(finishCondition(where("regexp_contains(event_message, '3f2a-7c1e')"), columns)).toEqual({
      kind: 'contains',
      operand: column('event_message'),
      text: '3f2a-7c1e',
    });
    expect(finishCondition(where("level not like 'e%r%'"), columns)).toEqual({
      kind: 'not',
      operand: { kind: 'like', operand: column('level'), pieces: ['e', 'r', ''] },
    });
  });

  it.each([
    ['a regexp with a metacharacter', "regexp_contains(level, 'e.r')"],
    ['an anchored regexp', "regexp_contains(level, '^e')"],
    ['LIKE with _', "level like 'e_r'"],
    ['LIKE with an escape', "level like 'e\\\\%'"],
    ['a NULL literal', 'level = null'],
    ['an integer past 2^53', 'n = 9007199254740993'],
    ['a parameter', 'level = @project'],
    ['SAFE_CAST (NULL where CAST fails)', 'safe_cast(status as int64) = 1'],
    ['a CAST to another type', 'cast(status as float64) = 1'],
    ['IS TRUE', '(n > 1) is true'],
    ['a computed value', 'upper(level) = "E"'],
    ['two columns', 'level = status'],
    ['one part of an AND', "level = 'a' and upper(level) = 'A'"],
  ])('%s is left to the engine', (_, condition) => {
    expect(finishCondition(where(condition), columns)).toBeUndefined();
  });
});

const catalog = fieldCatalog({ id: 'keyword', project: 'keyword', 'metadata.status': 'keyword', 'metadata.level': 'keyword' });
function plan(sql: string) {
  return planLogsAllSql(sql, catalog);
}

describe('the planner leaves the conditions the store did not apply exactly to the service', () => {
  const auth =
    "select id, m.status from auth_logs cross join unnest(metadata) as m where regexp_contains(event_message, 'abc') and id != 'x' and " +
    '(cast(m.status as int64) between 400 and 499 or cast(m.status as int64) between 500 and 599) order by timestamp desc limit 5';

  // without its LIMIT, so the store's filter is not split by the events' shape (see the next test)
  const unlimited = auth.replace(' limit 5', '');

  it('the auth panel query without a limit: all its events in scope read, the text match and the status ranges checked per row', () => {
    const planned = plan(unlimited);
    const scan = planned.scans[0]!;
    expect(scan.kind === 'events' && scan.take).toEqual({ kind: 'all' });
    const where = planned.residual?.finish?.where;
    // the id condition is the store's filter exactly, for every row of an event: not evaluated again
    expect(where?.map((condition) => condition.kind)).toEqual(['contains', 'or']);
  });

  it('with its limit: the limit taken among the events the store decides exactly, the others read whole for the engine', () => {
    const planned = plan(auth);
    const scan = planned.scans[0]!;
    expect(scan.kind === 'events' && scan.take).toMatchObject({ kind: 'limit', rows: 5, irregular: {} });
    expect(planned.residual?.finish).toBeDefined();
    expect(planned.residual?.finish?.where).toBeUndefined();
  });

  it('a condition the service does not evaluate leaves the query to the engine', () => {
    expect(plan(unlimited.replace("'abc'", "'a.c'")).residual?.finish).toBeUndefined();
  });

  it('a WHERE the store applies exactly needs no condition in the service', () => {
    const planned = plan("select id from auth_logs where id = 'x' order by timestamp desc limit 5");
    expect(planned.residual?.finish).toBeDefined();
    expect(planned.residual?.finish?.where).toBeUndefined();
  });
});

const TYPES: Record<string, SqlType> = {
  text: { kind: 'string' },
  count: { kind: 'int64' },
  ratio: { kind: 'float64' },
  flag: { kind: 'bool' },
  absent: { kind: 'unknown' },
  at: { kind: 'timestamp' },
  record: { kind: 'struct', fields: [{ name: 'a', type: { kind: 'int64' } }] },
};

/** Rows whose values are read as they are, typed by TYPES. */
function read(path: ValuePath): ValueReader | undefined {
  if (path.from !== 'column') return undefined;
  const type = TYPES[path.column];
  return type && { type, value: (row) => row[path.column] ?? null };
}

function truth(condition: FinishCondition, row: Record<string, unknown>) {
  const compiled = compileCondition(condition, read);
  if (!compiled) throw new Error('not compiled');
  return compiled(row, []);
}

const compare = (operator: '=' | '<' | '>=' | '!=', name: string, right: string | number | boolean, cast?: 'int64'): FinishCondition => ({
  kind: 'compare',
  operator,
  left: { value: { from: 'column', column: name, fields: [] }, ...(cast ? { cast } : {}) },
  right,
});

describe('the service evaluates conditions as the engine does', () => {
  it("SQL's three-valued logic: NULL compares as NULL, AND and OR decided by a FALSE or a TRUE beside a NULL", () => {
    const isA = compare('=', 'text', 'a');
    expect(truth(isA, { text: null })).toBeNull();
    expect(truth({ kind: 'not', operand: isA }, { text: null })).toBeNull();
    expect(truth({ kind: 'and', operands: [isA, compare('=', 'count', 1)] }, { text: null, count: 2 })).toBe(false);
    expect(truth({ kind: 'and', operands: [isA, compare('=', 'count', 1)] }, { text: null, count: 1 })).toBeNull();
    expect(truth({ kind: 'or', operands: [isA, compare('=', 'count', 1)] }, { text: null, count: 1 })).toBe(true);
    expect(truth({ kind: 'or', operands: [isA, compare('=', 'count', 1)] }, { text: null, count: 2 })).toBeNull();
    expect(truth({ kind: 'is_null', operand: { value: { from: 'column', column: 'text', fields: [] } } }, { text: null })).toBe(true);
    // a column no row holds is NULL, whatever it is compared with
    expect(truth(compare('=', 'absent', 1), {})).toBeNull();
  });

  it('text compares by its UTF-8 bytes, numbers by value, FALSE before TRUE', () => {
    // U+FF5E is one UTF-16 unit above the surrogates of U+1F600, but below it in UTF-8
    expect(truth(compare('<', 'text', '\u{1F600}'), { text: '\uFF5E' })).toBe(true);
    expect(truth(compare('>=', 'ratio', 2), { ratio: 2.5 })).toBe(true);
    expect(truth(compare('=', 'count', 2.5), { count: 2 })).toBe(false);
    expect(truth(compare('<', 'flag', true), { flag: false })).toBe(true);
  });

  it('CAST of text to INT64: decimal digits with a sign or leading zeros are read; any other text declines, for the engine to fail or read', () => {
    expect(truth(compare('=', 'text', 404, 'int64'), { text: '0404' })).toBe(true);
    expect(truth(compare('=', 'text', 503, 'int64'), { text: '+503' })).toBe(true);
    expect(truth(compare('=', 'text', 0, 'int64'), { text: '-0' })).toBe(true);
    expect(truth(compare('=', 'text', 1, 'int64'), { text: null })).toBeNull();
    for (const text of [' 500', '0x1F4', '4.0', 'abc', '', '1234567890123456'])
      expect(truth(compare('=', 'text', 500, 'int64'), { text }), JSON.stringify(text)).toBe(DECLINED);
    // even where the other side of an AND is already FALSE: the engine may evaluate the cast, and fail
    const both: FinishCondition = { kind: 'and', operands: [compare('=', 'count', 1), compare('=', 'text', 500, 'int64')] };
    expect(truth(both, { count: 2, text: 'abc' })).toBe(DECLINED);
  });

  it('matches plain text anywhere, and LIKE by its pieces in order', () => {
    const operand = { value: { from: 'column' as const, column: 'text', fields: [] } };
    expect(truth({ kind: 'contains', operand, text: 'b-c' }, { text: 'ab-cd' })).toBe(true);
    expect(truth({ kind: 'contains', operand, text: '' }, { text: '' })).toBe(true);
    const like = (pieces: string[], text: string) => truth({ kind: 'like', operand, pieces }, { text });
    expect(like(['a', ''], 'abc')).toBe(true);
    expect(like(['', 'c'], 'abc')).toBe(true);
    expect(like(['a', 'a'], 'a')).toBe(false);
    expect(like(['a', 'b', 'b'], 'ab')).toBe(false);
    expect(like(['a', 'b', 'c'], 'axbyc')).toBe(true);
    expect(like(['abc'], 'abc')).toBe(true);
    expect(like(['abc'], 'abcd')).toBe(false);
  });

  it('declines values of types it does not compare with the literal exactly', () => {
    expect(compileCondition(compare('=', 'at', '2024-01-01'), read)).toBeUndefined();
    expect(compileCondition(compare('=', 'count', 'a'), read)).toBeUndefined();
    expect(compileCondition(compare('=', 'text', 1), read)).toBeUndefined();
    expect(compileCondition(compare('=', 'ratio', 1, 'int64'), read)).toBeUndefined();
    expect(compileCondition({ kind: 'contains', operand: { value: { from: 'column', column: 'count', fields: [] } }, text: '1' }, read)).toBeUndefined();
    expect(compileCondition({ kind: 'is_null', operand: { value: { from: 'column', column: 'record', fields: [] } } }, read)).toBeUndefined();
  });
});

describe('the service finish applies its conditions before ORDER BY and LIMIT', () => {
  const STRING: SqlType = { kind: 'string' };
  const finish = (rows: Record<string, unknown>[]) =>
    finishInService({
      finish: {
        table: 't',
        unnests: [],
        columns: [{ name: 'id', value: { from: 'column', column: 'id', fields: [] } }],
        order: [{ value: { from: 'column', column: 'timestamp', fields: [] }, descending: true, nulls: 'last' }],
        limit: 2,
        offset: 0,
        where: [compare('>=', 'status', 500, 'int64')],
      },
      schema: {
        name: 't',
        columns: [
          { name: 'id', type: STRING },
          { name: 'timestamp', type: { kind: 'timestamp' } },
          { name: 'status', type: STRING },
        ],
      },
      rows,
      supersetRows: 0,
      columns: [{ name: 'id', type: STRING }],
      maxRows: 100,
      maxBytes: 1_000_000,
    });

  it('answers the newest rows that pass', () => {
    const rows = [
      { id: 'a', timestamp: 4, status: '200' },
      { id: 'b', timestamp: 3, status: '500' },
      { id: 'c', timestamp: 2, status: null },
      { id: 'd', timestamp: 1, status: '503' },
      { id: 'e', timestamp: 0, status: '599' },
    ];
    expect(finish(rows)).toEqual([{ id: 'b' }, { id: 'd' }]);
  });

  it('leaves the rows to the engine when one holds text its CAST may refuse', () => {
    expect(
      finish([
        { id: 'a', timestamp: 4, status: '500' },
        { id: 'b', timestamp: 3, status: 'n/a' },
      ]),
    ).toBeUndefined();
  });
});
