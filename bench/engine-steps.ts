import { answerHelp } from '../shared/command-help.ts';
import { createLogger } from '../shared/logger.ts';
import { translateToDuckDb } from '../src/executor/duckdb-sql/index.ts';
import { EmbeddedEngine, type EngineTable } from '../src/executor/engine/embedded-engine.ts';
import { columnsOf } from '../src/executor/engine/engine-protocol.ts';
import { openLockedDatabase, type EngineLimits, type LockedDatabase } from '../src/executor/engine/locked-database.ts';
import { openReusableDatabase } from '../src/executor/engine/reusable-database.ts';
import { inferTableSchema } from '../src/executor/engine/schema-inference.ts';
import { TableLoad } from '../src/executor/engine/table-loader.ts';
import { serviceAnswer } from '../src/executor/service-groups.ts';
import { decideServiceFinish } from '../src/planner/sandbox/service-finish.ts';
import { bind } from '../src/sql/bind.ts';
import { environmentOfTables } from '../src/sql/bindings.ts';
import { parseSandboxQuery } from '../src/sql/index.ts';
import type { Query } from '../src/sql/syntax.ts';
import { initSqlParser } from '../src/sql/parse.ts';
import { percentile } from './latency.ts';

answerHelp(`Usage: npx tsx bench/engine-steps.ts [--requests 40]
Where the SQL engine's time goes, step by step.`);

const p50 = (times: number[]) =>
  percentile(
    [...times].sort((a, b) => a - b),
    50,
  );

/**
 * Where the engine step of a sandboxed query spends its time (issue 20), without Elasticsearch: the
 * rows the scans of two queries hand to the engine are built here, and each step the engine takes is
 * timed on its own in this process, beside the whole round trip through an engine process.
 *
 *   npx tsx bench/engine-steps.ts [--requests 40]
 */
const argument = (name: string, fallback: number) => Number(process.argv[process.argv.indexOf(name) + 1] ?? 0) || fallback;
const REQUESTS = argument('--requests', 40);
const LIMITS: EngineLimits = { memoryLimit: '512MB', threads: 1 };
const HOUR_MICROS = 3_600_000_000;

interface Case {
  label: string;
  table: EngineTable;
  sql: string;
  /** The sandboxed query, for the service's own finish. */
  query: Query;
}

/** The groups a pushed-down `timestamp_trunc(timestamp, hour), count(*)` hands over: one row per hour of a day. */
function aggregationCase(): Case {
  const rows = Array.from({ length: 24 }, (_, hour) => ({ h: Date.UTC(2024, 0, 1) * 1000 + hour * HOUR_MICROS, n: 700 + hour }));
  const schema = {
    name: 'hourly',
    columns: [
      { name: 'h', type: { kind: 'timestamp' as const } },
      { name: 'n', type: { kind: 'int64' as const } },
    ],
  };
  return { label: 'pushed-down aggregation (24 groups)', table: { schema, rows }, ...translate('select h, n from hourly order by h', schema) };
}

/** The 100 newest matching edge events the dashboard query's pushed-down scan hands over, metadata in record-array form. */
function dashboardCase(): Case {
  const rows = Array.from({ length: 100 }, (_, n) => ({
    id: `edge-${n}`,
    timestamp: Date.UTC(2024, 0, 1) * 1000 - n * 1_000_000,
    event_message: `GET | 500 | https://default.supabase.co/rest/v1/items`,
    metadata: [
      {
        request: [
          {
            method: 'GET',
            path: '/rest/v1/items',
            search: '?select=*',
            url: 'https://default.supabase.co/rest/v1/items',
            headers: [{ user_agent: 'bench' }],
            cf: [{ country: 'DE' }],
          },
        ],
        response: [{ status_code: 500, origin_time: n, headers: [{ content_type: 'application/json' }] }],
      },
    ],
  }));
  const schema = inferTableSchema(
    'edge_logs',
    ['id', 'timestamp', 'event_message', 'metadata'].map((name) => ({ name, type: 'inferred' as const })),
    rows,
  );
  const sql =
    'select id, timestamp, event_message, request.method, request.path, response.status_code from edge_logs cross join unnest(metadata) as m ' +
    'cross join unnest(m.request) as request cross join unnest(m.response) as response where response.status_code >= 400 order by timestamp desc limit 100';
  return { label: 'dashboard query (100 edge rows)', table: { schema, rows }, ...translate(sql, schema) };
}

/** auth_report_active_users' shape: 5,000 auth events grouped by hour in the engine, distinct actors read from the JSON message. */
function authCase(): Case {
  const rows = Array.from({ length: 5_000 }, (_, n) => ({
    id: `auth-${n}`,
    timestamp: Date.UTC(2024, 0, 1) * 1000 + (n % 24) * HOUR_MICROS + n,
    event_message: JSON.stringify({ action: 'login', actor_id: `user-${n % 300}`, level: 'info', msg: 'request completed', path: '/token', status: 200 }),
  }));
  const schema = {
    name: 'auth_logs',
    columns: [
      { name: 'id', type: { kind: 'string' as const } },
      { name: 'timestamp', type: { kind: 'timestamp' as const } },
      { name: 'event_message', type: { kind: 'string' as const } },
    ],
  };
  const sql = "select timestamp_trunc(timestamp, hour) as h, count(distinct json_value(event_message, '$.actor_id')) as n from auth_logs group by h order by h";
  return { label: 'active users (5,000 auth rows)', table: { schema, rows }, ...translate(sql, schema) };
}

const TRANSLATION = { parameters: {}, maxChars: 1_000_000, maxValueBytes: 16 * 1024 * 1024 };

