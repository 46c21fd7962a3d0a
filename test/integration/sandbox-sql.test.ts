import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tableNames } from '../../queries/endpoint.ts';
import { logsAll } from '../../queries/logs-all.ts';
import type { StoredEvent } from '../../shared/event-index.ts';
import { SOURCES, type SourceName } from '../../shared/sources.ts';
import { createLogger } from '../../shared/logger.ts';
import { EmbeddedEngine, type EngineTable } from '../../src/executor/engine/embedded-engine.ts';
import { inferTableSchema } from '../../src/executor/engine/schema-inference.ts';
import { metadataRows } from '../../src/executor/rows/logs.ts';
import { metricsRegistry } from '../../src/metrics.ts';
import { translateToDuckDb } from '../../src/executor/duckdb-sql/index.ts';
import { initSqlParser, parseSandboxQuery } from '../../src/sql/index.ts';
import { BOOTSTRAP_KEY, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';
import { sandboxDataset } from '../support/sandbox-data.ts';

interface StudioQuery {
  id: string;
  sql: string;
  params: Record<string, string>;
}
const studio: StudioQuery[] = JSON.parse(readFileSync(new URL('../fixtures/examples/studio-queries.json', import.meta.url), 'utf8'));

const dataset = sandboxDataset({ perSource: 720, projects: ['default', 'other'] });
let server: EndpointTestServer;
let engine: EmbeddedEngine;

/** Microseconds since the epoch of a stored timestamp, computed here independently of the service. */
function micros(stored: string): number {
  return Date.parse(`${stored.slice(0, 23)}Z`) * 1000 + Number(stored.slice(23, 26));
}

function boundMicros(iso: string | undefined): number | undefined {
  return iso ? Date.parse(iso) * 1000 : undefined;
}

/** The scope of a logs.all CTE as docs/design/SPEC.md 2.4 and 4.2 state it, written for the test: project field, then (start, end]. */
function inScope(source: SourceName, event: StoredEvent, params: Record<string, string>): boolean {
  const field = SOURCES.find((candidate) => candidate.name === source)!.projectField;
  const project = field === 'project' ? event.project : (event.metadata as Record<string, unknown>)[field.slice('metadata.'.length)];
  if (project !== params.project) return false;
  const at = micros(event.timestamp);
  const start = boundMicros(params.iso_timestamp_start);
  const end = boundMicros(params.iso_timestamp_end);
  return (start === undefined || at > start) && (end === undefined || at <= end);
}

/**
 * The reference answer: the query run by the engine over every in-scope event of each CTE,
 * selected by the test itself; no planner, no pushdown, no Elasticsearch.
 */
async function referenceRows(sql: string, params: Record<string, string>): Promise<unknown[]> {
  const query = parseSandboxQuery(sql, { allowedTables: tableNames(logsAll.ctes), parameterNames: ['project', 'iso_timestamp_start', 'iso_timestamp_end'] });
  const tables: EngineTable[] = logsAll.ctes.flatMap((cte) => {
    if (cte.kind !== 'source') return [];
    const rows = dataset.events
      .get(cte.source)!
      .filter((event) => inScope(cte.source, event, params))
      .map((event) => ({
        id: event.id,
        timestamp: micros(event.timestamp),
        event_message: event.event_message,
        metadata: metadataRows(event.metadata),
        project: event.project ?? null,
      }));
    const declared = cte.columns.map((column) => (column.name === 'metadata' ? { name: 'metadata', type: 'inferred' as const } : column));
    return [cte.name, ...cte.aliases].map((name) => ({ schema: inferTableSchema(name, declared, rows), rows }));
  });
  const { sql: duckDb } = translateToDuckDb(query, {
    tables: tables.map((table) => table.schema),
    parameters: params,
    now: server.clock.now(),
    maxChars: server.config.SANDBOX_MAX_TRANSLATED_CHARS,
    maxValueBytes: server.config.SANDBOX_MAX_RESULT_BYTES,
  });
  return (await engine.run({ tables, sql: duckDb, timeoutMs: 30_000 })).rows;
}

async function sandboxed(sql: string, params: Record<string, string>, key = BOOTSTRAP_KEY) {
  return server.app.inject({
    method: 'POST',
    url: '/api/endpoints/query/logs.all',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    payload: { ...params, sql },
  });
}

function sorted(rows: unknown[]): string[] {
  return rows.map((row) => JSON.stringify(row)).sort();
}

async function scanCount(kind: string): Promise<number> {
  const metric = await metricsRegistry.getSingleMetric('sandbox_scans_total')!.get();
  return metric.values.find((value) => value.labels.kind === kind)?.value ?? 0;
}

beforeAll(async () => {
  await initSqlParser();
  // a thousand queries from one key: the rate limit is not what this file tests
  server = await startEndpointServer({ now: Date.UTC(2024, 0, 1, 1), overrides: { RATE_LIMIT_PER_MINUTE: '0' } });
  for (const [source, events] of dataset.events) await server.index(source, events);
  engine = await EmbeddedEngine.start({ memoryLimit: '1GB', threads: 1, logger: createLogger('reference', 'silent') });
}, 180_000);

afterAll(async () => {
  await engine?.close();
  await server?.close();
});

describe('the 20 studio queries', () => {
  it.each(studio.map((query) => [query.id, query] as const))('%s answers what the reference evaluation gives', async (_, query) => {
    const response = await sandboxed(query.sql, query.params);
    expect(response.statusCode, response.body).toBe(200);
    const rows = response.json().result as unknown[];
    const expected = await referenceRows(query.sql, query.params);
    expect(sorted(rows)).toEqual(sorted(expected));
    expect(rows.length).toBeLessThanOrEqual(1000);
  });

  it('non-trivial data: the reference answers are not empty where the data has matches', async () => {
    const empty: string[] = [];
    for (const query of studio) if ((await referenceRows(query.sql, query.params)).length === 0) empty.push(query.id);
    // every query but the one-id lookup (whose id is not in the data) finds rows
    expect(empty).toEqual(['single_log_by_id']);
  });

  it('counts edge errors as the client reads them, checked by hand-written arithmetic', async () => {
    const query = studio.find((candidate) => candidate.id === 'preview_count_edge_errors')!;
    let expected = 0;
    for (const event of dataset.events.get('edge_logs')!) {
      if (!inScope('edge_logs', event, query.params)) continue;
      const metadata = event.metadata as Record<string, unknown>;
      const requests = ([] as unknown[]).concat(metadata.request ?? []);
      const responses = ([] as { status_code: number }[]).concat((metadata.response as { status_code: number }) ?? []);
      expected += requests.length * responses.filter((response) => response.status_code >= 500 && response.status_code <= 599).length;
    }
    const response = await sandboxed(query.sql, query.params);
    expect(response.json().result).toEqual([{ count: expected }]);
  });

  it('returns raw timestamps as 16-digit microseconds and metadata as arrays of records', async () => {
    const response = await sandboxed('select id, timestamp, metadata from edge_logs order by timestamp desc limit 3', { project: 'default' });
    const rows = response.json().result as { id: string; timestamp: number; metadata: { request: { path: string }[] }[] }[];
    expect(rows).toHaveLength(3);
    const original = dataset.events.get('edge_logs')!.find((event) => event.id === rows[0]!.id)!;
    expect(rows[0]!.timestamp).toBe(micros(original.timestamp));
    expect(String(rows[0]!.timestamp)).toMatch(/^\d{16}$/);
    expect(typeof rows[0]!.metadata[0]!.request[0]!.path).toBe('string');
  });
});

describe('pushdown on the real store', () => {
  it('answers a chart by aggregation when every event in scope is regular, and falls back when one is not', async () => {
    const chart = studio.find((query) => query.id === 'chart_edge')!;
    // this dataset has events with two request records: the chart must fall back and still be right
    const fallbacksBefore = await scanCount('aggregation_fallback');
    const mixed = await sandboxed(chart.sql, chart.params);
    expect(sorted(mixed.json().result)).toEqual(sorted(await referenceRows(chart.sql, chart.params)));
    expect(await scanCount('aggregation_fallback')).toBe(fallbacksBefore + 1);

    // a window with only regular events (no multi-record event falls in it) is answered by Elasticsearch alone
    const defaults = dataset.events.get('edge_logs')!.filter((event) => event.project === 'default');
    const first = defaults.findIndex(
      (_, at) => at > 0 && defaults[at]!.timestamp > '2023-12-31T19' && defaults.slice(at - 1, at + 6).every((event) => event.shape!.multi.length === 0),
    );
    const windowed = {
      project: 'default',
      iso_timestamp_start: defaults[first]!.timestamp.replace(/\d{3}Z$/, 'Z'),
      iso_timestamp_end: defaults[first + 4]!.timestamp.replace(/\d{3}Z$/, 'Z'),
    };
    const inWindow = dataset.events.get('edge_logs')!.filter((event) => inScope('edge_logs', event, windowed));
    expect(inWindow.every((event) => event.shape!.multi.length === 0)).toBe(true);
    const aggregationsBefore = await scanCount('aggregation');
    const pushed = await sandboxed(chart.sql, windowed);
    expect(pushed.statusCode, pushed.body).toBe(200);
    expect(await scanCount('aggregation')).toBe(aggregationsBefore + 1);
    expect(sorted(pushed.json().result)).toEqual(sorted(await referenceRows(chart.sql, windowed)));

    // groups of nested request records (top paths, countries) are answered by the store too
    for (const id of ['tpl_top_paths', 'geo_usage_countries']) {
      const query = studio.find((candidate) => candidate.id === id)!;
      const before = await scanCount('aggregation');
      const response = await sandboxed(query.sql, windowed);
      expect(response.statusCode, response.body).toBe(200);
      expect(await scanCount('aggregation'), id).toBe(before + 1);
      const expected = await referenceRows(query.sql, windowed);
      expect(expected.length, id).toBeGreaterThan(0);
      expect(sorted(response.json().result), id).toEqual(sorted(expected));
    }
  });

  it("pushes LIMIT down when the store's order is the query's", async () => {
    const before = await scanCount('limited');
    const response = await sandboxed('select id, timestamp from auth_logs order by timestamp desc limit 5', { project: 'other' });
    expect(await scanCount('limited')).toBe(before + 1);
    const expected = dataset.events
      .get('auth_logs')!
      .filter((event) => event.project === 'other')
      .map((event) => event.id)
      .reverse()
      .slice(0, 5);
    expect((response.json().result as { id: string }[]).map((row) => row.id)).toEqual(expected);
  });

  it('refuses a query that would pull more events than the cap, naming what to do', async () => {
    const narrow = await startEndpointServer({ now: Date.UTC(2024, 0, 1, 1), overrides: { SANDBOX_MAX_SCAN_EVENTS: '50' } });
    try {
      await narrow.index('edge_logs', dataset.events.get('edge_logs')!);
      const response = await narrow.app.inject({
        method: 'GET',
        url: `/api/endpoints/query/logs.all?project=default&sql=${encodeURIComponent('select r.path from edge_logs cross join unnest(metadata) m cross join unnest(m.request) r')}`,
        headers: { 'x-api-key': BOOTSTRAP_KEY },
      });
      expect(response.statusCode).toBe(400);
      expect(response.json().error.code).toBe('query_too_broad');
      expect(response.json().error.message).toMatch(/more than 50 events of edge_logs; narrow the time range/);
    } finally {
      await narrow.close();
    }
  });
});

describe('isolation', () => {
  it('1,000 randomised queries as project default never return a row of project other', async () => {
    let seed = 11;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const pick = <T>(values: readonly T[]): T => values[Math.floor(next() * values.length)]!;
    const names = [...tableNames(logsAll.ctes)];
    const shapes = [
      (t: string) => `select * from ${t}`,
      (t: string) => `select id, event_message, metadata from ${t} where event_message = 'other' or true`,
      (t: string) => `select count(*) as n, string_agg(id) as ids from ${t}`,
      (t: string) => `select id, event_message from ${t} union all select id, event_message from ${pick(names)}`,
      (t: string) => `select to_json_string(m) as m, id from ${t} cross join unnest(metadata) as m`,
      (t: string) => `select id from ${t} where id like 'other-%' or event_message like '%other%'`,
      (t: string) => `with x as (select * from ${t}) select id, event_message from x where id in (select id from ${pick(names)})`,
      (t: string) => `select timestamp_trunc(timestamp, hour) as h, count(*) as c, string_agg(event_message) as e from ${t} group by h`,
    ];
    const windows: Record<string, string>[] = [{}, { iso_timestamp_start: '2024-01-01T00:00:00.000Z' }, { iso_timestamp_end: '2024-01-01T06:00:00.000Z' }];
    for (let n = 0; n < 1000; n += 1) {
      const sql = pick(shapes)(pick(names));
      const response = await sandboxed(sql, { project: 'default', ...pick(windows) });
      expect(response.statusCode, `${sql}: ${response.body}`).toBe(200);
      expect(response.body, sql).not.toMatch(/\bother-[a-z_]+-\d|of other\b/);
    }
  }, 600_000);

  it('a key bound to one project cannot read another whatever the query says', async () => {
    const key = await server.createKey({ projects: ['default'] });
    const refused = await sandboxed('select id from edge_logs', { project: 'other' }, key);
    expect(refused.statusCode).toBe(403);
    const attempt = await sandboxed("select id from edge_logs where project = 'other'", { project: 'default' }, key);
    expect(attempt.json().result).toEqual([]);
  });
});

describe("the reference implementation's own cases over HTTP", () => {
  it.each([
    ['update a set x=2', 'sandbox_violation', /only a single SELECT/i],
    ['SELECT SESSION_USER()', 'sandbox_violation', /session_user/],
    ["SELECT EXTERNAL_QUERY('','')", 'sandbox_violation', /external_query/],
    ['select a from my_table', 'unknown_table', /edge_logs/],
    ['select 1; select 2', 'sandbox_violation', /single/],
  ])('%s is refused: %s', async (sql, code, message) => {
    const response = await sandboxed(sql, { project: 'default' });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe(code);
    expect(response.json().error.message).toMatch(message);
  });

  it('accepts a query without FROM and select * over a CTE (our documented deviation)', async () => {
    expect((await sandboxed("select 'hello' as world", { project: 'default' })).json()).toEqual({ result: [{ world: 'hello' }] });
    const star = await sandboxed('select * from edge_logs order by timestamp desc limit 1', { project: 'default' });
    expect(Object.keys(star.json().result[0])).toEqual(['id', 'timestamp', 'event_message', 'metadata', 'project']);
  });
});

describe('usage.api-counts tables', () => {
  it("chart_counts holds the saved query's buckets, dates its window start, edge_logs its matching events", async () => {
    const now = server.clock.now();
    // the saved query bounds the window below only (`timestamp >= start`), as the reference's does
    const recent = dataset.events.get('edge_logs')!.filter((event) => micros(event.timestamp) >= (now - 7 * 86_400_000) * 1000);
    const url = (sql?: string) =>
      `/api/endpoints/query/usage.api-counts?interval=daily&project=${encodeURIComponent('default\\.example')}${sql ? `&sql=${encodeURIComponent(sql)}` : ''}`;
    const headers = { 'x-api-key': BOOTSTRAP_KEY };
    const saved = (await server.app.inject({ url: url(), headers })).json().result as { timestamp: string; total_rest_requests: number }[];
    expect(saved.length).toBeGreaterThan(0);
    const sandboxed = (
      await server.app.inject({ url: url('select cast(timestamp as datetime) as day, total_rest_requests from chart_counts order by day'), headers })
    ).json().result as { day: string; total_rest_requests: number }[];
    expect(sandboxed).toEqual(saved.map((row) => ({ day: row.timestamp, total_rest_requests: row.total_rest_requests })));
    const dates = (await server.app.inject({ url: url('select start from dates'), headers })).json().result;
    expect(dates).toEqual([{ start: (now - 7 * 86_400_000) * 1000 }]);
    const events = (await server.app.inject({ url: url('select id from edge_logs'), headers })).json().result as { id: string }[];
    const expected = recent.filter((event) => event.id.startsWith('default-'));
    expect(events.map((row) => row.id).sort()).toEqual(expected.map((event) => event.id).sort());
  });
});
