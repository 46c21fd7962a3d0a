import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { InvalidQuery, SandboxViolation, SqlSyntax, UnknownTable } from '../../src/errors.ts';
import { SANDBOX_FUNCTION_NAMES, initSqlParser, parseSandboxQuery, sandboxFunction, tableKey } from '../../src/sql/index.ts';
import { SOURCE_NAMES } from '../../shared/sources.ts';
import { parseStatements } from '../../src/sql/parse.ts';
import type { Expr, Query, Select } from '../../src/sql/syntax.ts';

const LOGS_ALL_TABLES = [...SOURCE_NAMES];
const LOGS_ALL_PARAMETERS = ['project', 'iso_timestamp_start', 'iso_timestamp_end'];

interface StudioQuery {
  id: string;
  cte: string;
  sql: string;
}
interface SandboxCase {
  id: string;
  sandboxed: boolean;
  cte_sql: string | null;
  query: string;
  expect: 'accept' | 'reject';
  reason: string | null;
}

const studioQueries = JSON.parse(readFileSync(new URL('../fixtures/examples/studio-queries.json', import.meta.url), 'utf8')) as StudioQuery[];
const sandboxCases = JSON.parse(readFileSync(new URL('../fixtures/examples/sandbox-cases.json', import.meta.url), 'utf8')) as SandboxCase[];

beforeAll(() => initSqlParser());

const logsAll = (sql: string) => parseSandboxQuery(sql, { allowedTables: LOGS_ALL_TABLES, parameterNames: LOGS_ALL_PARAMETERS });

