import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYWORD_IGNORE_ABOVE, type StoredEvent } from '../../shared/event-index.ts';
import { eventShape } from '../../shared/event-shape.ts';
import type { Plan } from '../../src/planner/index.ts';
import { initSqlParser } from '../../src/sql/index.ts';
import { ORACLE_CASES } from '../fixtures/bigquery-oracle.ts';
import { PlanHarness } from '../support/plan-harness.ts';
import { BOOTSTRAP_KEY, startEndpointServer, storedTimestamp, type EndpointTestServer } from '../support/endpoint-server.ts';
import { sandboxDataset } from '../support/sandbox-data.ts';

/**
 * A residual query the service finishes itself answers the bytes the engine answers: every query
 * the planner admits (the studio queries, the oracle's cases over tables, and shapes written here)
 * runs twice over the same indexed events, once as planned and once with the engine forced, and the
 * JSON of the rows (or the error) must be identical. The events include several records per array,
 * missing records, NULLs, a field whose type differs between events, non-ASCII text whose UTF-8 and
 * UTF-16 orders differ, and tied timestamps.
 */

interface StudioQuery {
  id: string;
  sql: string;
  params: Record<string, string>;
}
const studio: StudioQuery[] = JSON.parse(readFileSync(new URL('../fixtures/examples/studio-queries.json', import.meta.url), 'utf8'));

const NOW = Date.UTC(2024, 0, 2);
const dataset = sandboxDataset({ perSource: 720, projects: ['default', 'other'] });
const DAY = { iso_timestamp_start: '2023-12-31T12:00:00.000Z', iso_timestamp_end: '2024-01-02T00:00:00.000Z' };

function odd(id: string, minute: number, metadata: Record<string, unknown>, extraMicros = 0): StoredEvent {
  return {
    id,
    timestamp: storedTimestamp(Date.UTC(2024, 0, 1, 6, minute), extraMicros),
    event_message: `odd ${id}`,
    project: 'odd',
    metadata,
    shape: eventShape(metadata),
  };
}

/** Project `odd`: values the service must leave to the engine, and values it must convert exactly. */
const ODD_EVENTS: StoredEvent[] = [
  odd('o1', 1, { request: { method: 'GET', path: '/\u{1F600}' }, response: { status_code: 500, origin_time: 1.5, code: 500 } }),
  odd('o2', 2, { request: { method: 'GET', path: '/\uFF5E' }, response: { status_code: 404, origin_time: 2, code: '404' } }),
  odd('o3', 3, { request: { method: null, path: '/ä' }, response: { status_code: 503 } }),
  odd('o4', 4, {
    request: [
      { method: 'GET', path: '/x' },
      { method: 'POST', path: '/y' },
    ],
    response: { status_code: 502 },
  }),
  odd('o5', 5, { request: { method: 'PUT', path: '/same' } }),
  odd('o6', 5, { request: { method: 'PUT', path: '/same' }, response: { status_code: 400 } }),
  odd('o7', 7, { request: { method: 'GET', path: '/z' }, response: { status_code: 200 } }, 1),
];

/** Project `plain`: every event with one request and one response record, as the demo data has them. */
const PLAIN_EVENTS: StoredEvent[] = Array.from({ length: 40 }, (_, n) => {
  const metadata = { request: { method: n % 2 ? 'GET' : 'POST', path: `/rest/v1/t${n % 5}` }, response: { status_code: [200, 404, 500][n % 3] } };
  return {
    id: `p${n}`,
    timestamp: storedTimestamp(Date.UTC(2024, 0, 1, 3, n)),
    event_message: `plain ${n}`,
    project: 'plain',
    metadata,
    shape: eventShape(metadata),
  };
});

/** Project `text`: paths whose UTF-8 order differs from their UTF-16 order, one record each. */
const TEXT_EVENTS: StoredEvent[] = ['/\u{1F600}', '/\uFF5E', '/ä', '/a', '/Z', '/'].map((path, n) => {
  const metadata = { request: { method: 'GET', path } };
  return {
    id: `t${n}`,
    timestamp: storedTimestamp(Date.UTC(2024, 0, 1, 4, n)),
    event_message: `text ${n}`,
    project: 'text',
    metadata,
    shape: eventShape(metadata),
  };
});

/** Project `records`: whole records to answer as they are, in shapes the engine converts by its inferred types. */
const RECORD_METADATA: (Record<string, unknown> | Record<string, unknown>[] | undefined)[] = [
  {
    request: [
      { method: 'GET', headers: { accept: 'a "quoted" \\ back\nslash\ttab \u0001 \u{1F600}' }, tags: ['x', 'y'] },
      { method: 'POST', headers: [{ accept: '*/*' }, { accept: 'text/html' }], tags: [] },
    ],
    response: { status_code: 200, size: 2 ** 60, ratio: 1 },
    grid: [[1, 2], [3], []],
  },
  { response: { status_code: 500, ratio: 0.25, size: -(2 ** 55) }, empty: [], '1': 'a numeric key' },
  undefined,
  [{ request: { method: 'PUT' } }, { response: { status_code: 404 } }],
  { request: { method: 'GET', tags: null }, response: null },
];
const RECORD_EVENTS: StoredEvent[] = RECORD_METADATA.map((metadata, n) => ({
  id: `r${n}`,
  timestamp: storedTimestamp(Date.UTC(2024, 0, 1, 5, n)),
  event_message: `records ${n}`,
  project: 'records',
  ...(metadata === undefined ? {} : { metadata }),
  shape: eventShape(metadata),
}));

/** A request record of project `groups` (one per event, so every event is regular) and its events. */
function groupEvent(project: string, n: number, request: Record<string, unknown>): StoredEvent {
  const metadata = { request, response: { status_code: 200 } };
  return {
    id: `${project}-${n}`,
    timestamp: storedTimestamp(Date.UTC(2024, 0, 1, 7, n)),
    event_message: `${project} ${n}`,
    project,
    metadata,
    shape: eventShape(metadata),
  };
}

