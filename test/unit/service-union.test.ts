import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { unionInService, type UnionInput } from '../../src/executor/service-union.ts';
import { logsAll } from '../../queries/logs-all.ts';
import { fieldCatalog, type FieldCatalog } from '../../src/planner/field-catalog.ts';
import { planEndpointQuery } from '../../src/planner/index.ts';
import type { EventScan, ServiceUnionFinish } from '../../src/planner/plan.ts';
import { freezeTree } from '../../src/sql/frozen-tree.ts';
import { initSqlParser, parseSandboxQuery } from '../../src/sql/index.ts';
import type { SqlType } from '../../src/sql/types.ts';
import { logsAllParseOptions, planLogsAllSql } from '../support/sandbox-plan.ts';

const catalog = fieldCatalog({
  id: 'keyword',
  project: 'keyword',
  'metadata.request': 'nested',
  'metadata.request.path': 'keyword',
  'metadata.response.status_code': 'long',
  'metadata.parsed.error_severity': 'keyword',
});
const plan = (sql: string) => planLogsAllSql(sql, catalog);
const limitsOf = (sql: string) =>
  plan(sql).scans.map((scan) => ((scan as EventScan).take.kind === 'limit' ? (scan as EventScan & { take: { rows: number } }).take.rows : 'all'));

const studio: { id: string; sql: string }[] = JSON.parse(readFileSync(new URL('../fixtures/examples/studio-queries.json', import.meta.url), 'utf8'));
const UNIFIED = studio.find((query) => query.id === 'unified_logs_rows')!.sql;

const PG = 'from postgres_logs cross join unnest(metadata) as m cross join unnest(m.parsed) as p';
const EDGE = 'from edge_logs cross join unnest(metadata) as m cross join unnest(m.request) as r cross join unnest(m.response) as s';
const BRANCHES = `select id, timestamp, 'pg' as kind, cast(p.sql_state_code as string) as status ${PG}
  union all select id, timestamp, 'edge', cast(s.status_code as string) ${EDGE} where r.path like '%/rest/%'`;

beforeAll(async () => {
  await initSqlParser();
});

describe('which unions the service finishes', () => {
  it.each([
    ['the unified logs page', UNIFIED],
    ['a union ordered outside it', `${BRANCHES} order by timestamp desc, id desc limit 10`],
    ['by ordinals, with OFFSET', `${BRANCHES} order by 2 desc limit 10 offset 5`],
    ['oldest first', `${BRANCHES} order by timestamp, id limit 10`],
    ['a CTE projected by a wildcard', `with u as (${BRANCHES}) select * from u order by timestamp desc limit 3`],
    ['a CTE projected and renamed', `with u as (${BRANCHES}) select kind as k, id from u order by timestamp desc limit 3`],
    [
      'a CASE with BETWEEN, IN and no ELSE',
      `select id, timestamp, case when s.status_code between 200 and 299 then 'ok' when s.status_code in (404, 410) then 'gone' end as level ${EDGE}
       union all select id, timestamp, null ${PG} order by timestamp desc limit 5`,
    ],
    ['three branches', `${BRANCHES} union all select id, timestamp, 'auth', null from auth_logs order by timestamp desc limit 10`],
  ])('%s: finished in the service', (_, sql) => {
    const planned = plan(sql);
    expect(planned.residual?.unionFinish).toBeDefined();
    expect(planned.residual?.finish).toBeUndefined();
  });

  it.each([
    [
      'a computed value',
      `select id, timestamp, upper(event_message) as e from edge_logs union all select id, timestamp, 'x' from auth_logs order by 2 desc limit 5`,
    ],
    ['UNION DISTINCT', `select id, timestamp from edge_logs union distinct select id, timestamp from auth_logs order by timestamp desc limit 5`],
    ['a WHERE over the CTE', `with u as (${BRANCHES}) select id from u where kind = 'pg' order by id limit 3`],
    [
      'a CASE giving a column',
      `select id, timestamp, case when true then id end as c from edge_logs union all select id, timestamp, null from auth_logs order by 2 desc limit 5`,
    ],
    [
      'a CASE with an operand',
      `select id, timestamp, case id when 'a' then 'x' end as c from edge_logs union all select id, timestamp, null from auth_logs order by 2 desc limit 5`,
    ],
    ['a branch that groups', `select id, max(timestamp) as t from edge_logs group by id union all select id, timestamp from auth_logs order by t desc limit 5`],
    [
      'a branch joined to another',
      `select e.id, e.timestamp from edge_logs as e join auth_logs as a on a.id = e.id union all select id, timestamp from auth_logs order by 2 desc limit 5`,
    ],
    [
      'a CAST to another type',
      `select id, timestamp, cast(id as int64) as n from edge_logs union all select id, timestamp, null from auth_logs order by 2 desc limit 5`,
    ],
    ['a LIMIT parameter', `select id, timestamp from edge_logs union all select id, timestamp from auth_logs order by 2 desc limit @project`],
    ['an ordinal outside the columns', `select id, timestamp from edge_logs union all select id, timestamp from auth_logs order by 0 desc limit 5`],
    ['no ORDER BY nor LIMIT', `select id, timestamp from edge_logs union all select id, timestamp from auth_logs`],
  ])('%s: left to the engine', (_, sql) => {
    expect(plan(sql).residual?.unionFinish).toBeUndefined();
  });
});