function refusal(run: () => unknown): Error {
  try {
    run();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a refusal, but the query was accepted');
}

function firstSelect(query: Query): Select {
  if (query.body.kind !== 'select') throw new Error(`expected a SELECT, got ${query.body.kind}`);
  return query.body;
}

function selectedExpr(sql: string, index = 0): Expr {
  const item = firstSelect(logsAll(sql)).items[index];
  if (item?.kind !== 'expression') throw new Error('expected an expression item');
  return item.expr;
}

describe('studio queries (a real dashboard client)', () => {
  it.each(studioQueries.map((query) => [query.id, query] as const))('%s is accepted', (_id, query) => {
    // postgrest_logs is not one of logs.all's CTEs; this one query is given it as an extra table until the lead decides whether it aliases rest_api_logs.
    const allowedTables = query.cte === 'postgrest_logs' ? [...LOGS_ALL_TABLES, 'postgrest_logs'] : LOGS_ALL_TABLES;
    const tree = parseSandboxQuery(query.sql, { allowedTables, parameterNames: LOGS_ALL_PARAMETERS });
    expect(tree.kind).toBe('query');
  });

  it('without the extra name, postgrest_logs is an unknown table that lists the nine', () => {
    const query = studioQueries.find((candidate) => candidate.cte === 'postgrest_logs')!;
    const error = refusal(() => logsAll(query.sql));
    expect(error).toBeInstanceOf(UnknownTable);
    expect(error.message).toContain('"postgrest_logs"');
    for (const table of LOGS_ALL_TABLES) expect(error.message).toContain(table);
  });

  it('reads the chart query the way BigQuery does', () => {
    const chart = studioQueries.find((query) => query.id === 'chart_edge')!;
    const select = firstSelect(logsAll(chart.sql));
    // The trailing comma before FROM leaves exactly four columns.
    expect(select.items).toHaveLength(4);
    expect(select.items[0]).toMatchObject({
      alias: 'timestamp',
      expr: {
        kind: 'call',
        name: 'timestamp_trunc',
        args: [
          { kind: 'identifier', path: ['t', 'timestamp'] },
          { kind: 'date_part', part: 'minute' },
        ],
      },
    });
    expect(select.from[0]?.relation).toMatchObject({ kind: 'table', name: ['edge_logs'], alias: 't' });
    expect(select.from[0]?.joins.map((join) => [join.kind, join.relation.kind, join.relation.alias])).toEqual([
      ['cross', 'unnest', 'm'],
      ['cross', 'unnest', 'request'],
      ['cross', 'unnest', 'response'],
    ]);
    expect(select.where).toMatchObject({ kind: 'binary', operator: '>', right: { kind: 'string', value: '2023-12-31T18:00:00.000Z' } });
    expect(select.groupBy).toEqual([expect.objectContaining({ kind: 'identifier', path: ['timestamp'] })]);
  });

  it('keeps double-quoted text as a string literal', () => {
    const activeUsers = studioQueries.find((query) => query.id === 'auth_report_active_users')!;
    const count = firstSelect(logsAll(activeUsers.sql)).items[1];
    expect(count).toMatchObject({
      kind: 'expression',
      expr: {
        kind: 'call',
        name: 'count',
        distinct: true,
        args: [{ kind: 'call', name: 'json_value', args: [{}, { kind: 'string', value: '$.auth_event.actor_id' }] }],
      },
    });
  });

  it('reads union all inside a CTE and ORDER BY with LIMIT outside it', () => {
    const unified = studioQueries.find((query) => query.id === 'unified_logs_rows')!;
    const tree = logsAll(unified.sql);
    expect(tree.with.map((cte) => cte.name)).toEqual(['unified_logs']);
    expect(tree.with[0]?.query.body).toMatchObject({ kind: 'set_operation', operator: 'union_all' });
    expect(tree.orderBy.map((item) => item.descending)).toEqual([true, true]);
    expect(tree.limit).toMatchObject({ kind: 'number', text: '50' });
  });
});

describe('reference cases (Logflare)', () => {
  /** Where we deliberately differ from the reference, with the reason. */
  const deviations: Record<string, { error?: typeof UnknownTable | typeof SandboxViolation; why: string }> = {
    bq_reject_wildcard: { why: 'select * over a CTE is accepted: it returns the CTE columns' },
    bq_reject_qualified_wildcard: { why: 't.* over a CTE is accepted' },
    bq_reject_wildcard_in_subquery: { why: 'select * over a CTE is accepted' },
    bq_reject_wildcard_from_cte: { why: 'select * over a CTE is accepted' },
    bq_reject_sandbox_wildcard: { why: 'select * over a CTE is accepted' },
    bq_byob_source_named_like_dataset: { error: UnknownTable, why: 'dotted table names never name a CTE' },
    bq_expand_endpoint: { error: UnknownTable, why: 'no endpoint expansion: `my.endpoint` is a dotted name' },
    bq_params_6: { error: SandboxViolation, why: 'dotted function names are refused' },
  };

  /** sandboxed:false cases read the account's own sources; here those names play the endpoint's CTEs. */
  const ownSources = ['my_table', 'a', 'old', 'nested'];

  function tablesFor(testCase: SandboxCase): string[] {
    if (!testCase.sandboxed) return ownSources;
    if (testCase.cte_sql === null) return LOGS_ALL_TABLES;
    return parseSandboxQuery(testCase.cte_sql, { allowedTables: ownSources }).with.map((cte) => cte.name);
  }

  const run = (testCase: SandboxCase) => parseSandboxQuery(testCase.query, { allowedTables: tablesFor(testCase), parameterNames: ['test', 'testing', 'c'] });

  const matching = sandboxCases.filter((testCase) => !(testCase.id in deviations));

  it.each(matching.filter((testCase) => testCase.expect === 'accept').map((testCase) => [testCase.id, testCase] as const))('accepts %s', (_id, testCase) => {
    expect(run(testCase).kind).toBe('query');
  });

  it.each(matching.filter((testCase) => testCase.expect === 'reject').map((testCase) => [testCase.id, testCase] as const))(
    'rejects %s for the same reason',
    (_id, testCase) => {
      const error = refusal(() => run(testCase));
      const reason = testCase.reason!;
      if (reason.startsWith('Restricted function')) {
        expect(error).toBeInstanceOf(SandboxViolation);
        expect(error.message).toContain(reason.toLowerCase());
      } else if (reason === 'Only SELECT queries allowed') {
        expect(error).toBeInstanceOf(SandboxViolation);
        expect(error.message).toContain('only a single SELECT query is allowed');
      } else {
        expect(error).toBeInstanceOf(SqlSyntax);
        expect(error.message).toContain(reason);
      }
    },
  );

  it.each(Object.entries(deviations))('%s: our documented deviation (%o)', (id, deviation) => {
    const testCase = sandboxCases.find((candidate) => candidate.id === id)!;
    if (deviation.error) expect(refusal(() => run(testCase))).toBeInstanceOf(deviation.error);
    else expect(firstSelect(run(testCase)).items.some((item) => item.kind === 'wildcard') || JSON.stringify(run(testCase)).includes('"wildcard"')).toBe(true);
  });
});

describe('conversion', () => {
  it('turns every subscript form into a subscript node', () => {
    expect(selectedExpr('select m.request[offset(0)].path from edge_logs, unnest(metadata) m')).toMatchObject({
      kind: 'field',
      field: 'path',
      expr: { kind: 'subscript', mode: 'offset', expr: { kind: 'identifier', path: ['m', 'request'] }, index: { kind: 'number', text: '0' } },
    });
    expect(selectedExpr('select metadata[SAFE_OFFSET(2)] from edge_logs')).toMatchObject({ kind: 'subscript', mode: 'safe_offset' });
    expect(selectedExpr('select metadata[ordinal(1)] from edge_logs')).toMatchObject({ kind: 'subscript', mode: 'ordinal' });
    expect(selectedExpr('select metadata[safe_ordinal(1)] from edge_logs')).toMatchObject({ kind: 'subscript', mode: 'safe_ordinal' });
    expect(selectedExpr('select metadata[3] from edge_logs')).toMatchObject({ kind: 'subscript', mode: 'offset', index: { text: '3' } });
    expect(selectedExpr('select approx_quantiles(id, 100)[offset(50)] from edge_logs')).toMatchObject({
      kind: 'subscript',
      mode: 'offset',
      expr: { kind: 'call', name: 'approx_quantiles' },
    });
  });

  it('turns unit arguments and interval units into date parts', () => {
    expect(selectedExpr('select timestamp_diff(timestamp, timestamp, HOUR) from edge_logs')).toMatchObject({
      args: [{}, {}, { kind: 'date_part', part: 'hour' }],
    });
    expect(selectedExpr('select date_trunc(date(timestamp), week(sunday)) from edge_logs')).toMatchObject({ args: [{}, { kind: 'date_part', part: 'week' }] });
    expect(selectedExpr('select extract(dayofweek from timestamp) from edge_logs')).toMatchObject({ kind: 'extract', part: 'dayofweek' });
    expect(selectedExpr('select timestamp_sub(current_timestamp(), interval 3 day)')).toMatchObject({
      args: [
        { kind: 'call', name: 'current_timestamp' },
        { kind: 'interval', unit: 'day', value: { kind: 'number', text: '3' } },
      ],
    });
    expect(selectedExpr('select date_trunc(date(timestamp), week(monday)) from edge_logs')).toMatchObject({
      args: [{}, { kind: 'date_part', part: 'week(monday)' }],
    });
    expect(selectedExpr('select extract(week(saturday) from timestamp) from edge_logs')).toMatchObject({ kind: 'extract', part: 'week(saturday)' });
    expect(selectedExpr(`select extract(hour from timestamp at time zone 'America/New_York') from edge_logs`)).toMatchObject({
      kind: 'extract',
      part: 'hour',
      timeZone: 'America/New_York',
    });
    expect(refusal(() => logsAll('select date_trunc(date(timestamp), week(someday)) from edge_logs'))).toBeInstanceOf(InvalidQuery);
  });

  it('maps every cast type, including those the parser writes as objects', () => {
    const types = ['STRING', 'INT64', 'FLOAT64', 'NUMERIC', 'BIGNUMERIC', 'BOOL', 'BYTES', 'DATE', 'DATETIME', 'TIME', 'TIMESTAMP', 'JSON'];
    const items = firstSelect(
      logsAll(`select ${types.map((type) => `cast(id as ${type.toLowerCase()})`).join(', ')}, safe_cast(id as boolean) from edge_logs`),
    ).items;
    expect(items.map((item) => item.kind === 'expression' && item.expr.kind === 'cast' && item.expr.type)).toEqual([...types, 'BOOL']);
    expect(items.at(-1)).toMatchObject({ expr: { kind: 'cast', safe: true } });
    expect(refusal(() => logsAll('select cast(id as varchar(10)) from edge_logs'))).toBeInstanceOf(SandboxViolation);
    expect(refusal(() => logsAll('select cast(id as interval) from edge_logs'))).toBeInstanceOf(SandboxViolation);
  });

  it('reads literals, parameters and typed literals', () => {
    const items = firstSelect(
      logsAll(`select "dq", r'\\d+', '''tri''', 1.5e3, true, null, @project, timestamp '2024-01-01 00:00:00', date '2024-01-01'`),
    ).items;
    expect(items.map((item) => item.kind === 'expression' && item.expr)).toMatchObject([
      { kind: 'string', value: 'dq' },
      { kind: 'string', value: '\\d+' },
      { kind: 'string', value: 'tri' },
      { kind: 'number', text: '1.5e3' },
      { kind: 'boolean', value: true },
      { kind: 'null' },
      { kind: 'parameter', name: 'project' },
      { kind: 'typed_literal', type: 'TIMESTAMP', value: '2024-01-01 00:00:00' },
      { kind: 'typed_literal', type: 'DATE', value: '2024-01-01' },
    ]);
  });

  it('reads window functions, aggregate clauses and struct fields', () => {
    expect(
      selectedExpr(
        'select first_value(id ignore nulls) over (partition by event_message order by timestamp desc rows between unbounded preceding and current row) from edge_logs',
      ),
    ).toMatchObject({
      kind: 'call',
      ignoreNulls: true,
      over: {
        partitionBy: [{ path: ['event_message'] }],
        orderBy: [{ descending: true }],
        frame: { units: 'rows', start: { kind: 'unbounded_preceding' }, end: { kind: 'current_row' } },
      },
    });
    expect(selectedExpr("select string_agg(id, ',' order by timestamp limit 3) from edge_logs")).toMatchObject({
      orderBy: [{ descending: false }],
      limit: { text: '3' },
    });
    expect(selectedExpr('select struct(1 as a, id) from edge_logs')).toMatchObject({ kind: 'struct', fields: [{ name: 'a' }, { expr: { path: ['id'] } }] });
    expect(selectedExpr('select count(*) from edge_logs')).toMatchObject({ kind: 'call', name: 'count', star: true, args: [] });
  });

  it('accepts the small syntax that clients rely on', () => {
    expect(logsAll('-- leading comment\nselect id, from edge_logs -- trailing\n;').kind).toBe('query');
    expect(logsAll('select id from edge_logs;;').kind).toBe('query');
    expect(logsAll('SELECT ID FROM `edge_logs` AS E').kind).toBe('query');
    expect(logsAll('select id from EDGE_LOGS').kind).toBe('query');
  });
});

describe('validation', () => {
  it('resolves CTE names without regard to ASCII case only', () => {
    expect(tableKey('Edge_Logs')).toBe('edge_logs');
    expect(tableKey('\u212Aey')).toBe('\u212Aey');
    expect(logsAll('with Recent as (select id from edge_logs) select id from RECENT').kind).toBe('query');
  });

  it('lets a CTE shadow an endpoint table, and reads the endpoint table inside it', () => {
    expect(logsAll('with edge_logs as (select id from edge_logs where id is not null) select id from edge_logs').with).toHaveLength(1);
  });

  it('accepts select * and t.* over a CTE (the reference refuses them; see the report)', () => {
    const tree = logsAll('select *, e.* except (metadata) from edge_logs e');
    expect(firstSelect(tree).items).toEqual([
      expect.objectContaining({ kind: 'wildcard', except: [] }),
      expect.objectContaining({ kind: 'wildcard', qualifier: ['e'], except: ['metadata'] }),
    ]);
  });

  it('places each refusal where it happens', () => {
    const error = refusal(() => logsAll('select id\nfrom edge_logs\nwhere   getenv(id) is null'));
    expect(error).toBeInstanceOf(SandboxViolation);
    expect((error as SandboxViolation).position).toEqual({ line: 3, column: 9 });
    expect(error.message).toBe('restricted function getenv (line 3, column 9)');
    const table = refusal(() => logsAll('select id\n  from secret_logs')) as UnknownTable;
    expect(table.position).toEqual({ line: 2, column: 8 });
    const syntax = refusal(() => logsAll('select id\nfrom edge_logs\nwhere id = = 1')) as SqlSyntax;
    expect(syntax).toBeInstanceOf(SqlSyntax);
    expect(syntax.position).toEqual({ line: 3, column: 12 });
    expect((refusal(() => logsAll('select (1')) as SqlSyntax).position).toEqual({ line: 1, column: 10 });
  });

  it('allows only declared parameters', () => {
    expect(logsAll('select id from edge_logs where timestamp > @iso_timestamp_start').kind).toBe('query');
    const error = refusal(() => logsAll('select @secret'));
    expect(error).toBeInstanceOf(InvalidQuery);
    expect(error.message).toContain('@project, @iso_timestamp_start, @iso_timestamp_end');
  });

  it('counts a chain of one operator once toward the nesting limit', () => {
    const ors = `select id from edge_logs where ${Array.from({ length: 200 }, (_, index) => `id = '${index}'`).join(' or ')}`;
    expect(logsAll(ors).kind).toBe('query');
    const nested = `select ${'coalesce('.repeat(10)}1${')'.repeat(10)}`;
    expect(refusal(() => parseSandboxQuery(nested, { allowedTables: [], limits: { maxDepth: 5 } })).message).toContain('limit maxDepth');
  });

  it('names each limit it enforces', () => {
    const limited = (sql: string, limits: object) => refusal(() => parseSandboxQuery(sql, { allowedTables: LOGS_ALL_TABLES, limits })).message;
    expect(limited('select 1', { maxQueryBytes: 4 })).toContain('limit maxQueryBytes');
    expect(limited('select 1 + 2 + 3', { maxOperators: 1 })).toContain('limit maxOperators');
    expect(limited('select ((1))', { maxBracketDepth: 1 })).toContain('limit maxBracketDepth');
    expect(limited('with a as (select 1), b as (select 1) select 1', { maxCtes: 1 })).toContain('limit maxCtes');
    expect(limited('select 1 from edge_logs, edge_logs', { maxTableReferences: 1 })).toContain('limit maxTableReferences');
    expect(limited('select 1, 2', { maxSelectItems: 1 })).toContain('limit maxSelectItems');
    expect(limited('select 1 in (1, 2)', { maxListItems: 1 })).toContain('limit maxListItems');
  });

  it('exports an allow-list with bounds for every function', () => {
    expect(SANDBOX_FUNCTION_NAMES).toContain('regexp_contains');
    expect(SANDBOX_FUNCTION_NAMES).not.toContain('format');
    for (const name of SANDBOX_FUNCTION_NAMES) {
      const fn = sandboxFunction(name)!;
      expect(fn.minArgs, name).toBeLessThanOrEqual(fn.maxArgs);
      expect(name).toMatch(/^[a-z0-9_]+$/);
    }
    expect(sandboxFunction('constructor')).toBeUndefined();
    expect(sandboxFunction('__proto__')).toBeUndefined();
  });
});

describe('the parser under hostile input', () => {
  it('refuses 10,000 nested parentheses with a SandboxViolation, not a crash', () => {
    const deep = `select ${'('.repeat(10_000)}1${')'.repeat(10_000)} from edge_logs`;
    expect(refusal(() => logsAll(deep))).toBeInstanceOf(SandboxViolation);
    expect(logsAll('select id from edge_logs').kind).toBe('query');
  });

  it('refuses a keyword the parser fell back to reading as a name', () => {
    // Past about 47 nested CASEs the parser reads the innermost `case` as a column; only a raised bracket limit gets there.
    const cases = `select ${'case when true then '.repeat(70)}1${' end'.repeat(70)}`;
    const error = refusal(() => parseSandboxQuery(cases, { allowedTables: [], limits: { maxBracketDepth: 100 } }));
    expect(error).toBeInstanceOf(SqlSyntax);
    expect(error.message).toContain('case is a reserved keyword');
    expect(logsAll('select `case` from edge_logs').kind).toBe('query');
  });

  it('refuses unfinished nests of retried constructs (each returns, within the test timeout)', () => {
    for (const piece of ['case when 1 then ', 'cast(', 'interval ', 'substring(', 'ceil(', 'array[']) {
      expect(() => logsAll(`select ${piece.repeat(12)}1`)).toThrow();
    }
  });

  it('survives a WebAssembly stack overflow and keeps parsing', () => {
    // Past the operator bound on purpose: this is what the bound prevents.
    const overflow = `select ${Array(20_000).fill('1').join(' + ')}`;
    for (let attempt = 0; attempt < 3; attempt++) {
      expect(() => parseStatements(overflow)).toThrow(SandboxViolation);
      expect(parseStatements('select 1 + 1')).toHaveLength(1);
    }
  });
});