/**
 * Project `groups`: nested request records grouped in the store, with NULL and missing keys, keys whose
 * UTF-8 and UTF-16 orders differ, integers, fractions (a float field: the store holds them as float32)
 * and booleans, and groups of equal counts (ORDER BY ties).
 * Project `long`: the same and one path longer than the keyword's ignore_above, which the store does not index.
 */
const GROUP_REQUESTS: Record<string, unknown>[] = [
  { path: '/a', search: '?x', port: 443, secure: true, ratio: 0.1, cf: { country: 'DE' } },
  { path: '/a', search: '?x', port: 443, secure: true, ratio: 0.1, cf: { country: 'DE' } },
  { path: '/a', port: 80, secure: false, cf: { country: null } },
  { path: '/b', search: '', port: 80, secure: false, ratio: 0.25, cf: { country: 'US' } },
  { path: '/b', search: '', port: 8080, cf: {} },
  { path: null, search: '?x', port: 443, secure: true },
  { search: '?y', cf: { country: 'FR' } },
  { path: '/\u{1F600}', search: '?x', port: 443, cf: { country: 'FR' } },
  { path: '/\uFF5E', search: '?x', port: 443, cf: { country: 'US' } },
  { path: '/ä', port: 443, secure: true, cf: { country: 'DE' } },
];
const GROUP_EVENTS: StoredEvent[] = [
  ...GROUP_REQUESTS.map((request, n) => groupEvent('groups', n, request)),
  ...GROUP_REQUESTS.map((request, n) => groupEvent('long', n, request)),
  groupEvent('long', GROUP_REQUESTS.length, { path: `/${'x'.repeat(KEYWORD_IGNORE_ABOVE)}`, search: '?x', port: 443 }),
];

const REQUESTS = 'from edge_logs cross join unnest(metadata) as m cross join unnest(m.request) as request';

/** Groups of nested records, as the studio's top paths and countries ask for them, and near shapes. */
const GROUP_SHAPES: [string, string][] = [
  ['top paths, the studio query', studio.find((query) => query.id === 'tpl_top_paths')!.sql],
  ['countries, the studio query', studio.find((query) => query.id === 'geo_usage_countries')!.sql],
  ['top paths', `select request.path as path, request.search as params, count(timestamp) as c ${REQUESTS} group by path, params order by c desc limit 100`],
  [
    'countries, no ORDER BY',
    `select cf.country as country, countif(t.timestamp >= '2024-01-01T07:05:00Z') as late, countif(t.timestamp < '2024-01-01T07:05:00Z') as early
     from edge_logs t cross join unnest(metadata) as m cross join unnest(m.request) as request cross join unnest(request.cf) as cf
     where cf.country is not null group by cf.country`,
  ],
  ['paths with NULL, no ORDER BY', `select request.path, count(*) as n ${REQUESTS} group by 1`],
  ['paths by name, descending', `select request.path as p, count(*) as n ${REQUESTS} group by p order by p desc`],
  ['ports by count, ties', `select request.port as port, count(*) as n ${REQUESTS} group by port order by n desc limit 2`],
  [
    'ports of each path',
    `select request.path as p, sum(request.port) as ports, min(request.port) as low, avg(request.port) as mean, count(distinct m.function_id) as fns
     ${REQUESTS} group by p order by p`,
  ],
  ['fractions', `select request.ratio as ratio, count(*) as n, max(request.ratio) as top ${REQUESTS} group by ratio order by ratio`],
  [
    'secure flags',
    `select request.secure as secure, count(*) as n, max(response.status_code) as top ${REQUESTS} cross join unnest(m.response) as response group by secure`,
  ],
];

/** Whole records selected as they are, over the plain and odd projects and the one above. */
const RECORD_SHAPES: [string, string][] = [
  ['one log by id', "select id, timestamp, event_message, metadata from edge_logs where id = 'r0' limit 1"],
  ['one log by id, no metadata', "select id, timestamp, event_message, metadata from edge_logs where id = 'r2' limit 1"],
  ['whole metadata, newest first', 'select id, metadata from edge_logs order by timestamp desc limit 10'],
  ['an unnested record', 'select id, m from edge_logs cross join unnest(metadata) as m order by timestamp desc limit 10'],
  ['the unnested record of one log', "select id, m from edge_logs cross join unnest(metadata) as m where id = 'r0' order by timestamp desc limit 10"],
  ['a record field of records', 'select id, m.request as r from edge_logs cross join unnest(metadata) as m order by timestamp desc limit 10'],
  [
    'a record of a record, by a LEFT JOIN',
    'select id, response from edge_logs left join unnest(metadata) as m on true left join unnest(m.response) as response on true order by timestamp desc limit 10',
  ],
  ['ordered by a record (refused)', 'select id, metadata from edge_logs order by metadata limit 10'],
];

/**
 * Projects `statuses`, `casts` and `hex`: a status kept as text (as auth logs keep it), read through CAST
 * to INT64; `casts` adds text BigQuery's CAST refuses, `hex` hexadecimal text it reads. Levels whose UTF-8 and UTF-16 orders differ, and
 * a `needle` in some messages.
 */
