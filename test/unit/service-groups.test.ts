import { beforeAll, describe, expect, it } from 'vitest';
import { translateToDuckDb } from '../../src/executor/duckdb-sql/index.ts';
import { serviceAnswer } from '../../src/executor/service-groups.ts';
import { fieldCatalog } from '../../src/planner/field-catalog.ts';
import type { Plan } from '../../src/planner/index.ts';
import type { ServiceGroupFinish } from '../../src/planner/plan.ts';
import { decideServiceFinish } from '../../src/planner/sandbox/service-finish.ts';
import { initSqlParser } from '../../src/sql/index.ts';
import type { SqlType, TableColumn } from '../../src/sql/types.ts';
import { planLogsAllSql } from '../support/sandbox-plan.ts';

const catalog = fieldCatalog({
  id: 'keyword',
  project: 'keyword',
  'metadata.request': 'nested',
  'metadata.request.path': 'keyword',
  'metadata.request.port': 'long',
  'metadata.response.origin_time': 'double',
});

const ACTOR = "json_value(event_message, '$.auth_event.actor_id')";
const ACTION = "json_value(event_message, '$.auth_event.action')";
const REPORT = `select timestamp_trunc(timestamp, hour) as timestamp, count(distinct ${ACTOR}) as count from auth_logs f
  where ${ACTION} in ('login', 'token_refreshed') group by timestamp order by timestamp desc`;
const REQUESTS = 'from edge_logs cross join unnest(metadata) as m cross join unnest(m.request) as request';

beforeAll(async () => {
  await initSqlParser();
});

function plan(sql: string): Plan {
  return planLogsAllSql(sql, catalog);
}

/** The plan's residual over the events: its own, or the one a pushed-down aggregation falls back to. */
function overEvents(sql: string): { residual: NonNullable<Plan['residual']>; table: string } {
  const planned = plan(sql);
  const scan = planned.scans[0]!;
  if (scan.kind === 'aggregation') return { residual: scan.fallback.residual, table: scan.fallback.scan.table };
  return { residual: planned.residual!, table: scan.table };
}

function groupsFinish(sql: string): ServiceGroupFinish {
  const finish = overEvents(sql).residual.finish;
  if (!finish || !('groups' in finish)) throw new Error(`not finished in groups: ${sql}`);
  return finish;
}

/** Why the planner leaves a grouping query to the engine. */
function refusal(sql: string): string | undefined {
  const planned = plan(sql);
  const scan = planned.scans[0]!;
  const decision = decideServiceFinish(planned.residual!.query, planned.residual!.bindings, {
    table: scan.table,
    columns: scan.columns,
    whereHeld: false,
    unapplied: [],
    oneRow: false,
  });
  return 'refused' in decision ? decision.refused : undefined;
}

