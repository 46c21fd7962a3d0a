import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../shared/event-index.ts';
import { eventShape } from '../../shared/event-shape.ts';
import type { Plan } from '../../src/planner/index.ts';
import type { EventScan, Scan } from '../../src/planner/plan.ts';
import { initSqlParser } from '../../src/sql/index.ts';
import { PlanHarness } from '../support/plan-harness.ts';
import { startEndpointServer, storedTimestamp, type EndpointTestServer } from '../support/endpoint-server.ts';

/**
 * A UNION ALL the service finishes itself (the unified logs page) answers the bytes the engine
 * answers over the same scanned rows: each query runs as planned and with the engine forced. The
 * events hold NULLs, severities and statuses no WHEN names, timestamps tied within and across the
 * branches, an event with two parsed records, one without a response record, and a status code
 * with a fraction; one project has no edge events at all.
 */

const studio: { id: string; sql: string; params: Record<string, string> }[] = JSON.parse(
  readFileSync(new URL('../fixtures/examples/studio-queries.json', import.meta.url), 'utf8'),
);
const UNIFIED = studio.find((query) => query.id === 'unified_logs_rows')!.sql;

const NOW = Date.UTC(2024, 0, 2);
const HOUR = { iso_timestamp_start: '2024-01-01T00:00:00.000Z', iso_timestamp_end: '2024-01-01T01:00:00.000Z' };
const SEVERITIES = ['LOG', 'WARNING', 'FATAL', 'ERROR', 'PANIC', null];
const STATUSES = [200, 299, 302, 404, 500, 503, null];

function event(project: string, id: string, second: number, metadata: Record<string, unknown>, extraMicros = 0): StoredEvent {
  return {
    id,
    timestamp: storedTimestamp(Date.UTC(2024, 0, 1, 0, 0, 1 + second), extraMicros),
    event_message: `${project} ${id}`,
    project,
    metadata,
    shape: eventShape(metadata),
  };
}

function postgres(project: string, id: string, second: number, parsed: Record<string, unknown> | Record<string, unknown>[], extraMicros = 0): StoredEvent {
  return event(project, id, second, { parsed }, extraMicros);
}

function edge(project: string, id: string, second: number, path: string, status: unknown, extraMicros = 0): StoredEvent {
  return event(project, id, second, { request: { method: 'GET', path }, response: { status_code: status } }, extraMicros);
}

/** Project `union`: more than a page of each, every other edge path outside /rest/, ties on timestamp. */
const POSTGRES: StoredEvent[] = [
  ...Array.from({ length: 70 }, (_, n) =>
    postgres('union', `pg${String(n).padStart(3, '0')}`, n * 20, { error_severity: SEVERITIES[n % SEVERITIES.length], sql_state_code: `0${n % 7}000` }),
  ),
  // the same instant as an edge event, and as each other (told apart by id)
  postgres('union', 'tie-a', 1000, { error_severity: 'LOG', sql_state_code: null }, 5),
  postgres('union', 'tie-b', 1000, { error_severity: 'ERROR', sql_state_code: '42P01' }, 5),
  // two parsed records: two rows of one event, the oldest of all
  postgres('union', 'multi', 0, [
    { error_severity: 'LOG', sql_state_code: '00000' },
    { error_severity: 'ERROR', sql_state_code: '42P01' },
  ]),
];
const EDGE: StoredEvent[] = [
  ...Array.from({ length: 140 }, (_, n) =>
    edge('union', `ed${String(n).padStart(3, '0')}`, n * 10 + 3, n % 2 ? '/rest/v1/t' : '/auth/v1/user', STATUSES[n % STATUSES.length]),
  ),
  edge('union', 'tie-c', 1000, '/rest/v1/tie', 201, 5),
  // no response record: the inner unnest gives no row
  event('union', 'no-response', 1001, { request: { method: 'POST', path: '/rest/v1/x' } }),
];