const WHERE_VALUES: [string, (string | undefined)[], (string | null)[]][] = [
  ['statuses', ['400', '0404', '+503', '599', '600', '-1', undefined, '200', '500'], ['error', 'Error', 'ä', '\u{1F600}', '\uFF5E', null, 'warn']],
  ['casts', ['400', ' 500', 'abc', '0x1F4', '404'], ['error', 'info']],
  ['hex', ['0x1F4', '404', '0X190', '-0', '007'], ['error', 'info']],
];
const WHERE_EVENTS: StoredEvent[] = WHERE_VALUES.flatMap(([project, statuses, levels]) =>
  statuses.map((status, n) => {
    const metadata = { ...(status === undefined ? {} : { status }), level: levels[n % levels.length], flag: n % 3 === 0 };
    return {
      id: `${project}-${n}`,
      timestamp: storedTimestamp(Date.UTC(2024, 0, 1, 7, n)),
      event_message: n % 2 === 0 ? `user 3f2a7c1e needle ${n}` : `other ${n}`,
      project,
      metadata,
      shape: eventShape(metadata),
    };
  }),
);

/** WHERE conditions the store matches only as a superset: the service applies them to the rows, or leaves them to the engine. */
const UNNESTED = 'from edge_logs cross join unnest(metadata) as m';
/** An alternative no row takes that the store cannot check, so the condition beside it is left to the service. */
const OR_CAST = 'or cast(m.status as int64) = 123456';
const WHERE_SHAPES: [string, string][] = [
  [
    'the auth panel query',
    "select id, timestamp, event_message, m.status from edge_logs cross join unnest(metadata) as m where (regexp_contains(event_message, '3f2a7c1e')) and (cast(m.status as int64) between 400 and 499 or cast(m.status as int64) between 500 and 599) order by timestamp desc limit 5",
  ],
  ['a cast compared', `select id, m.status ${UNNESTED} where cast(m.status as int64) >= 500 order by timestamp desc limit 10`],
  ['a cast not between', `select id ${UNNESTED} where cast(m.status as int64) not between 400 and 499 order by timestamp desc limit 10`],
  ['a cast is null', `select id ${UNNESTED} where cast(m.status as int64) is null order by timestamp desc limit 10`],
  ['a cast in a list', `select id ${UNNESTED} where cast(m.status as int64) in (404, -1, 600) order by id limit 10`],
  ['text like', `select id, m.level ${UNNESTED} where m.level like '%rr%' ${OR_CAST} order by timestamp desc limit 10`],
  ['text like, anchored', `select id, m.level ${UNNESTED} where m.level like 'e%r' ${OR_CAST} order by timestamp desc limit 10`],
  ['text not like', `select id, m.level ${UNNESTED} where m.level not like '%o%' ${OR_CAST} order by timestamp desc limit 10`],
  ['text ordered by bytes', `select id, m.level ${UNNESTED} where m.level > 'z' ${OR_CAST} order by timestamp desc limit 10`],
  // U+FF5E sorts before U+1F600 by UTF-8 bytes, after it by UTF-16 units
  ['text below an emoji', `select id, m.level ${UNNESTED} where m.level < '\u{1F600}' ${OR_CAST} order by timestamp desc limit 10`],
  ['in or is null', `select id, m.level ${UNNESTED} where m.level in ('error', 'ä') or m.level is null ${OR_CAST} order by timestamp desc limit 10`],
  ['not equal, NULL dropped', `select id, m.level ${UNNESTED} where not (m.level = 'error' ${OR_CAST}) order by timestamp desc limit 10`],
  ['a boolean', `select id ${UNNESTED} where m.flag = true ${OR_CAST} order by timestamp desc limit 10`],
  ['plain text in a field', `select id ${UNNESTED} where regexp_contains(m.level, 'rr') ${OR_CAST} order by timestamp asc limit 10`],
  ['plain text in the message', `select id ${UNNESTED} where regexp_contains(event_message, 'needle 2') ${OR_CAST} order by timestamp asc limit 10`],
  ['one row without order', `select id ${UNNESTED} where cast(m.status as int64) = 404 limit 1`],
  // the store decides both alternatives on regular events, so the limit is theirs; the other events' rows go to the engine
  ['a regexp', `select id ${UNNESTED} where regexp_contains(m.level, 'e.r') ${OR_CAST} order by timestamp desc limit 10`],
  ['a parameter (refused)', `select id ${UNNESTED} where cast(m.status as int64) > 1e2 or m.level = @project order by id limit 10`],
  ['a float literal', `select id ${UNNESTED} where cast(m.status as int64) > 4.035e2 and m.level is not null order by id limit 10`],
];

/** An auth log whose message is `message` (JSON as GoTrue writes it, or not), `n` minutes into 2024-01-01 08:00. */
function authEvent(project: string, n: number, message: string): StoredEvent {
  const metadata = { level: n % 2 ? 'info' : 'error' };
  return {
    id: `${project}-${n}`,
    timestamp: storedTimestamp(Date.UTC(2024, 0, 1, 8, n * 7)),
    event_message: message,
    project,
    metadata,
    shape: eventShape(metadata),
  };
}

const auth = (action: unknown, actor: unknown) => JSON.stringify({ auth_event: { action, actor_id: actor }, level: 'info' });

/**
 * Project `auth`: messages the service reads as the engine does: actions in and out of the report's list,
 * actors repeated within an hour and across hours, a NULL, numeric, boolean, record or missing actor,
 * escapes, text that is not JSON, JSON that is not an object. Project `authodd` adds a message DuckDB
 * reads where strict JSON does not (a trailing comma): the engine's.
 */
