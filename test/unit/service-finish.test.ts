import { beforeAll, describe, expect, it } from 'vitest';
import { finishInService, type FinishInput } from '../../src/executor/service-finish.ts';
import { fieldCatalog } from '../../src/planner/field-catalog.ts';
import type { Plan } from '../../src/planner/index.ts';
import type { ServiceFinish } from '../../src/planner/plan.ts';
import { decideServiceFinish } from '../../src/planner/sandbox/service-finish.ts';
import { planLogsAllSql } from '../support/sandbox-plan.ts';
import { initSqlParser } from '../../src/sql/index.ts';
import type { SqlType } from '../../src/sql/types.ts';

const catalog = fieldCatalog({
  id: 'keyword',
  project: 'keyword',
  'metadata.request': 'nested',
  'metadata.request.path': 'keyword',
  'metadata.response.status_code': 'long',
});
function plan(sql: string): Plan {
  return planLogsAllSql(sql, catalog);
}

/** Why the planner does not let the service finish a query (its WHERE taken as held, so the other reasons show). */
function refusal(sql: string): string | undefined {
  const planned = plan(sql);
  const scan = planned.scans[0]!;
  const decision = decideServiceFinish(planned.residual!.query, planned.residual!.bindings, {
    table: scan.table,
    columns: scan.columns,
    whereHeld: true,
    oneRow: false,
  });
  return 'refused' in decision ? decision.refused : undefined;
}

const EDGE = 'from edge_logs cross join unnest(metadata) as m cross join unnest(m.request) as request cross join unnest(m.response) as response';

beforeAll(async () => {
  await initSqlParser();
});

describe('which residual queries the service may finish', () => {
  it.each([
    [
      'the dashboard query',
      `select id, timestamp, event_message, request.method, request.path, response.status_code ${EDGE} where response.status_code >= 400 order by timestamp desc limit 100`,
    ],
    ['a pushed-down aggregation ordered by its key', 'select timestamp_trunc(timestamp, hour) as h, count(*) as n from edge_logs group by h order by h'],
    ['one group without ORDER BY', 'select count(*) as n from edge_logs'],
    [
      'left unnests, an ordinal, OFFSET',
      'select id, request.path from edge_logs left join unnest(metadata) as m on true left join unnest(m.request) as request on true order by 1 limit 5 offset 2',
    ],
    ['comma unnests and a key not selected', 'select id from edge_logs, unnest(metadata) as m order by timestamp desc limit 3'],
    ['LIMIT 1 without ORDER BY', 'select id from edge_logs limit 1'],
    ['a whole record array', 'select id, metadata from edge_logs order by timestamp desc limit 5'],
    [
      'a TIMESTAMP cast to DATETIME, ordered by its alias',
      'select cast(t.timestamp as datetime) as timestamp, id from edge_logs as t order by timestamp desc limit 5',
    ],
  ])('%s: admitted', (_, sql) => {
    expect(plan(sql).residual?.finish).toBeDefined();
  });

  it('the dashboard query reads its columns and record fields through the three unnests, newest first', () => {
    const finish = plan(`select id, request.path as p, response.status_code ${EDGE} where response.status_code >= 400 order by timestamp desc limit 100`)
      .residual!.finish!;
    expect(finish.unnests).toEqual([
      { array: { from: 'column', column: 'metadata', fields: [] }, join: 'inner' },
      { array: { from: 'unnest', unnest: 0, fields: ['request'] }, join: 'inner' },
      { array: { from: 'unnest', unnest: 0, fields: ['response'] }, join: 'inner' },
    ]);
    expect(finish.columns).toEqual([
      { name: 'id', value: { from: 'column', column: 'id', fields: [] } },
      { name: 'p', value: { from: 'unnest', unnest: 1, fields: ['path'] } },
      { name: 'status_code', value: { from: 'unnest', unnest: 2, fields: ['status_code'] } },
    ]);
    expect(finish.order).toEqual([{ value: { from: 'column', column: 'timestamp', fields: [] }, descending: true, nulls: 'last' }]);
    expect(finish.limit).toBe(100);
  });

  it.each([
    [
      'a computed value',
      'select upper(id) as u from edge_logs order by timestamp desc limit 5',
      'a selected value is computed, not a column, a record field or a TIMESTAMP cast to DATETIME',
    ],
    [
      'a cast of text',
      'select cast(id as datetime) as d from edge_logs order by timestamp desc limit 5',
      'a selected value is of a type converted in the engine',
    ],
    ['a cast without a name', 'select cast(timestamp as datetime) from edge_logs order by timestamp desc limit 5', 'a selected value has no name'],
    ['a wildcard', 'select * from edge_logs order by timestamp desc limit 5', 'the select list has a wildcard'],
    [
      'a computed ORDER BY key',
      'select id from edge_logs order by length(id) limit 5',
      'an ORDER BY key is computed, not a column, a record field or a selected name',
    ],
    ['no ORDER BY over several rows', 'select id from edge_logs limit 5', 'the query has no ORDER BY and may answer several rows'],
    ['DISTINCT', 'select distinct id from edge_logs order by id limit 5', 'SELECT DISTINCT compares whole rows'],
    ['a set operation', 'select id from edge_logs union all select id from edge_logs', 'the query is a set operation'],
    ['its own WITH', 'with e as (select id, timestamp from edge_logs) select id from e order by timestamp limit 5', 'the query has a WITH clause of its own'],
    [
      'a join of another table',
      "select id from edge_logs join (select 'x' as k) as d on d.k = id order by timestamp limit 1",
      'FROM joins something other than an UNNEST',
    ],
    [
      'UNNEST WITH OFFSET',
      'select id from edge_logs cross join unnest(metadata) as m with offset as o order by timestamp limit 1',
      'FROM joins something other than an UNNEST',
    ],
    ['a LIMIT parameter', 'select id from edge_logs order by timestamp limit @project', 'LIMIT or OFFSET is not a number written in the query'],
  ])('%s: refused', (_, sql, reason) => {
    expect(plan(sql).residual?.finish).toBeUndefined();
    expect(refusal(sql)).toBe(reason);
  });

  it('a WHERE the store cannot apply exactly is left to the engine', () => {
    const sql = `select id ${EDGE} where (response.status_code >= 400) is true order by timestamp desc limit 5`;
    expect(plan(sql).residual?.finish).toBeUndefined();
    const planned = plan(sql);
    const scan = planned.scans[0]!;
    expect(
      decideServiceFinish(planned.residual!.query, planned.residual!.bindings, { table: scan.table, columns: scan.columns, whereHeld: false, oneRow: false }),
    ).toEqual({ refused: "its WHERE is not exactly the scan's filter" });
  });

  it('HAVING, which the store does not group for, is finished in the service over the events (service-groups.ts)', () => {
    const planned = plan('select timestamp_trunc(timestamp, hour) as h, count(*) as n from edge_logs group by h having n > 3 order by h');
    expect(planned.scans[0]!.kind).toBe('events');
    expect(planned.residual?.finish).toMatchObject({ having: { kind: 'compare', operator: '>', right: 3 } });
  });
});