describe('the union finish of a text', () => {
  it('is decided once and shared by the plans of the same parsed text, and decided again for other catalogs', () => {
    // a text's parsed tree is shared frozen between its requests (parsed-query-cache.ts)
    const query = freezeTree(parseSandboxQuery(UNIFIED, logsAllParseOptions));
    const planOf = (with_: FieldCatalog) =>
      planEndpointQuery(
        logsAll,
        logsAll.parameters.parse({ project: 'default' }) as Record<string, unknown>,
        { now: 0, projects: null, indexPrefix: 'lp-' },
        {
          language: 'sql',
          query,
          limits: { maxScanEvents: 50_000, maxScans: 32 },
          catalogs: new Map(logsAll.ctes.map((cte) => ['source' in cte ? cte.source : cte.name, with_])),
        },
      );
    const [first, second] = [planOf(catalog), planOf(catalog)];
    expect(first.residual?.unionFinish).toBeDefined();
    expect(second.residual?.unionFinish).toBe(first.residual?.unionFinish);
    const other = planOf(fieldCatalog({ id: 'keyword' }));
    expect(other.residual?.unionFinish).toBeDefined();
    expect(other.residual?.unionFinish).not.toBe(first.residual?.unionFinish);
  });
});

describe("which branches' scans are limited in the store", () => {
  it.each([
    ['the unified logs page: 50 of each', UNIFIED, [50, 50]],
    ['newest first with OFFSET: offset + limit of each', `${BRANCHES} order by timestamp desc, id desc limit 10 offset 5`, [15, 15]],
    ['by ordinals', `${BRANCHES} order by 2 desc, 1 desc limit 10`, [10, 10]],
    ['through a renaming CTE', `with u as (${BRANCHES}) select kind, id, timestamp as t from u order by t desc limit 3`, [3, 3]],
    ['oldest first: every event', `${BRANCHES} order by timestamp, id limit 10`, ['all', 'all']],
    ['ordered by id first: every event', `${BRANCHES} order by id desc, timestamp desc limit 10`, ['all', 'all']],
    ['without LIMIT: every event', `${BRANCHES} order by timestamp desc`, ['all', 'all']],
    [
      'a branch whose timestamp column is another value: only the other branch',
      `select id, timestamp ${PG} union all select id, current_timestamp() from edge_logs order by timestamp desc limit 4`,
      [4, 'all'],
    ],
    [
      'a branch whose WHERE the store cannot apply exactly: only the other branch',
      `${BRANCHES} and (s.status_code >= 400) is true order by timestamp desc limit 6`,
      [6, 'all'],
    ],
  ])('%s', (_, sql, limits) => {
    expect(limitsOf(sql)).toEqual(limits);
  });
});