describe('which grouping queries the service may finish', () => {
  it('the active users report: an hourly key, a distinct count of JSON_VALUE, and its WHERE on JSON_VALUE applied by the service', () => {
    const finish = groupsFinish(REPORT);
    const message = { from: 'column', column: 'event_message', fields: [] };
    expect(finish.groups).toEqual({
      keys: [{ operand: { value: { from: 'column', column: 'timestamp', fields: [] } }, trunc: 'hour' }],
      aggregates: [{ fn: 'count', operand: { operand: { value: message, json: ['auth_event', 'actor_id'] } }, distinct: true }],
    });
    const action = { value: message, json: ['auth_event', 'action'] };
    expect(finish.where).toEqual([
      {
        kind: 'or',
        operands: [
          { kind: 'compare', operator: '=', left: action, right: 'login' },
          { kind: 'compare', operator: '=', left: action, right: 'token_refreshed' },
        ],
      },
    ]);
    expect(finish.columns).toEqual([
      { name: 'timestamp', value: { from: 'key', index: 0 } },
      { name: 'count', value: { from: 'aggregate', index: 0 } },
    ]);
    expect(finish.order).toEqual([{ value: { from: 'key', index: 0 }, descending: true, nulls: 'last' }]);
  });

  it.each([
    [
      'a key in the records beside an hourly bucket',
      `select timestamp_trunc(timestamp, minute) as t, request.path, count(*) as n ${REQUESTS} group by t, request.path order by t`,
    ],
    ['keys by ordinal, ORDER BY an aggregate written again', `select request.path as p, count(*) as n ${REQUESTS} group by 1 order by count(*) desc, p`],
    ['aggregates without GROUP BY', `select count(*) as n, sum(request.port) as ports, min(request.path) as first ${REQUESTS} where ${ACTION} = 'x'`],
    [
      'COUNTIF and MAX of a timestamp',
      `select ${ACTION} as a, countif(${ACTOR} is null) as anonymous, max(timestamp) as last from auth_logs group by a order by a`,
    ],
    ['HAVING on selected columns by name', `select ${ACTION} as a, count(*) as n from auth_logs group by a having n > 1 and a != 'x' order by a`],
    ['no ORDER BY (several groups decline at run time)', `select ${ACTION} as a, count(*) as n from auth_logs group by a`],
  ])('%s: admitted', (_, sql) => {
    expect(groupsFinish(sql)).toBeDefined();
  });

  it.each([
    [
      'AVG',
      `select ${ACTION} as a, avg(request.port) as n ${REQUESTS} group by a order by a`,
      'a selected value is neither a grouping key nor an aggregate the service computes',
    ],
    [
      'HAVING on an aggregate written again',
      `select ${ACTION} as a, count(*) as n from auth_logs group by a having count(*) > 1 order by a`,
      'its HAVING is not a condition on selected columns, by their names, that the service evaluates',
    ],
    ['ROLLUP', `select ${ACTION} as a, count(*) as n from auth_logs group by rollup (a) order by a`, 'GROUP BY ROLLUP adds subtotal rows'],
    [
      'a computed key',
      'select upper(id) as u, count(*) as n from auth_logs group by u order by u',
      'a GROUP BY key is computed, not a column, a record field, JSON_VALUE of one or TIMESTAMP_TRUNC of a timestamp',
    ],
    [
      'a week bucket',
      'select timestamp_trunc(timestamp, week) as w, count(*) as n from auth_logs group by w order by w',
      'a GROUP BY key is computed, not a column, a record field, JSON_VALUE of one or TIMESTAMP_TRUNC of a timestamp',
    ],
    [
      'a JSONPath with an index',
      "select json_value(event_message, '$.a[0]') as a, count(*) as n from auth_logs group by a order by a",
      'a GROUP BY key is computed, not a column, a record field, JSON_VALUE of one or TIMESTAMP_TRUNC of a timestamp',
    ],
    [
      'SUM of text',
      `select ${ACTION} as a, sum(${ACTOR}) as n from auth_logs group by a order by a`,
      'a selected value is neither a grouping key nor an aggregate the service computes',
    ],
    [
      'a selected value not grouped by',
      `select ${ACTION} as a, id, count(*) as n from auth_logs group by a order by a`,
      'a selected value is neither a grouping key nor an aggregate the service computes',
    ],
    [
      'ORDER BY a computed value',
      `select ${ACTION} as a, count(*) as n from auth_logs group by a order by length(a)`,
      'an ORDER BY key is neither a selected column, a grouping key nor an aggregate the service computes',
    ],
    ['an aggregate with no name', `select ${ACTION} as a, count(*) from auth_logs group by a order by a`, 'a selected value has no name'],
  ])('%s: refused', (_, sql, reason) => {
    expect(plan(sql).residual?.finish).toBeUndefined();
    expect(refusal(sql)).toBe(reason);
  });
});