const STRING: SqlType = { kind: 'string' };
const INT: SqlType = { kind: 'int64' };
const TIMESTAMP: SqlType = { kind: 'timestamp' };
const RECORDS: SqlType = {
  kind: 'array',
  element: {
    kind: 'struct',
    fields: [
      { name: 'status', type: INT },
      { name: 'path', type: STRING },
    ],
  },
};

/** A table of events with one record array, answered as `id, status` newest first. */
function input(rows: Record<string, unknown>[], overrides: Partial<FinishInput> = {}, finish: Partial<ServiceFinish> = {}): FinishInput {
  return {
    finish: {
      table: 't',
      unnests: [{ array: { from: 'column', column: 'metadata', fields: [] }, join: 'inner' }],
      columns: [
        { name: 'id', value: { from: 'column', column: 'id', fields: [] } },
        { name: 'status', value: { from: 'unnest', unnest: 0, fields: ['status'] } },
      ],
      order: [{ value: { from: 'column', column: 'timestamp', fields: [] }, descending: true, nulls: 'last' }],
      limit: 2,
      offset: 0,
      ...finish,
    },
    schema: {
      name: 't',
      columns: [
        { name: 'id', type: STRING },
        { name: 'timestamp', type: TIMESTAMP },
        { name: 'metadata', type: RECORDS },
      ],
    },
    rows,
    supersetRows: 0,
    columns: [
      { name: 'id', type: STRING },
      { name: 'status', type: INT },
    ],
    maxRows: 1000,
    maxBytes: 1_000_000,
    ...overrides,
  };
}

const event = (id: string, timestamp: number, metadata: unknown) => ({ id, timestamp, metadata });

