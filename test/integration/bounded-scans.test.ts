import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../shared/event-index.ts';
import { metricsRegistry } from '../../src/metrics.ts';
import { BOOTSTRAP_KEY, edgeEvent, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';
import { sandboxDataset } from '../support/sandbox-data.ts';

/** The per-request total of scanned events this file's service allows (SANDBOX_MAX_SCAN_EVENTS). */
const TOTAL = 500;
const dataset = sandboxDataset({ perSource: 720, projects: ['default', 'other'] });
const edge = dataset.events.get('edge_logs')!;
/** An edge event whose metadata.a holds a record and metadata.n a number: no regex can apply to either. */
const withRecord: StoredEvent = edgeEvent(
  'default-record-a',
  '2024-01-01T00:30:00.000000Z',
  'default',
  { url: 'https://default.example.co/x', path: '/x' },
  { a: { b: 'ne-1' }, n: 5 },
);
let server: EndpointTestServer;

async function scannedEvents(): Promise<number> {
  const metric = await metricsRegistry.getSingleMetric('sandbox_scanned_events_total')!.get();
  return metric.values[0]?.value ?? 0;
}

async function query(params: Record<string, string>, key = BOOTSTRAP_KEY) {
  return server.app.inject({
    method: 'POST',
    url: '/api/endpoints/query/logs.all',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    payload: params,
  });
}

function requestsOf(event: StoredEvent): { path: string }[] {
  return ([] as { path: string }[]).concat((event.metadata as { request?: { path: string } | { path: string }[] }).request ?? []);
}

const defaults = [...edge, withRecord].filter((event) => event.project === 'default');

beforeAll(async () => {
  server = await startEndpointServer({
    now: Date.UTC(2024, 0, 1, 1),
    overrides: { RATE_LIMIT_PER_MINUTE: '0', SANDBOX_MAX_SCAN_EVENTS: String(TOTAL), SANDBOX_MAX_SCANS: '64' },
  });
  await server.index('edge_logs', [...edge, withRecord]);
});

afterAll(async () => {
  await server?.close();
});

describe('one total of scanned events per request (finding 5)', () => {
  it('the source holds more events of the project than the total, and one scan of it alone is within it', async () => {
    expect(defaults.length).toBeGreaterThan(TOTAL / 2);
    expect(defaults.length).toBeLessThan(TOTAL);
    const response = await query({ project: 'default', sql: 'select id from edge_logs' });
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
    expect(response.json().result).toHaveLength(defaults.length);
  });

  it('refuses a 64-way union all as too broad, having fetched no more than the total from the store', async () => {
    const sql = Array.from({ length: 64 }, () => 'select id from edge_logs').join(' union all ');
    const before = await scannedEvents();
    const response = await query({ project: 'default', sql });
    expect(response.statusCode, response.body.slice(0, 300)).toBe(400);
    expect(response.json().error.code).toBe('query_too_broad');
    expect(response.json().error.message).toMatch(new RegExp(`more than ${TOTAL} events of edge_logs`));
    // proving "more than the total" takes exactly one event beyond it; the other scans were stopped (today: 64 x 361 fetched)
    expect((await scannedEvents()) - before).toBe(TOTAL + 1);
  });

  it('refuses more scans than SANDBOX_MAX_SCANS before reading anything', async () => {
    const narrow = await startEndpointServer({ now: Date.UTC(2024, 0, 1, 1), overrides: { SANDBOX_MAX_SCANS: '4' } });
    try {
      const before = await scannedEvents();
      const sql = Array.from({ length: 5 }, () => 'select id from edge_logs').join(' union all ');
      const response = await narrow.app.inject({
        method: 'POST',
        url: '/api/endpoints/query/logs.all',
        headers: { 'x-api-key': BOOTSTRAP_KEY },
        payload: { project: 'default', sql },
      });
      expect(response.statusCode, response.body.slice(0, 300)).toBe(400);
      expect(response.json().error.code).toBe('sandbox_violation');
      expect(response.json().error.message).toMatch(/5 times, more than 4/);
      expect(await scannedEvents()).toBe(before);
    } finally {
      await narrow.close();
    }
  });
});

describe("the store refusing a malformed query is the caller's error (finding 6)", () => {
  it("answers an LQL regex the store refuses (on a number) with 400 and the store's reason, no index names", async () => {
    const response = await query({ project: 'default', lql: 'f:edge_logs m.n:~"ne-1"' });
    expect(response.statusCode, response.body.slice(0, 300)).toBe(400);
    expect(response.json().error.code).toBe('invalid_query');
    expect(response.json().error.message).toMatch(/regexp queries on keyword and text fields - not on \[metadata\.n\] which is of type \[long\]/);
    expect(response.json().error.message).not.toContain(server.config.INDEX_PREFIX);
  });

  it('answers an LQL regex on a field holding records with 400 naming the field', async () => {
    const response = await query({ project: 'default', lql: 'f:edge_logs m.a:~"ne-1"' });
    expect(response.statusCode, response.body.slice(0, 300)).toBe(400);
    expect(response.json().error.code).toBe('invalid_query');
    expect(response.json().error.message).toMatch(/metadata\.a holds records/);
  });

  it('answers a 100-term OR chain on a record field with the right rows', async () => {
    const paths = ['/rest/v1/items', '/auth/v1/token', ...Array.from({ length: 98 }, (_, n) => `/missing/${n}`)];
    const where = paths.map((path) => `r.path = '${path}'`).join(' or ');
    const response = await query({
      project: 'default',
      sql: `select id, r.path from edge_logs cross join unnest(metadata) as m cross join unnest(m.request) as r where ${where}`,
    });
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
    const expected = defaults.flatMap((event) =>
      requestsOf(event)
        .filter((request) => paths.includes(request.path))
        .map((request) => ({ id: event.id, path: request.path })),
    );
    expect(expected.length).toBeGreaterThan(10);
    const sorted = (rows: unknown[]) => rows.map((row) => JSON.stringify(row)).sort();
    expect(sorted(response.json().result)).toEqual(sorted(expected));
  });

  it('answers a count over a 100-element IN list (pushed down as an aggregation) with the right count', async () => {
    const paths = ['/storage/v1/object', ...Array.from({ length: 99 }, (_, n) => `/absent/${n}`)];
    const list = paths.map((path) => `'${path}'`).join(', ');
    const response = await query({
      project: 'default',
      sql: `select count(*) as n from edge_logs cross join unnest(metadata) as m cross join unnest(m.request) as r where r.path in (${list})`,
    });
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
    const expected = defaults.reduce((total, event) => total + requestsOf(event).filter((request) => paths.includes(request.path)).length, 0);
    expect(expected).toBeGreaterThan(10);
    expect(response.json().result).toEqual([{ n: expected }]);
  });
});

describe('internal table names (finding 7)', () => {
  it('a CTE named like an internal scan table is refused, never answered in its place', async () => {
    for (const name of ['__scan_0', '__SCAN_0', '__scan_1_groups']) {
      const response = await query({ project: 'default', sql: `with ${name} as (select "x" as id) select id from edge_logs` });
      expect(response.statusCode, response.body.slice(0, 300)).toBe(400);
      expect(response.json().error.code).toBe('sandbox_violation');
      expect(response.json().error.message).toContain(name);
    }
    const aliased = await query({ project: 'default', sql: 'select __scan_0.id from edge_logs as __scan_0' });
    expect(aliased.statusCode, aliased.body.slice(0, 300)).toBe(400);
    expect(aliased.json().error.code).toBe('sandbox_violation');
  });
});

describe('subqueries in the ON clause of a parenthesised join (finding 8)', () => {
  it("are scoped to the key's project like any other reference", async () => {
    const key = await server.createKey({ projects: ['default'] });
    // the last six hours of the data: its three scans stay within the total together
    const window = { project: 'default', iso_timestamp_start: '2024-01-01T18:00:00.000Z' };
    const ids = defaults
      .filter((event) => event.timestamp > '2024-01-01T18:00:00.000000Z')
      .map((event) => event.id)
      .sort();
    expect(ids.length).toBeGreaterThan(10);
    const joined = await query(
      { ...window, sql: 'select a.id from (edge_logs as a join edge_logs as b on a.id = b.id and a.id in (select id from edge_logs))' },
      key,
    );
    expect(joined.statusCode, joined.body.slice(0, 300)).toBe(200);
    expect((joined.json().result as { id: string }[]).map((row) => row.id).sort()).toEqual(ids);
    // the subquery sees no event of the other project: were it unscoped, every row would be dropped
    const isolated = await query(
      {
        ...window,
        sql: "select a.id from (edge_logs as a join edge_logs as b on a.id = b.id and not exists (select 1 from edge_logs where starts_with(id, 'other-')))",
      },
      key,
    );
    expect(isolated.statusCode, isolated.body.slice(0, 300)).toBe(200);
    expect((isolated.json().result as { id: string }[]).map((row) => row.id).sort()).toEqual(ids);
  });
});