const AUTH_MESSAGES = [
  auth('login', 'u1'),
  auth('login', 'u1'),
  auth('token_refreshed', 'u2'),
  auth('logout', 'u3'),
  auth('user_signedup', null),
  auth('login', 12345678901234567890n.toString()),
  '{"auth_event":{"action":"login","actor_id":12345678901234567890}}',
  '{"auth_event":{"action":"lo\\u0067in","actor_id":"\\u00e4\\"q\\""}}',
  '{"auth_event":{"action":"login","actor_id":{"id":"u4"}}}',
  '{"auth_event":{"action":"login"}}',
  'not json: login u5',
  '["login"]',
  auth('user_modified', true),
  auth('login', 'u2'),
  auth('token_refreshed', 'u1'),
  auth('login', '\u{1F600}'),
  auth('login', '\uFF5E'),
  auth(null, 'u6'),
  auth('login', 'u1'),
  auth('token_refreshed', 'u2'),
];
const AUTH_EVENTS: StoredEvent[] = [
  ...AUTH_MESSAGES.map((message, n) => authEvent('auth', n, message)),
  ...AUTH_MESSAGES.map((message, n) => authEvent('authodd', n, message)),
  authEvent('authodd', AUTH_MESSAGES.length, '{"auth_event":{"action":"login","actor_id":"u7",}}'),
];

const ACTION = "json_value(event_message, '$.auth_event.action')";
const ACTOR = "json_value(event_message, '$.auth_event.actor_id')";

/** GROUP BY shapes the service may finish over auth logs' JSON messages. */
const AUTH_GROUP_SHAPES: [string, string][] = [
  ['the active users report', studio.find((query) => query.id === 'auth_report_active_users')!.sql],
  [
    'actions by hour, NULL first',
    `select timestamp_trunc(timestamp, hour) as h, ${ACTION} as action, count(*) as n from auth_logs group by h, action order by h desc, action`,
  ],
  ['actors by count, ties', `select ${ACTOR} as actor, count(*) as n from auth_logs group by actor order by n desc limit 3`],
  ['actors by count, then name', `select ${ACTOR} as actor, count(*) as n from auth_logs group by 1 order by count(*) desc, actor limit 4`],
  ['one group', `select count(distinct ${ACTOR}) as actors, count(*) as n from auth_logs where ${ACTION} = 'login'`],
  [
    'known and unknown actors by day',
    `select timestamp_trunc(timestamp, day) as d, countif(${ACTOR} is null) as anonymous, count(${ACTOR}) as known from auth_logs group by d order by d`,
  ],
  [
    'extremes per action',
    `select ${ACTION} as action, min(${ACTOR}) as first, max(id) as last_id, min(timestamp) as since from auth_logs group by action order by action desc`,
  ],
  [
    'levels by minute',
    'select timestamp_trunc(timestamp, minute) as t, m.level, count(*) as n from auth_logs cross join unnest(metadata) as m group by t, m.level order by t limit 5',
  ],
  ['no ORDER BY', `select ${ACTION} as action, count(*) as n from auth_logs group by action`],
  ['an average (refused)', `select ${ACTION} as action, avg(length(event_message)) as n from auth_logs group by action order by action`],
  ['HAVING', `select ${ACTION} as action, count(*) as n from auth_logs group by action having n > 1 order by action`],
  ['HAVING on an aggregate (refused)', `select ${ACTION} as action, count(*) as n from auth_logs group by action having count(*) > 1 order by action`],
];

/** GROUP BY shapes over request records the store does not group: a key on the event beside one in its records. */
const RECORD_GROUP_SHAPES: [string, string][] = [
  [
    'hour and method',
    `select timestamp_trunc(timestamp, hour) as h, request.method as method, count(*) as n ${REQUESTS} group by h, method order by h desc, method`,
  ],
  [
    'sums per hour and path',
    `select timestamp_trunc(timestamp, hour) as h, request.path as p, sum(request.port) as ports, min(request.port) as low, count(distinct request.search) as s
     ${REQUESTS} group by h, p order by h, p nulls last`,
  ],
  [
    'paths by count',
    `select timestamp_trunc(timestamp, day) as d, request.path as p, count(*) as n ${REQUESTS} group by d, p order by count(*) desc, p desc limit 3`,
  ],
];

const EDGE = 'from edge_logs cross join unnest(metadata) as m cross join unnest(m.request) as request cross join unnest(m.response) as response';
const LEFT =
  'from edge_logs left join unnest(metadata) as m on true left join unnest(m.request) as request on true left join unnest(m.response) as response on true';

/** Shapes the planner admits, and near ones it does not, over each project. */
const SHAPES: [string, string][] = [
  [
    'dashboard',
    `select id, timestamp, event_message, request.method, request.path, response.status_code ${EDGE} where response.status_code >= 400 order by timestamp desc limit 100`,
  ],
  ['dashboard, offset', `select id, timestamp, request.path ${EDGE} where response.status_code >= 400 order by timestamp desc, id desc limit 10 offset 3`],
  ['left unnests', `select id, request.path, response.status_code ${LEFT} order by timestamp desc limit 50`],
  [
    'comma unnests',
    'select id, response.status_code from edge_logs, unnest(metadata) as m, unnest(m.response) as response where response.status_code >= 500 order by timestamp desc limit 20',
  ],
  ['ordered by a string', `select request.path as p, timestamp ${EDGE} order by p, timestamp limit 30`],
  ['ordered by a string, descending', `select request.path, id ${EDGE} order by request.path desc, id limit 30`],
  ['ascending', 'select id, timestamp from edge_logs order by timestamp asc limit 20'],
  ['ordinal', 'select id, timestamp from edge_logs order by 2 desc limit 5'],
  ['unselected key', 'select event_message from edge_logs order by timestamp desc limit 5'],
  ['nulls first', `select id, request.method ${LEFT} order by request.method desc nulls first, timestamp desc limit 10`],
  ['field in another case', `select id, request.METHOD ${EDGE} order by timestamp desc limit 5`],
  ['missing field', `select id, request.nosuch ${EDGE} order by timestamp desc limit 5`],
  ['a field of two types', `select id, response.code ${EDGE} order by timestamp desc limit 10`],
  ['float field', `select id, response.origin_time ${EDGE} order by response.origin_time desc, id limit 10`],
  [
    'record field of a record-holding unnest',
    'select id, m.function_id from edge_logs cross join unnest(metadata) as m order by m.function_id, timestamp desc limit 10',
  ],
  ['one row without order', "select id, timestamp from edge_logs where id = 'default-edge_logs-5' limit 1"],
  [
    'a TIMESTAMP cast to DATETIME',
    `select cast(timestamp as datetime) as timestamp, id ${EDGE} where response.status_code >= 400 order by timestamp desc limit 10`,
  ],
  ['hourly counts', 'select timestamp_trunc(timestamp, hour) as h, count(*) as n from edge_logs group by h order by h'],
  [
    'minute counts, newest first',
    `select timestamp_trunc(timestamp, minute) as t, count(*) as n, countif(response.status_code >= 500) as errors ${EDGE} group by t order by t desc limit 5`,
  ],
  ['one group', 'select count(*) as n from edge_logs'],
  [
    'hourly counts as DATETIME',
    'select cast(timestamp_trunc(timestamp, hour) as datetime) as hour, count(*) as n from edge_logs group by hour order by hour desc',
  ],
  ['groups by count', `select request.path as path, count(*) as c ${EDGE} group by path order by c desc limit 3`],
  [
    'an array no row holds, by a LEFT JOIN',
    'select id, parsed.error_severity from postgres_logs left join unnest(metadata) as m on true left join unnest(m.parsed) as parsed on true order by timestamp desc limit 10',
  ],
  [
    'postgres',
    "select id, parsed.error_severity from postgres_logs cross join unnest(metadata) as m cross join unnest(m.parsed) as parsed where parsed.error_severity = 'ERROR' order by timestamp desc limit 10",
  ],
  ['computed (refused)', 'select id, upper(event_message) as e from edge_logs order by timestamp desc limit 5'],
];