/** Project `lonely`: postgres events only (the edge branch has no rows). */
const LONELY = Array.from({ length: 8 }, (_, n) => postgres('lonely', `lo${n}`, n * 30, { error_severity: SEVERITIES[n % 6], sql_state_code: '00000' }));

/** Project `castodd`: a status code with a fraction (a FLOAT64, which the engine casts to text its own way). */
const CASTODD = [
  edge('castodd', 'c1', 10, '/rest/a', 200),
  edge('castodd', 'c2', 20, '/rest/b', 404.5),
  postgres('castodd', 'c3', 30, { error_severity: 'LOG' }),
];

/** Project `sametie`: the same id and instant in both branches (rows the ORDER BY cannot tell apart). */
const SAMETIE = [postgres('sametie', 'same', 100, { error_severity: 'LOG', sql_state_code: '00000' }), edge('sametie', 'same', 100, '/rest/s', 200)];

/** Project `many`: the unified logs page over four log types (postgres, edge, auth, edge functions). */
const MANY_AUTH = Array.from({ length: 12 }, (_, n) =>
  event('many', `au${n}`, n * 7, { level: ['info', 'warning', 'error', 'fatal', null][n % 5], status: [200, 400, 500][n % 3], path: '/token', method: 'POST' }),
);
const MANY_FUNCTIONS = Array.from({ length: 12 }, (_, n) =>
  event('many', `fe${n}`, n * 8 + 3, {
    // this source keeps its project in metadata
    project_ref: 'many',
    request: { method: 'GET', url: `https://x.supabase.co/functions/v1/f${n % 3}` },
    response: { status_code: [200, 404, 500][n % 3] },
  }),
);
const MANY_POSTGRES = Array.from({ length: 6 }, (_, n) => postgres('many', `mp${n}`, n * 11 + 1, { error_severity: SEVERITIES[n], sql_state_code: '00000' }));
const MANY_EDGE = Array.from({ length: 6 }, (_, n) => edge('many', `me${n}`, n * 13 + 4, '/rest/v1/m', STATUSES[n]));
const FOUR_TYPES = `with unified_logs as (
    select id, pgl.timestamp as timestamp, 'postgres' as log_type, cast(p.sql_state_code as string) as status,
      case when p.error_severity = 'LOG' then 'success' when p.error_severity = 'WARNING' then 'warning'
        when p.error_severity in ('FATAL', 'ERROR') then 'error' else null end as level,
      null as pathname, event_message as event_message, null as method
    from postgres_logs as pgl cross join unnest(pgl.metadata) as m cross join unnest(m.parsed) as p
  union all
    select id, el.timestamp as timestamp, 'postgrest' as log_type, cast(res.status_code as string) as status,
      case when res.status_code between 200 and 299 then 'success' when res.status_code between 400 and 499 then 'warning'
        when res.status_code >= 500 then 'error' else 'success' end as level,
      req.path as pathname, null as event_message, req.method as method
    from edge_logs as el cross join unnest(metadata) as m cross join unnest(m.request) as req cross join unnest(m.response) as res
    where req.path like '%/rest/%'
  union all
    select al.id, al.timestamp as timestamp, 'auth' as log_type, cast(am.status as string) as status,
      case when am.level = 'info' then 'success' when am.level = 'warning' then 'warning' when am.level in ('error', 'fatal') then 'error' end as level,
      am.path as pathname, al.event_message as event_message, am.method as method
    from auth_logs as al cross join unnest(metadata) as am
  union all
    select fel.id, fel.timestamp as timestamp, 'edge function' as log_type, cast(fres.status_code as string) as status,
      case when fres.status_code between 200 and 299 then 'success' when fres.status_code between 400 and 499 then 'warning' else 'error' end as level,
      freq.url as pathname, fel.event_message as event_message, freq.method as method
    from function_edge_logs as fel cross join unnest(metadata) as fm cross join unnest(fm.request) as freq cross join unnest(fm.response) as fres
)
select id, timestamp, log_type, status, level, pathname, event_message, method from unified_logs
order by timestamp desc, id desc limit 10`;