const STRING: SqlType = { kind: 'string' };
const COLUMNS: TableColumn[] = [
  { name: 'id', type: STRING },
  { name: 'timestamp', type: { kind: 'timestamp' } },
  { name: 'event_message', type: STRING },
  {
    name: 'metadata',
    type: {
      kind: 'array',
      element: {
        kind: 'struct',
        fields: [
          {
            name: 'request',
            type: {
              kind: 'array',
              element: {
                kind: 'struct',
                fields: [
                  { name: 'path', type: STRING },
                  { name: 'port', type: { kind: 'int64' } },
                  { name: 'ratio', type: { kind: 'float64' } },
                ],
              },
            },
          },
        ],
      },
    },
  },
];

/** The service's answer to `sql` over `rows` (the printer gives its columns, as in the executor); undefined: the engine's. */
function answer(sql: string, rows: Record<string, unknown>[], maxRows = 1000): Record<string, unknown>[] | undefined {
  const { residual, table } = overEvents(sql);
  const finish = groupsFinish(sql);
  const schema = { name: table, columns: COLUMNS };
  const translation = { tables: [schema], bindings: residual.bindings, parameters: residual.parameters, now: residual.now, maxChars: 1e6, maxValueBytes: 1e6 };
  const { columns } = translateToDuckDb(residual.query, translation);
  return serviceAnswer({ finish, schema, rows, supersetRows: 0, columns, maxRows, maxBytes: 1e6 });
}

const HOUR = 3_600_000_000;
const T0 = Date.UTC(2024, 0, 1) * 1000;
const authRow = (n: number, micros: number, action: unknown, actor: unknown) => ({
  id: `a${n}`,
  timestamp: micros,
  event_message: typeof action === 'string' && action.startsWith('{') ? action : JSON.stringify({ auth_event: { action, actor_id: actor } }),
});
const requestRow = (n: number, micros: number, requests: Record<string, unknown>[]) => ({ id: `e${n}`, timestamp: micros, metadata: [{ request: requests }] });

