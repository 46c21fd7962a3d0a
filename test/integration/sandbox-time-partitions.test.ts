import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expressionReads } from '../../shared/partitions.ts';
import { BOOTSTRAP_KEY, edgeEvent, startEndpointServer, storedTimestamp, type EndpointTestServer } from '../support/endpoint-server.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Noon on 10 January 2024; events every six hours from 1 January on, each in the daily partition of its day. */
const NOW = Date.UTC(2024, 0, 10, 12);
const FIRST = Date.UTC(2024, 0, 1);
const times = Array.from({ length: 38 }, (_, n) => FIRST + n * 6 * HOUR + n * 1000);
const events = times.map((ms, n) =>
  edgeEvent(
    `e${String(n).padStart(2, '0')}`,
    storedTimestamp(ms, n),
    n % 5 === 0 ? 'other' : 'default',
    { url: `https://x/${n}`, path: `/p/${n % 3}` },
    { response: { status_code: n % 2 === 0 ? 200 : 500 } },
  ),
);
const DAYS = Array.from({ length: 10 }, (_, n) => new Date(FIRST + n * DAY).toISOString().slice(0, 10).replaceAll('-', '.'));

let server: EndpointTestServer;

interface Answer {
  status: number;
  result: Record<string, unknown>[];
  partitions: string[];
  error?: { code: string; message: string };
}

async function sql(text: string): Promise<Answer> {
  const response = await server.app.inject({
    method: 'POST',
    url: '/api/endpoints/query/logs.all',
    headers: { 'x-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' },
    payload: { project: 'default', sql: text, stats: true },
  });
  const body = response.json() as { result: Record<string, unknown>[]; stats?: { partitions: string[] }; error?: Answer['error'] };
  return { status: response.statusCode, result: body.result, partitions: body.stats?.partitions ?? [], ...(body.error ? { error: body.error } : {}) };
}

/** The days of 1-10 January whose daily edge_logs partition a request searched. */
function daysRead(partitions: readonly string[]): string[] {
  return DAYS.filter((day) => expressionReads(partitions, `edge_logs-${day}`));
}

/** The same query with a condition the planner must not derive bounds from, and which keeps every row: it reads every partition. */
function unnarrowed(where: string): string {
  return `(${where}) or id = 'no such id'`;
}

beforeAll(async () => {
  server = await startEndpointServer({ now: NOW, overrides: { RATE_LIMIT_PER_MINUTE: '0' } });
  await server.index('edge_logs', events);
  const indices = Object.keys(await server.elasticsearch.indices.get({ index: `${server.config.INDEX_PREFIX}edge_logs-*` }));
  expect(indices.sort()).toEqual(DAYS.map((day) => `${server.config.INDEX_PREFIX}edge_logs-${day}`));
});

afterAll(async () => {
  await server?.close();
});

describe('a sandboxed WHERE on timestamp reads only the partitions it can match', () => {
  it.each([
    ['a lower bound', "timestamp > '2024-01-07T06:00:00Z'", ['2024.01.07', '2024.01.08', '2024.01.09', '2024.01.10']],
    ['a window', "timestamp >= '2024-01-03T00:00:00Z' and timestamp < '2024-01-05T12:00:00Z'", ['2024.01.03', '2024.01.04', '2024.01.05']],
    ['between', "timestamp between '2024-01-02T18:00:00Z' and '2024-01-03T06:00:00Z'", ['2024.01.02', '2024.01.03']],
    ['the last day, from the query clock', 'timestamp >= timestamp_sub(current_timestamp(), interval 1 day)', ['2024.01.09', '2024.01.10']],
  ])('%s: answers exactly what the whole read does', async (_, where, days) => {
    const query = (condition: string) => `select id, timestamp, event_message from edge_logs where ${condition} order by timestamp, id`;
    const narrowed = await sql(query(where));
    const whole = await sql(query(unnarrowed(where)));
    expect(narrowed.status, JSON.stringify(narrowed.error)).toBe(200);
    expect(whole.status).toBe(200);
    expect(daysRead(narrowed.partitions)).toEqual(days);
    expect(daysRead(whole.partitions)).toEqual(DAYS);
    expect(narrowed.result.length).toBeGreaterThan(0);
    expect(narrowed.result).toEqual(whole.result);
  });

  it('a limited read, its events with records filtered through unnests, and the events beyond their shape', async () => {
    const query = (condition: string) =>
      'select id, r.status_code from edge_logs cross join unnest(metadata) as m cross join unnest(m.response) as r ' +
      `where r.status_code >= 500 and ${condition} order by timestamp desc limit 3`;
    const narrowed = await sql(query("timestamp > '2024-01-06T00:00:00Z'"));
    const whole = await sql(query("(timestamp > '2024-01-06T00:00:00Z' or id = 'no such id')"));
    expect(narrowed.status, JSON.stringify(narrowed.error)).toBe(200);
    expect(daysRead(narrowed.partitions)).toEqual(DAYS.slice(5));
    expect(narrowed.result).toHaveLength(3);
    expect(narrowed.result).toEqual(whole.result);
  });

  it('a pushed-down aggregation', async () => {
    const query = (condition: string) => `select timestamp_trunc(timestamp, day) as d, count(*) as n from edge_logs where ${condition} group by d order by d`;
    const narrowed = await sql(query("timestamp >= '2024-01-08T00:00:00Z'"));
    const whole = await sql(query(unnarrowed("timestamp >= '2024-01-08T00:00:00Z'")));
    expect(narrowed.status, JSON.stringify(narrowed.error)).toBe(200);
    expect(daysRead(narrowed.partitions)).toEqual(DAYS.slice(7));
    expect(narrowed.result.length).toBe(3);
    expect(narrowed.result).toEqual(whole.result);
  });

  it('bounds that exclude each other read no partition and answer nothing', async () => {
    const narrowed = await sql("select id from edge_logs where timestamp > '2024-01-06T00:00:00Z' and timestamp < '2024-01-05T00:00:00Z'");
    expect(narrowed.status).toBe(200);
    expect(daysRead(narrowed.partitions)).toEqual([]);
    expect(narrowed.result).toEqual([]);
  });
});