let server: EndpointTestServer;
let harness: PlanHarness;

beforeAll(async () => {
  await initSqlParser();
  server = await startEndpointServer({ now: NOW });
  for (const [source, events] of dataset.events) await server.index(source, events);
  await server.index('edge_logs', [...ODD_EVENTS, ...PLAIN_EVENTS, ...TEXT_EVENTS, ...RECORD_EVENTS, ...GROUP_EVENTS, ...WHERE_EVENTS]);
  await server.index('auth_logs', AUTH_EVENTS);
  harness = await PlanHarness.start(server, NOW, 'service-finish');
}, 180_000);

afterAll(async () => {
  await harness?.close();
  await server?.close();
});

const plan = (sql: string, params: Record<string, string>): Promise<Plan> => harness.plan(sql, params);
const run = (planned: Plan) => harness.run(planned);

/** An answer's rows in one order, for answers whose order the query leaves open. */
function sortedRows(body: string): string[] {
  return (JSON.parse(body) as unknown[]).map((row) => JSON.stringify(row)).sort();
}

/** The plan with no finish in the service, also for the events an aggregation falls back to. */
function engineForced(planned: Plan): Plan {
  const scans = planned.scans.map((scan) =>
    scan.kind === 'aggregation' ? { ...scan, fallback: { ...scan.fallback, residual: { ...scan.fallback.residual, finish: undefined } } } : scan,
  );
  return { ...planned, scans, ...(planned.residual ? { residual: { ...planned.residual, finish: undefined } } : {}) };
}

/** Runs an admitted query both ways and compares the bytes; returns whether the service finished it without the engine. */
async function bothWays(sql: string, params: Record<string, string>): Promise<{ admitted: boolean; finished: boolean; where?: boolean; body?: string }> {
  const planned = await plan(sql, params);
  if (!planned.residual?.finish) return { admitted: false, finished: false };
  const finished = await run(planned);
  const forced = await run(engineForced(planned));
  expect(forced.engine).toBe(true);
  expect(finished.body, sql).toBe(forced.body);
  const finish = planned.residual.finish;
  const held = finish.where !== undefined || ('supersetWhere' in finish && finish.supersetWhere !== undefined);
  return { admitted: true, finished: !finished.engine, where: held, body: forced.body };
}