function translate(sql: string, schema: EngineTable['schema']): { sql: string; query: Query } {
  const query = parseSandboxQuery(sql, { allowedTables: [schema.name] });
  return { query, sql: translateToDuckDb(query, { ...TRANSLATION, tables: [schema], now: Date.now() * 1000 }).sql };
}

/**
 * What the service does instead of the engine when it may finish the query: translate it (for its errors and columns), then finish;
 * or why it may not.
 */
function serviceFinish(test: Case): (() => void) | string {
  const { schema, rows } = test.table;
  const bindings = bind(test.query, environmentOfTables([schema]));
  const decision = decideServiceFinish(test.query, bindings, { table: schema.name, columns: schema.columns, whereHeld: true, oneRow: false });
  if (!('finish' in decision)) return decision.refused;
  return () => {
    const { columns } = translateToDuckDb(test.query, { ...TRANSLATION, tables: [schema], bindings, now: Date.now() * 1000 });
    const bounds = { maxRows: 1000, maxBytes: TRANSLATION.maxValueBytes };
    if (!serviceAnswer({ finish: decision.finish, schema, rows, supersetRows: 0, columns, ...bounds })) throw new Error(`${test.label}: declined`);
  };
}

async function timed(action: () => Promise<unknown> | unknown): Promise<number> {
  const started = performance.now();
  await action();
  return performance.now() - started;
}

async function median(action: () => Promise<unknown> | unknown): Promise<number> {
  const times: number[] = [];
  for (let request = 0; request < REQUESTS; request += 1) times.push(await timed(action));
  return p50(times);
}

/** Loads the table; returns what the request's reset drops. */
async function loadTable(database: LockedDatabase, table: EngineTable): Promise<string[]> {
  const load = await TableLoad.begin(database.connection, table.schema, 0);
  load.append(table.rows, 0);
  await load.finish();
  return load.createdTables;
}

async function runQuery(database: LockedDatabase, sql: string): Promise<void> {
  const prepared = await database.connection.prepare(sql);
  const result = await prepared.stream();
  for (let chunk = await result.fetchChunk(); chunk && chunk.rowCount > 0; chunk = await result.fetchChunk())
    chunk.getRowObjects(result.deduplicatedColumnNames());
}

/** Each in-process step alone, median of REQUESTS. */
async function steps(test: Case): Promise<[string, number][]> {
  const { schema, rows } = test.table;
  // as the service sends them: the rows' columns, each name once
  const rowsMessage = () => ({
    type: 'rows',
    requestId: 1,
    table: 0,
    firstRowNumber: 0,
    rowCount: rows.length,
    columns: columnsOf(rows, schema.columns, 0, rows.length),
  });
  const text = JSON.stringify(rowsMessage());
  const opens: number[] = [];
  const closes: number[] = [];
  for (let request = 0; request < REQUESTS; request += 1) {
    let opened: LockedDatabase | undefined;
    opens.push(await timed(async () => (opened = await openLockedDatabase(LIMITS))));
    closes.push(await timed(() => opened!.close()));
  }
  const database = await openLockedDatabase(LIMITS);
  const loads: number[] = [];
  const drops: number[] = [];
  for (let request = 0; request < REQUESTS; request += 1) {
    let created: string[] = [];
    loads.push(await timed(async () => (created = await loadTable(database, test.table))));
    drops.push(await timed(() => database.connection.run(created.map((table) => `DROP TABLE ${table}`).join('; '))));
  }
  const [load, drop] = [p50(loads), p50(drops)];
  await loadTable(database, test.table);
  const query = await median(() => runQuery(database, test.sql));
  database.close();
  const reusable = await openReusableDatabase(LIMITS);
  const reset = await median(() => reusable.reset([]));
  reusable.close();
  return [
    ['columns + JSON out + in (the rows message)', await median(() => JSON.parse(JSON.stringify(rowsMessage())))],
    [`  (${text.length} bytes)`, 0],
    ['open a locked database', p50(opens)],
    ['close it', p50(closes)],
    ['create + load the table', load],
    ['run the query, read its rows', query],
    ['drop the tables (in the reset)', drop],
    ['check the watched settings (warm reuse)', reset],
  ];
}

async function roundTrips(engine: EmbeddedEngine, test: Case, pauseMs: number): Promise<number> {
  const times: number[] = [];
  for (let request = 0; request < REQUESTS; request += 1) {
    times.push(await timed(() => engine.run({ tables: [test.table], sql: test.sql, timeoutMs: 10_000 })));
    if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
  return p50(times);
}

await initSqlParser();
const logger = createLogger('engine-steps', 'warn');
const engine = await EmbeddedEngine.start({ ...LIMITS, logger, poolSize: 1 });
const table: string[][] = [];
try {
  for (const test of [aggregationCase(), dashboardCase(), authCase()]) {
    process.stderr.write(`engine steps: ${test.label} ...\n`);
    const finish = serviceFinish(test);
    const rows: [string, number][] = [
      ['engine round trip, back to back', await roundTrips(engine, test, 0)],
      ['engine round trip, 100 ms apart', await roundTrips(engine, test, 100)],
      typeof finish === 'string'
        ? [`service finish instead: refused (${finish})`, 0]
        : ['service finish instead (translate + finish, no engine)', await median(finish)],
      ...(await steps(test)),
    ];
    for (const [step, ms] of rows) table.push([test.label, step, ms === 0 ? '' : ms.toFixed(2)]);
  }
} finally {
  await engine.close();
}
console.log(`p50 of ${REQUESTS} each, ms`);
console.log('| query | step | ms |\n|---|---|---|');
for (const row of table) console.log(`| ${row.join(' | ')} |`);