describe('the service finish over rows', () => {
  it('answers the newest rows, columns in order, an inner unnest of nothing giving no row', () => {
    const rows = [event('a', 1, [{ status: 200 }]), event('b', 3, []), event('c', 2, [{ status: null, path: '/x' }]), event('d', 0, [{ status: 500 }])];
    expect(finishInService(input(rows))).toEqual([
      { id: 'c', status: null },
      { id: 'a', status: 200 },
    ]);
  });

  it.each([
    ['an array of two records to unnest', [event('a', 1, [{ status: 1 }, { status: 2 }])]],
    ['two rows tied on the ORDER BY key', [event('a', 1, [{ status: 1 }]), event('b', 1, [{ status: 2 }])]],
    ['a tie at the edge of the LIMIT', [event('a', 3, [{ status: 1 }]), event('b', 2, [{ status: 2 }]), event('c', 2, [{ status: 3 }])]],
    ['a number where the record type says text', [event('a', 1, [{ status: 1, path: 7 }])]],
    ['an integer field holding a fraction', [event('a', 1, [{ status: 1.5 }])]],
  ])('declines %s', (_, rows) => {
    const finish = input(
      rows as Record<string, unknown>[],
      {},
      { columns: [...input([]).finish.columns, { name: 'path', value: { from: 'unnest', unnest: 0, fields: ['path'] } }] },
    );
    expect(finishInService({ ...finish, columns: [...finish.columns, { name: 'path', type: STRING }] })).toBeUndefined();
  });

  it('declines a lone surrogate or a NUL character, which DuckDB may store otherwise', () => {
    expect(finishInService(input([event('a\uD800', 1, [{ status: 1 }])]))).toBeUndefined();
    expect(finishInService(input([event('a\u0000', 1, [{ status: 1 }])]))).toBeUndefined();
    expect(finishInService(input([event('\u{1F600}', 1, [{ status: 1 }])]))).toEqual([{ id: '\u{1F600}', status: 1 }]);
  });

  it('orders text by its UTF-8 bytes, as DuckDB does', () => {
    const byId = input(
      [event('\uFF5E', 1, [{ status: 1 }]), event('\u{1F600}', 2, [{ status: 2 }])],
      {},
      { order: [{ value: { from: 'column', column: 'id', fields: [] }, descending: false, nulls: 'first' }] },
    );
    expect(finishInService(byId)!.map((row) => row.id)).toEqual(['\uFF5E', '\u{1F600}']);
  });

  it('ignores events matched only as a superset when they sort after a full answer, and declines when one might reach it', () => {
    const exact = [event('a', 5, [{ status: 1 }]), event('b', 4, [{ status: 2 }])];
    const older = event('s', 1, [{ status: 3 }, { status: 4 }]);
    expect(finishInService(input([...exact, older], { supersetRows: 1 }))).toEqual([
      { id: 'a', status: 1 },
      { id: 'b', status: 2 },
    ]);
    expect(finishInService(input([...exact, event('s', 4, [])], { supersetRows: 1 }))).toBeUndefined();
    expect(finishInService(input([exact[0]!, older], { supersetRows: 1 }))).toBeUndefined();
  });

  it('checks the rows of events matched only as a superset by the conditions the scan left, when it has them', () => {
    const exact = [event('a', 5, [{ status: 404 }])];
    // status >= 400, as the scan left it for its superset part
    const supersetWhere = [
      { kind: 'compare' as const, operator: '>=' as const, left: { value: { from: 'unnest' as const, unnest: 0, fields: ['status'] } }, right: 400 },
    ];
    const superset = [event('s', 6, [{ status: 503 }]), event('t', 7, [{ status: 200 }])];
    expect(finishInService(input([...exact, ...superset], { supersetRows: 2 }, { supersetWhere }))).toEqual([
      { id: 's', status: 503 },
      { id: 'a', status: 404 },
    ]);
    // without them such rows might reach the answer: the engine decides
    expect(finishInService(input([...exact, ...superset], { supersetRows: 2 }))).toBeUndefined();
    // a superset event with several records gives several rows in the engine's order: declined
    expect(finishInService(input([...exact, event('u', 8, [{ status: 500 }, { status: 501 }])], { supersetRows: 1 }, { supersetWhere }))).toBeUndefined();
  });

  it('declines a result the printer types otherwise, and one over the byte bound (the engine gives the error)', () => {
    const rows = [event('a', 1, [{ status: 1 }])];
    expect(
      finishInService(
        input(rows, {
          columns: [
            { name: 'id', type: STRING },
            { name: 'status', type: STRING },
          ],
        }),
      ),
    ).toBeUndefined();
    expect(finishInService(input(rows, { maxBytes: 10 }))).toBeUndefined();
  });

  it('answers a TIMESTAMP cast to DATETIME as the engine prints it, the fraction only when there is one', () => {
    const finish = input(
      [event('a', Date.UTC(2024, 0, 1, 5) * 1000, [{ status: 1 }]), event('b', Date.UTC(2024, 0, 1, 6) * 1000 + 120, [{ status: 2 }])],
      {},
      {
        columns: [{ name: 't', value: { from: 'column', column: 'timestamp', fields: [] }, cast: 'datetime' }],
      },
    );
    expect(finishInService({ ...finish, columns: [{ name: 't', type: { kind: 'datetime' } }] })).toEqual([
      { t: '2024-01-01T06:00:00.000120' },
      { t: '2024-01-01T05:00:00' },
    ]);
  });

  it('answers no rows for an inner unnest of an array no row holds, and leaves a LEFT JOIN of it to the engine', () => {
    const schema = {
      name: 't',
      columns: [
        { name: 'id', type: STRING },
        { name: 'timestamp', type: TIMESTAMP },
        { name: 'metadata', type: { kind: 'unknown' } as SqlType },
      ],
    };
    const rows = [event('a', 1, null)];
    const inner = input(rows, {
      schema,
      columns: [
        { name: 'id', type: STRING },
        { name: 'status', type: { kind: 'unknown' } },
      ],
    });
    expect(finishInService(inner)).toEqual([]);
    expect(finishInService({ ...inner, finish: { ...inner.finish, unnests: [{ ...inner.finish.unnests[0]!, join: 'left' }] } })).toBeUndefined();
  });

  it("answers a whole record array by its type: the type's fields in its order, each record an array of itself but as an element", () => {
    const whole = (rows: Record<string, unknown>[], metadata: SqlType = RECORDS) => {
      const base = input(rows);
      return finishInService({
        ...base,
        schema: { ...base.schema, columns: [...base.schema.columns.slice(0, 2), { name: 'metadata', type: metadata }] },
        finish: { ...base.finish, unnests: [], columns: [{ name: 'metadata', value: { from: 'column', column: 'metadata', fields: [] } }] },
        columns: [{ name: 'metadata', type: metadata }],
      });
    };
    expect(whole([event('a', 2, [{ path: '/x' }, { status: 1, path: null }]), event('b', 1, [])])).toEqual([
      {
        metadata: [
          { status: null, path: '/x' },
          { status: 1, path: null },
        ],
      },
      { metadata: [] },
    ]);
    const nested: SqlType = { kind: 'array', element: { kind: 'struct', fields: [{ name: 'request', type: RECORDS }] } };
    expect(whole([event('a', 1, [{ request: [{ status: 2, path: '/' }] }])], nested)).toEqual([{ metadata: [{ request: [{ status: 2, path: '/' }] }] }]);
    // a key the type lacks, a value of another kind than its field, and a json field are the engine's to convert
    expect(whole([event('a', 1, [{ status: 1, other: 2 }])])).toBeUndefined();
    expect(whole([event('a', 1, [{ status: '1' }])])).toBeUndefined();
    expect(whole([event('a', 1, [{ status: 2 ** 60 }])])).toBeUndefined();
    expect(
      whole([event('a', 1, [{ j: {} }])], { kind: 'array', element: { kind: 'struct', fields: [{ name: 'j', type: { kind: 'json' } }] } }),
    ).toBeUndefined();
  });

  it('keeps the row cap, and leaves an integer past 2^53 to the engine', () => {
    const groups = {
      name: 'g',
      columns: [
        { name: 'k', type: TIMESTAMP },
        { name: 'n', type: INT },
      ],
    };
    const finish: ServiceFinish = {
      table: 'g',
      unnests: [],
      columns: [
        { name: 'k', value: { from: 'column', column: 'k', fields: [] } },
        { name: 'n', value: { from: 'column', column: 'n', fields: [] } },
      ],
      order: [{ value: { from: 'column', column: 'k', fields: [] }, descending: false, nulls: 'first' }],
      offset: 0,
    };
    const rows = [
      { k: 2, n: 5 },
      { k: 1, n: 3 },
      { k: 3, n: 4 },
    ];
    const table = { finish, schema: groups, rows, supersetRows: 0, columns: groups.columns, maxRows: 2, maxBytes: 1_000_000 };
    expect(finishInService(table)).toEqual([
      { k: 1, n: 3 },
      { k: 2, n: 5 },
    ]);
    expect(finishInService({ ...table, rows: [...rows, { k: 4, n: 2 ** 60 }] })).toBeUndefined();
  });
});