describe("the service finishes a query with the engine's bytes", () => {
  it('the 20 studio queries: each one admitted answers as the engine does', async () => {
    const finished: string[] = [];
    for (const query of studio) {
      for (const params of [query.params, { ...query.params, ...DAY }]) {
        const result = await bothWays(query.sql, params);
        if (result.finished) finished.push(query.id);
      }
    }
    expect([...new Set(finished)]).toEqual([
      'preview_postgres_local_errors',
      'preview_function_logs',
      'preview_auth_user_errors',
      'preview_fn_edge_local',
      'preview_realtime',
      'preview_storage_search',
      'preview_postgrest',
      'preview_count_edge_errors',
      'single_log_by_id',
      'tpl_pg_errors',
      'shared_api_total_requests_auth',
      'auth_report_active_users',
      'edgefn_v2_total_invocations',
    ]);
  });

  it('shapes written for it, over a day of two projects and over odd values', async () => {
    const outcomes: string[] = [];
    for (const [name, sql] of SHAPES) {
      for (const project of ['default', 'odd']) {
        const result = await bothWays(sql, { project, ...DAY });
        outcomes.push(`${name} @${project}: ${result.finished ? 'service' : result.admitted ? 'engine' : 'refused'}`);
      }
    }
    // engine: an irregular event may reach the answer, ORDER BY ties, a group-by falling back, an array no row holds unnested by a LEFT JOIN
    expect(outcomes).toEqual([
      'dashboard @default: engine',
      'dashboard @odd: engine',
      'dashboard, offset @default: service',
      'dashboard, offset @odd: engine',
      'left unnests @default: engine',
      'left unnests @odd: engine',
      'comma unnests @default: service',
      'comma unnests @odd: service',
      'ordered by a string @default: engine',
      'ordered by a string @odd: engine',
      'ordered by a string, descending @default: engine',
      'ordered by a string, descending @odd: engine',
      'ascending @default: service',
      'ascending @odd: engine',
      'ordinal @default: service',
      'ordinal @odd: engine',
      'unselected key @default: service',
      'unselected key @odd: engine',
      'nulls first @default: engine',
      'nulls first @odd: engine',
      'field in another case @default: service',
      'field in another case @odd: engine',
      'missing field @default: service',
      'missing field @odd: engine',
      'a field of two types @default: service',
      'a field of two types @odd: engine',
      'float field @default: engine',
      'float field @odd: engine',
      'record field of a record-holding unnest @default: service',
      'record field of a record-holding unnest @odd: engine',
      'one row without order @default: service',
      'one row without order @odd: service',
      'a TIMESTAMP cast to DATETIME @default: service',
      'a TIMESTAMP cast to DATETIME @odd: engine',
      'hourly counts @default: service',
      'hourly counts @odd: service',
      'minute counts, newest first @default: service',
      'minute counts, newest first @odd: service',
      'one group @default: service',
      'one group @odd: service',
      'hourly counts as DATETIME @default: service',
      'hourly counts as DATETIME @odd: service',
      'groups by count @default: service',
      'groups by count @odd: engine',
      'an array no row holds, by a LEFT JOIN @default: service',
      'an array no row holds, by a LEFT JOIN @odd: engine',
      'postgres @default: service',
      'postgres @odd: service',
      'computed (refused) @default: refused',
      'computed (refused) @odd: refused',
    ]);
  });

  it('groups of nested records, counted in the store as the engine counts the events', async () => {
    const outcomes: string[] = [];
    for (const [name, sql] of GROUP_SHAPES) {
      for (const project of ['groups', 'long', 'plain', 'default']) {
        const params = { project, ...DAY };
        const planned = await plan(sql, params);
        const aggregation = planned.scans.find((scan) => scan.kind === 'aggregation');
        const result = await bothWays(sql, params);
        outcomes.push(`${name} @${project}: ${aggregation ? 'pushed' : 'pulled'}, ${result.finished ? 'service' : result.admitted ? 'engine' : 'refused'}`);
        if (!aggregation) continue;
        // the same groups as the engine makes from the events (in its own order where the query sets none)
        const fromEvents = await run({ ...planned, scans: [aggregation.fallback.scan], residual: aggregation.fallback.residual });
        const pushed = await run(planned);
        expect(sortedRows(pushed.body), `${name} @${project}`).toEqual(sortedRows(fromEvents.body));
      }
    }
    // default holds events with several requests; long a path the store did not index: both run over the
    // events (whose groups the service counts unless the order has ties or the query an AVG), except where the long
    // path's event has no row (no cf record to unnest); fractions are never pushed, and their FLOAT64 keys are grouped by the engine
    expect(outcomes).toEqual([
      'top paths, the studio query @groups: pushed, service',
      'top paths, the studio query @long: pushed, engine',
      'top paths, the studio query @plain: pushed, service',
      'top paths, the studio query @default: pushed, engine',
      'countries, the studio query @groups: pushed, service',
      'countries, the studio query @long: pushed, service',
      'countries, the studio query @plain: pushed, service',
      'countries, the studio query @default: pushed, engine',
      'top paths @groups: pushed, service',
      'top paths @long: pushed, engine',
      'top paths @plain: pushed, service',
      'top paths @default: pushed, engine',
      'countries, no ORDER BY @groups: pushed, service',
      'countries, no ORDER BY @long: pushed, service',
      'countries, no ORDER BY @plain: pushed, service',
      'countries, no ORDER BY @default: pushed, engine',
      'paths with NULL, no ORDER BY @groups: pushed, service',
      'paths with NULL, no ORDER BY @long: pushed, engine',
      'paths with NULL, no ORDER BY @plain: pushed, service',
      'paths with NULL, no ORDER BY @default: pushed, engine',
      'paths by name, descending @groups: pushed, service',
      'paths by name, descending @long: pushed, service',
      'paths by name, descending @plain: pushed, service',
      'paths by name, descending @default: pushed, service',
      'ports by count, ties @groups: pushed, service',
      'ports by count, ties @long: pushed, service',
      'ports by count, ties @plain: pushed, service',
      'ports by count, ties @default: pushed, engine',
      'ports of each path @groups: pushed, service',
      'ports of each path @long: pushed, engine',
      'ports of each path @plain: pushed, service',
      'ports of each path @default: pushed, engine',
      'fractions @groups: pulled, engine',
      'fractions @long: pulled, engine',
      'fractions @plain: pulled, engine',
      'fractions @default: pulled, engine',
      'secure flags @groups: pushed, service',
      'secure flags @long: pushed, engine',
      'secure flags @plain: pushed, service',
      'secure flags @default: pushed, engine',
    ]);
  });

  it('whole records, as the engine converts them by their inferred types', async () => {
    const outcomes: string[] = [];
    for (const [name, sql] of RECORD_SHAPES) {
      for (const project of ['plain', 'odd', 'records']) {
        const result = await bothWays(sql, { project, ...DAY });
        outcomes.push(`${name} @${project}: ${result.finished ? 'service' : result.admitted ? 'engine' : 'refused'}`);
      }
    }
    // engine: a value of another type than its field (odd), an array of several records to unnest (records)
    expect(outcomes).toEqual([
      'one log by id @plain: service',
      'one log by id @odd: service',
      'one log by id @records: service',
      'one log by id, no metadata @plain: service',
      'one log by id, no metadata @odd: service',
      'one log by id, no metadata @records: service',
      'whole metadata, newest first @plain: service',
      'whole metadata, newest first @odd: engine',
      'whole metadata, newest first @records: service',
      'an unnested record @plain: service',
      'an unnested record @odd: engine',
      'an unnested record @records: engine',
      'the unnested record of one log @plain: service',
      'the unnested record of one log @odd: service',
      'the unnested record of one log @records: service',
      'a record field of records @plain: service',
      'a record field of records @odd: engine',
      'a record field of records @records: engine',
      'a record of a record, by a LEFT JOIN @plain: service',
      'a record of a record, by a LEFT JOIN @odd: engine',
      'a record of a record, by a LEFT JOIN @records: engine',
      'ordered by a record (refused) @plain: refused',
      'ordered by a record (refused) @odd: refused',
      'ordered by a record (refused) @records: refused',
    ]);
  });

  it('WHERE conditions the store matches only as a superset, applied by the service to the rows', async () => {
    const outcomes: string[] = [];
    for (const [name, sql] of WHERE_SHAPES) {
      for (const project of ['statuses', 'casts', 'hex', 'default']) {
        const result = await bothWays(sql, { project, ...DAY });
        const answer =
          result.body === undefined ? '' : result.body.startsWith('[') ? `, ${JSON.parse(result.body).length} rows` : `, ${result.body.split(':')[0]}`;
        outcomes.push(`${name} @${project}: ${result.finished ? 'service' : result.admitted ? 'engine' : 'refused'}${result.where ? ', where' : ''}${answer}`);
      }
    }
    // engine: text BigQuery's CAST refuses (its error) or reads as hexadecimal, in any row the store returns (a CAST equal to
    // a few integers is pushed as their digits or text a sign or a 0 starts, so ' 500' and 'abc' are not); refused: a parameter
    expect(outcomes).toEqual([
      'the auth panel query @statuses: service, where, 3 rows',
      'the auth panel query @casts: service, where, 2 rows',
      'the auth panel query @hex: engine, where, 2 rows',
      'the auth panel query @default: service, where, 0 rows',
      'a cast compared @statuses: service, where, 4 rows',
      'a cast compared @casts: engine, where, InvalidQuery',
      'a cast compared @hex: engine, where, 1 rows',
      'a cast compared @default: service, where, 0 rows',
      'a cast not between @statuses: service, where, 6 rows',
      'a cast not between @casts: engine, where, InvalidQuery',
      'a cast not between @hex: engine, where, 3 rows',
      'a cast not between @default: service, where, 0 rows',
      'a cast is null @statuses: service, where, 1 rows',
      'a cast is null @casts: engine, where, InvalidQuery',
      'a cast is null @hex: engine, where, 0 rows',
      'a cast is null @default: service, where, 10 rows',
      'a cast in a list @statuses: service, where, 3 rows',
      'a cast in a list @casts: engine, where, 1 rows',
      'a cast in a list @hex: engine, where, 1 rows',
      'a cast in a list @default: service, where, 0 rows',
      'text like @statuses: service, where, 4 rows',
      'text like @casts: engine, where, 3 rows',
      'text like @hex: engine, where, 3 rows',
      'text like @default: service, where, 0 rows',
      'text like, anchored @statuses: service, where, 2 rows',
      'text like, anchored @casts: engine, where, 3 rows',
      'text like, anchored @hex: engine, where, 3 rows',
      'text like, anchored @default: service, where, 0 rows',
      'text not like @statuses: service, where, 4 rows',
      'text not like @casts: engine, where, InvalidQuery',
      'text not like @hex: engine, where, 0 rows',
      'text not like @default: service, where, 0 rows',
      'text ordered by bytes @statuses: service, where, 3 rows',
      'text ordered by bytes @casts: engine, where, 0 rows',
      'text ordered by bytes @hex: engine, where, 0 rows',
      'text ordered by bytes @default: service, where, 0 rows',
      'text below an emoji @statuses: service, where, 7 rows',
      'text below an emoji @casts: engine, where, 5 rows',
      'text below an emoji @hex: engine, where, 5 rows',
      'text below an emoji @default: service, where, 0 rows',
      'in or is null @statuses: service, where, 4 rows',
      'in or is null @casts: engine, where, InvalidQuery',
      'in or is null @hex: engine, where, 3 rows',
      'in or is null @default: service, where, 10 rows',
      'not equal, NULL dropped @statuses: service, where, 5 rows',
      'not equal, NULL dropped @casts: engine, where, InvalidQuery',
      'not equal, NULL dropped @hex: engine, where, 2 rows',
      'not equal, NULL dropped @default: service, where, 0 rows',
      'a boolean @statuses: service, where, 3 rows',
      'a boolean @casts: engine, where, 2 rows',
      'a boolean @hex: engine, where, 2 rows',
      'a boolean @default: service, where, 0 rows',
      'plain text in a field @statuses: service, where, 4 rows',
      'plain text in a field @casts: engine, where, 3 rows',
      'plain text in a field @hex: engine, where, 3 rows',
      'plain text in a field @default: service, where, 0 rows',
      'plain text in the message @statuses: service, where, 1 rows',
      'plain text in the message @casts: engine, where, InvalidQuery',
      'plain text in the message @hex: engine, where, 1 rows',
      'plain text in the message @default: service, where, 0 rows',
      'one row without order @statuses: service, where, 1 rows',
      'one row without order @casts: engine, where, 1 rows',
      'one row without order @hex: engine, where, 1 rows',
      'one row without order @default: service, where, 0 rows',
      'a regexp @statuses: engine, 2 rows',
      'a regexp @casts: engine, 3 rows',
      'a regexp @hex: engine, 3 rows',
      'a regexp @default: service, 0 rows',
      'a parameter (refused) @statuses: refused',
      'a parameter (refused) @casts: refused',
      'a parameter (refused) @hex: refused',
      'a parameter (refused) @default: refused',
      'a float literal @statuses: service, where, 5 rows',
      'a float literal @casts: engine, where, InvalidQuery',
      'a float literal @hex: engine, where, 2 rows',
      'a float literal @default: service, where, 0 rows',
    ]);
  });

  it('groups of the scanned rows, JSON_VALUE of auth messages among their keys and values, counted in the service', async () => {
    const outcomes: string[] = [];
    const shapes = [
      ...AUTH_GROUP_SHAPES.map(([name, sql]) => [name, sql, ['auth', 'authodd', 'default']] as const),
      ...RECORD_GROUP_SHAPES.map(([name, sql]) => [name, sql, ['plain', 'groups', 'default', 'odd']] as const),
    ];
    for (const [name, sql, projects] of shapes) {
      for (const project of projects) {
        const result = await bothWays(sql, { project, ...DAY });
        const answer = result.body?.startsWith('[') ? `, ${JSON.parse(result.body).length} rows` : '';
        outcomes.push(`${name} @${project}: ${result.finished ? 'service' : result.admitted ? 'engine' : 'refused'}${answer}`);
      }
    }
    // engine: a message DuckDB reads where strict JSON does not (authodd), several groups without ORDER BY, a key
    // or an aggregate of a field no record holds (its type is the engine's); refused: AVG, HAVING on an aggregate written again
    expect(outcomes).toEqual([
      'the active users report @auth: service, 3 rows',
      'the active users report @authodd: engine, 3 rows',
      'the active users report @default: service, 36 rows',
      'actions by hour, NULL first @auth: service, 10 rows',
      'actions by hour, NULL first @authodd: engine, 10 rows',
      'actions by hour, NULL first @default: service, 136 rows',
      'actors by count, ties @auth: service, 3 rows',
      'actors by count, ties @authodd: engine, 3 rows',
      'actors by count, ties @default: service, 3 rows',
      'actors by count, then name @auth: service, 4 rows',
      'actors by count, then name @authodd: engine, 4 rows',
      'actors by count, then name @default: service, 3 rows',
      'one group @auth: service, 1 rows',
      'one group @authodd: engine, 1 rows',
      'one group @default: service, 1 rows',
      'known and unknown actors by day @auth: service, 1 rows',
      'known and unknown actors by day @authodd: engine, 1 rows',
      'known and unknown actors by day @default: service, 2 rows',
      'extremes per action @auth: service, 6 rows',
      'extremes per action @authodd: engine, 6 rows',
      'extremes per action @default: service, 4 rows',
      'levels by minute @auth: service, 5 rows',
      'levels by minute @authodd: service, 5 rows',
      'levels by minute @default: service, 5 rows',
      'no ORDER BY @auth: engine, 6 rows',
      'no ORDER BY @authodd: engine, 6 rows',
      'no ORDER BY @default: engine, 4 rows',
      'an average (refused) @auth: refused',
      'an average (refused) @authodd: refused',
      'an average (refused) @default: refused',
      'HAVING @auth: service, 3 rows',
      'HAVING @authodd: engine, 3 rows',
      'HAVING @default: service, 4 rows',
      'HAVING on an aggregate (refused) @auth: refused',
      'HAVING on an aggregate (refused) @authodd: refused',
      'HAVING on an aggregate (refused) @default: refused',
      'hour and method @plain: service, 2 rows',
      'hour and method @groups: engine, 1 rows',
      'hour and method @default: service, 72 rows',
      'hour and method @odd: service, 4 rows',
      'sums per hour and path @plain: engine, 5 rows',
      'sums per hour and path @groups: service, 6 rows',
      'sums per hour and path @default: engine, 195 rows',
      'sums per hour and path @odd: engine, 7 rows',
      'paths by count @plain: service, 3 rows',
      'paths by count @groups: service, 3 rows',
      'paths by count @default: service, 3 rows',
      'paths by count @odd: service, 3 rows',
    ]);
  });

  it('text ordered by its UTF-8 bytes, either way, as DuckDB orders it', async () => {
    for (const direction of ['asc', 'desc']) {
      const sql = `select request.path, id from edge_logs cross join unnest(metadata) as m cross join unnest(m.request) as request order by request.path ${direction} limit 10`;
      expect(await bothWays(sql, { project: 'text', ...DAY })).toMatchObject({ admitted: true, finished: true });
    }
  });

  it("the oracle's cases the planner admits", async () => {
    let admitted = 0;
    for (const oracle of ORACLE_CASES) {
      let result;
      try {
        result = await bothWays(oracle.sql, { project: 'default', iso_timestamp_start: '2023-12-31T23:00:00Z' });
      } catch (error) {
        // a query the parser or planner refuses never reaches either finish
        if ((error as Error).name === 'AssertionError') throw error;
        continue;
      }
      if (result.admitted) admitted += 1;
    }
    expect(admitted).toBeGreaterThan(0);
  });
});

describe('over HTTP, a query the service finishes never waits for the engine', () => {
  it.each([
    ['the dashboard query', SHAPES[0]![1]],
    ['the hourly aggregation', 'select timestamp_trunc(timestamp, hour) as h, count(*) as n from edge_logs group by h order by h'],
    ['one log with its whole metadata', "select id, timestamp, event_message, metadata from edge_logs where id = 'p3' limit 1"],
  ])("%s: the engine's answer, and no engine phase in Server-Timing", async (_, sql) => {
    const params = { project: 'plain', ...DAY };
    const response = await server.app.inject({
      method: 'POST',
      url: '/api/endpoints/query/logs.all',
      headers: { 'x-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' },
      payload: { ...params, sql },
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.headers['server-timing']).toMatch(/store;dur=/);
    expect(response.headers['server-timing']).not.toMatch(/engine;dur=/);
    expect(JSON.stringify(response.json().result)).toBe((await run(engineForced(await plan(sql, params)))).body);
    expect(response.json().result.length).toBeGreaterThan(0);
  });
});