const STRING: SqlType = { kind: 'string' };
const TIMESTAMP: SqlType = { kind: 'timestamp' };
const INT: SqlType = { kind: 'int64' };

/** Two tables `a` and `b` of (id, timestamp, code), answered as id, kind, status (CAST of code) newest first. */
function input(a: Record<string, unknown>[], b: Record<string, unknown>[], codes: [SqlType, SqlType] = [INT, INT], limit = 3): UnionInput {
  const branch = (table: string, kind: string) => ({
    table,
    unnests: [],
    values: [
      { kind: 'path' as const, value: { from: 'column' as const, column: 'id', fields: [] } },
      { kind: 'path' as const, value: { from: 'column' as const, column: 'timestamp', fields: [] } },
      { kind: 'literal' as const, text: kind },
      { kind: 'string_cast' as const, value: { from: 'column' as const, column: 'code', fields: [] } },
    ],
  });
  const finish: ServiceUnionFinish = {
    branches: [branch('a', 'A'), branch('b', 'B')],
    columns: [
      { name: 'id', position: 0 },
      { name: 'kind', position: 2 },
      { name: 'status', position: 3 },
    ],
    order: [
      { position: 1, descending: true, nulls: 'last' },
      { position: 0, descending: true, nulls: 'last' },
    ],
    limit,
    offset: 0,
  };
  const schema = (name: string, code: SqlType) => ({
    name,
    columns: [
      { name: 'id', type: STRING },
      { name: 'timestamp', type: TIMESTAMP },
      { name: 'code', type: code },
    ],
  });
  return {
    finish,
    tables: [
      { schema: schema('a', codes[0]), rows: a },
      { schema: schema('b', codes[1]), rows: b },
    ],
    columns: [
      { name: 'id', type: STRING },
      { name: 'kind', type: STRING },
      { name: 'status', type: STRING },
    ],
    maxRows: 1000,
    maxBytes: 1_000_000,
  };
}

describe('the union finished over rows', () => {
  it('merges the branches newest first, ties on timestamp by id, integers cast to their digits', () => {
    const a = [
      { id: 'a1', timestamp: 5, code: 42 },
      { id: 'a2', timestamp: 3, code: null },
    ];
    const b = [
      { id: 'b1', timestamp: 5, code: -7 },
      { id: 'b2', timestamp: 4, code: 0 },
    ];
    expect(unionInService(input(a, b))).toEqual([
      { id: 'b1', kind: 'B', status: '-7' },
      { id: 'a1', kind: 'A', status: '42' },
      { id: 'b2', kind: 'B', status: '0' },
    ]);
    expect(unionInService(input(a, []))).toEqual([
      { id: 'a1', kind: 'A', status: '42' },
      { id: 'a2', kind: 'A', status: null },
    ]);
  });

  it('declines rows the ORDER BY cannot tell apart, an integer past 2^53, and columns the printer types otherwise; casts text and integers alike', () => {
    const row = { id: 'x', timestamp: 1, code: 1 };
    expect(unionInService(input([row], [row]))).toBeUndefined();
    expect(unionInService(input([{ id: 'a', timestamp: 1, code: 2 ** 60 }], []))).toBeUndefined();
    const typedOtherwise = input([row], []);
    expect(unionInService({ ...typedOtherwise, columns: typedOtherwise.columns.map((column) => ({ ...column, type: INT })) })).toBeUndefined();
    expect(unionInService(input([{ id: 'a', timestamp: 1, code: 'x' }], [{ id: 'b', timestamp: 2, code: 2 }], [STRING, INT]))).toEqual([
      { id: 'b', kind: 'B', status: '2' },
      { id: 'a', kind: 'A', status: 'x' },
    ]);
  });
});