const DIRECT = `select id, timestamp, 'postgres' as log_type, cast(p.sql_state_code as string) as status,
    case when p.error_severity in ('ERROR', 'FATAL') then 'error' when p.error_severity = 'WARNING' then 'warning' else 'success' end as level,
    null as pathname
  from postgres_logs cross join unnest(metadata) as m cross join unnest(m.parsed) as p
  union all
  select id, timestamp, 'edge', cast(r.status_code as string), case when r.status_code between 400 and 499 then 'warning' end, q.path
  from edge_logs cross join unnest(metadata) as m cross join unnest(m.request) as q cross join unnest(m.response) as r
  where q.path like '/rest/%'`;

let server: EndpointTestServer;
let harness: PlanHarness;

beforeAll(async () => {
  await initSqlParser();
  server = await startEndpointServer({ now: NOW });
  await server.index('postgres_logs', [...POSTGRES, ...LONELY, ...CASTODD.slice(2), SAMETIE[0]!]);
  await server.index('edge_logs', [...EDGE, ...CASTODD.slice(0, 2), SAMETIE[1]!, ...MANY_EDGE]);
  await server.index('postgres_logs', MANY_POSTGRES);
  await server.index('auth_logs', MANY_AUTH);
  await server.index('function_edge_logs', MANY_FUNCTIONS);
  harness = await PlanHarness.start(server, NOW, 'service-union');
}, 180_000);

afterAll(async () => {
  await harness?.close();
  await server?.close();
});

const plan = (sql: string, params: Record<string, string>): Promise<Plan> => harness.plan(sql, params);
const run = (planned: Plan) => harness.run(planned);

/** Runs a query as planned and with the engine forced over the same scans; the bytes must be the same. */
async function bothWays(
  sql: string,
  params: Record<string, string>,
): Promise<{ finished: boolean; rows: Record<string, unknown>[]; body: string; plan: Plan }> {
  const planned = await plan(sql, params);
  expect(planned.residual?.unionFinish, sql).toBeDefined();
  const finished = await run(planned);
  const forced = await run({ ...planned, residual: { ...planned.residual!, unionFinish: undefined } });
  expect(forced.engine).toBe(true);
  expect(finished.body, sql).toBe(forced.body);
  // and the engine over every event the branches match, as before their scans were limited
  const unlimited = await run({ ...planned, scans: planned.scans.map(unlimitedScan), residual: { ...planned.residual!, unionFinish: undefined } });
  expect(unlimited.body, sql).toBe(forced.body);
  return { finished: !finished.engine, rows: forced.body.startsWith('[') ? JSON.parse(forced.body) : [], body: forced.body, plan: planned };
}

/** A scan reading every event its filter matches, whether or not its rows are limited. */
function unlimitedScan(scan: Scan): Scan {
  if (scan.kind !== 'events' || scan.take.kind === 'all') return scan;
  return { ...scan, search: { ...scan.search, query: { bool: { filter: [...scan.scope, ...scan.predicates] } } }, take: { kind: 'all' } };
}

const limits = (planned: Plan) =>
  planned.scans.map((scan) => ((scan as EventScan).take.kind === 'limit' ? (scan as EventScan & { take: { rows: number } }).take.rows : 'all'));