describe('groups computed by the service over rows', () => {
  it('the active users report: distinct actors per UTC hour, newest first, rows failing the WHERE left out', () => {
    const rows = [
      authRow(1, T0 + 5, 'login', 'u1'),
      authRow(2, T0 + HOUR - 1, 'login', 'u1'),
      authRow(3, T0 + HOUR - 1, 'token_refreshed', 'u2'),
      authRow(4, T0 + HOUR, 'login', null),
      authRow(5, T0 + HOUR + 7, 'logout', 'u3'),
      { id: 'a6', timestamp: T0 + 2 * HOUR, event_message: 'not json' },
      authRow(7, T0 - 1, 'login', 'u9'),
    ];
    expect(answer(REPORT, rows)).toEqual([
      { timestamp: T0 + HOUR, count: 0 },
      { timestamp: T0, count: 2 },
      { timestamp: T0 - HOUR, count: 1 },
    ]);
  });

  it('declines a message the engine reads its own way, and a sum past 2^53', () => {
    expect(answer(REPORT, [authRow(1, T0, 'login', 'u1'), { id: 'x', timestamp: T0, event_message: '{"auth_event":{"action":"login",}}' }])).toBeUndefined();
    const sum = `select request.path as p, sum(request.port) as ports ${REQUESTS} group by p order by p`;
    expect(
      answer(sum, [
        requestRow(1, T0, [
          { path: '/a', port: 2 ** 52 },
          { path: '/a', port: 2 ** 52 },
        ]),
      ]),
    ).toBeUndefined();
    expect(
      answer(sum, [
        requestRow(1, T0, [
          { path: '/a', port: 2 ** 51 },
          { path: '/a', port: 2 ** 51 },
        ]),
      ]),
    ).toEqual([{ p: '/a', ports: 2 ** 52 }]);
  });

  it('counts every record of an event, a NULL key its own group, sorted first ascending, and sums NULL over no value', () => {
    const sql = `select request.path as p, count(*) as n, count(request.port) as ports, sum(request.port) as total, max(request.port) as top
      ${REQUESTS} group by p order by p`;
    const rows = [
      requestRow(1, T0, [{ path: '/b', port: 1 }, { path: null }, { path: '/\uFF5E', port: 3 }]),
      requestRow(2, T0, [{ path: '/b', port: 5 }, { path: '/\u{1F600}' }]),
      requestRow(3, T0, []),
    ];
    expect(answer(sql, rows)).toEqual([
      { p: null, n: 1, ports: 0, total: null, top: null },
      { p: '/b', n: 2, ports: 2, total: 6, top: 5 },
      // by UTF-8 bytes U+FF5E comes before U+1F600 (by UTF-16 units it would not)
      { p: '/\uFF5E', n: 1, ports: 1, total: 3, top: 3 },
      { p: '/\u{1F600}', n: 1, ports: 0, total: null, top: null },
    ]);
  });

  it('one group without GROUP BY, also over no rows', () => {
    const sql = `select count(*) as n, sum(request.port) as ports, min(request.path) as first ${REQUESTS}`;
    expect(answer(sql, [])).toEqual([{ n: 0, ports: null, first: null }]);
    expect(answer(sql, [requestRow(1, T0, [{ path: '/b', port: 1 }, { path: '/a' }])])).toEqual([{ n: 2, ports: 1, first: '/a' }]);
  });

  it('declines ties the ORDER BY leaves open within the answer or at its edge, and several groups without ORDER BY', () => {
    const rows = [requestRow(1, T0, [{ path: '/a' }, { path: '/b' }, { path: '/b' }, { path: '/c' }])];
    const byCount = (limit: number) => `select request.path as p, count(*) as n ${REQUESTS} group by p order by n desc limit ${limit}`;
    expect(answer(byCount(1), rows)).toEqual([{ p: '/b', n: 2 }]);
    expect(answer(byCount(2), rows)).toBeUndefined();
    expect(answer(`select request.path as p, count(*) as n ${REQUESTS} group by p order by n desc, p limit 2`, rows)).toEqual([
      { p: '/b', n: 2 },
      { p: '/a', n: 1 },
    ]);
    expect(answer(`select request.path as p, count(*) as n ${REQUESTS} group by p`, rows)).toBeUndefined();
  });

  it('declines a FLOAT64 key or distinct count (the engine groups -0, 0 and NaN its own way)', () => {
    const rows = [requestRow(1, T0, [{ path: '/a', ratio: 0.5 }])];
    expect(answer(`select request.ratio as r, count(*) as n ${REQUESTS} group by r order by r`, rows)).toBeUndefined();
    expect(answer(`select request.path as p, count(distinct request.ratio) as n ${REQUESTS} group by p order by p`, rows)).toBeUndefined();
    expect(answer(`select request.path as p, count(request.ratio) as n ${REQUESTS} group by p order by p`, rows)).toEqual([{ p: '/a', n: 1 }]);
  });

  it('keeps the groups HAVING makes TRUE (a NULL key compared is NULL: left out)', () => {
    const rows = [requestRow(1, T0, [{ path: '/a' }, { path: '/b' }, { path: '/b' }, { path: null }, { path: null }])];
    const sql = `select request.path as p, count(*) as n ${REQUESTS} group by p having n >= 2 and p > '/a' order by p`;
    expect(answer(sql, rows)).toEqual([{ p: '/b', n: 2 }]);
    expect(answer(sql.replace("and p > '/a'", "or p = '/a'"), rows)).toEqual([
      { p: null, n: 2 },
      { p: '/a', n: 1 },
      { p: '/b', n: 2 },
    ]);
  });

  it("keeps the engine's row cap", () => {
    const rows = [requestRow(1, T0, [{ path: '/a' }, { path: '/b' }, { path: '/c' }])];
    expect(answer(`select request.path as p, count(*) as n ${REQUESTS} group by p order by p desc`, rows, 2)).toEqual([
      { p: '/c', n: 1 },
      { p: '/b', n: 1 },
    ]);
  });
});