describe("the service finishes a UNION ALL with the engine's bytes", () => {
  it('the unified logs page: each branch limited to the page in the store, merged newest first, ties on timestamp told apart by id', async () => {
    const { finished, rows, plan: planned } = await bothWays(UNIFIED, { project: 'union', ...HOUR });
    expect(finished).toBe(true);
    expect(limits(planned)).toEqual([50, 50]);
    expect(rows).toHaveLength(50);
    expect(rows.slice(0, 5).map((row) => [row.id, row.log_type, row.status, row.level])).toEqual([
      ['ed139', 'postgrest', null, 'success'],
      ['pg069', 'postgres', '06000', 'error'],
      ['ed137', 'postgrest', '500', 'error'],
      ['pg068', 'postgres', '05000', 'error'],
      ['ed135', 'postgrest', '302', 'success'],
    ]);
    const tied = rows.filter((row) => String(row.id).startsWith('tie'));
    expect(tied.map((row) => row.id)).toEqual(['tie-c', 'tie-b', 'tie-a']);
  });

  it('pages by OFFSET (each branch reads offset + limit), and past the last row', async () => {
    for (const [suffix, take] of [
      ['LIMIT 50 OFFSET 20', 70],
      ['LIMIT 10 OFFSET 130', 140],
      ['LIMIT 5 OFFSET 500', 505],
    ] as const) {
      const sql = UNIFIED.replace('LIMIT 50', suffix);
      const { finished, plan: planned } = await bothWays(sql, { project: 'union', ...HOUR });
      expect(finished, suffix).toBe(true);
      expect(limits(planned)).toEqual([take, take]);
    }
    const { rows } = await bothWays(UNIFIED.replace('LIMIT 50', 'LIMIT 10 OFFSET 140'), { project: 'union', ...HOUR });
    // 72 postgres events (the oldest with two rows) and 71 edge rows under /rest/
    expect(rows.map((row) => row.id)).toEqual(['pg001', 'ed001', 'pg000', 'multi', 'multi']);
  });

  it('a branch with no rows, and a project with nothing at all', async () => {
    const lonely = await bothWays(UNIFIED, { project: 'lonely', ...HOUR });
    expect(lonely.finished).toBe(true);
    expect(lonely.rows.map((row) => row.id)).toEqual(['lo7', 'lo6', 'lo5', 'lo4', 'lo3', 'lo2', 'lo1', 'lo0']);
    const nothing = await bothWays(UNIFIED, { project: 'nobody', ...HOUR });
    expect([nothing.finished, nothing.rows]).toEqual([true, []]);
  });

  it('leaves to the engine what it does not compute as the engine does: two rows of one event at the edge, a CAST of a FLOAT64, full ties', async () => {
    const multi = await bothWays(UNIFIED.replace('LIMIT 50', 'LIMIT 2 OFFSET 142'), { project: 'union', ...HOUR });
    expect(multi.finished).toBe(false);
    const castodd = await bothWays(UNIFIED, { project: 'castodd', ...HOUR });
    expect(castodd.finished).toBe(false);
    expect(castodd.rows.map((row) => row.status)).toEqual([null, '404.5', '200']);
    const sametie = await bothWays(UNIFIED, { project: 'sametie', ...HOUR });
    expect(sametie.finished).toBe(false);
  });

  it('four log types, each branch limited, pages merged across them', async () => {
    for (const page of ['limit 10', 'limit 10 offset 10', 'limit 10 offset 30']) {
      const { finished, rows, plan: planned } = await bothWays(FOUR_TYPES.replace('limit 10', page), { project: 'many', ...HOUR });
      expect(finished, page).toBe(true);
      expect(limits(planned), page).toEqual(Array(4).fill(Number(page.split(' ')[1]) + Number(page.split(' ')[3] ?? 0)));
      if (page === 'limit 10') expect(new Set(rows.map((row) => row.log_type))).toEqual(new Set(['postgres', 'postgrest', 'auth', 'edge function']));
    }
  });

  it('a union written without WITH, ordered by name and ordinal, both directions', async () => {
    for (const order of ['order by timestamp desc, id desc limit 30', 'order by 2 desc, 1 desc limit 7 offset 3', 'order by timestamp, id limit 20 offset 3']) {
      const { finished, plan: planned } = await bothWays(`${DIRECT} ${order}`, { project: 'union', ...HOUR });
      expect(finished, order).toBe(true);
      // only newest-first pages are taken in the store
      expect(
        limits(planned).every((take) => take !== 'all'),
        order,
      ).toBe(!order.includes('timestamp, id'));
    }
  });
});
