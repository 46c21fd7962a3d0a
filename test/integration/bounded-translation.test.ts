/**
 * Issue 18, findings 1 and 2: the translation of a sandboxed query into the engine's SQL is bounded
 * by the query's size. A format that would multiply the formats tried, and a query whose
 * translation would pass SANDBOX_MAX_TRANSLATED_CHARS, are refused with a 400 before any scan, and
 * the service answers the next request as usual.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsRegistry } from '../../src/metrics.ts';
import { BOOTSTRAP_KEY, edgeEvent, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';

const NOW = Date.UTC(2024, 0, 1, 12, 30);
const PARAMS = { project: 'p', iso_timestamp_start: '2024-01-01T12:00:00.000Z', iso_timestamp_end: '2024-01-01T12:30:00.000Z' };
const EVENTS = [
  edgeEvent('bounded-1', '2024-01-01T12:10:00.000000Z', 'p', { url: 'https://p.example.co/rest/v1/a', path: '/rest/v1/a' }),
  edgeEvent('bounded-2', '2024-01-01T12:20:00.000000Z', 'p', { url: 'https://p.example.co/rest/v1/b', path: '/rest/v1/b' }),
];

/** The issue's 132-byte query: each %E*S doubled the formats the translator built (2^24 here). */
const EXPONENTIAL_FORMAT = `select parse_timestamp('${'%E*S'.repeat(24)}', 'x') as t`;

/** The issue's 23.7 KiB query: 256 columns of SUBSTR nested 8 deep, 195.6 MB of engine SQL when SUBSTR repeated its argument. */
const nestedSubstr = (depth: number): string => (depth === 0 ? 'event_message' : `substr(${nestedSubstr(depth - 1)},1)`);
const NESTED_SUBSTR = `select ${Array(256).fill(nestedSubstr(8)).join(', ')} from edge_logs`;

/**
 * Within every input limit, yet tens of megabytes of engine SQL: each reference to the select alias
 * `a` in ORDER BY stands for the whole 255-argument CONCAT (the engine gives aliases another meaning,
 * so the translation spells the expression out).
 */
const ALIAS_COPIES = `select concat(${Array(255).fill('event_message').join(', ')}) as a from edge_logs order by ${Array(400)
  .fill(`concat(${Array(10).fill('a').join(', ')})`)
  .join(', ')}`;

let server: EndpointTestServer;

function sandboxed(sql: string) {
  return server.app.inject({
    method: 'POST',
    url: '/api/endpoints/query/logs.all',
    headers: { 'x-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' },
    payload: { ...PARAMS, sql },
  });
}

async function scansStarted(): Promise<number> {
  const metric = await metricsRegistry.getSingleMetric('sandbox_scans_total')!.get();
  return metric.values.reduce((total, value) => total + value.value, 0);
}

/** The service still answers: /health, and an ordinary sandboxed query with the stored rows. */
async function expectServiceAnswers(): Promise<void> {
  const health = await server.app.inject({ url: '/health' });
  expect(health.statusCode).toBe(200);
  const ordinary = await sandboxed('select id from edge_logs order by id');
  expect(ordinary.statusCode, ordinary.body).toBe(200);
  expect(ordinary.json().result).toEqual([{ id: 'bounded-1' }, { id: 'bounded-2' }]);
}

beforeAll(async () => {
  server = await startEndpointServer({ now: NOW, overrides: { RATE_LIMIT_PER_MINUTE: '0' } });
  await server.index('edge_logs', EVENTS);
});

afterAll(async () => {
  await server?.close();
});

describe('bounded translation of sandboxed SQL', () => {
  it('refuses the 132-byte PARSE_TIMESTAMP format with 24 %E*S elements, naming the limit, and keeps answering', async () => {
    expect(Buffer.byteLength(EXPONENTIAL_FORMAT)).toBe(132);
    const response = await sandboxed(EXPONENTIAL_FORMAT);
    expect(response.statusCode, response.body).toBe(400);
    const { error } = response.json() as { error: { code: string; message: string } };
    expect(error.code).toBe('sandbox_violation');
    expect(error.message).toMatch(/24 %E\*S elements.*at most 2/);
    await expectServiceAnswers();
  });

  it('refuses a third %E*S in a query over a table before scanning it', async () => {
    const scansBefore = await scansStarted();
    const response = await sandboxed(`select parse_date('%E*S %E*S %E*S', event_message) as d from edge_logs`);
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json().error).toEqual({ code: 'sandbox_violation', message: expect.stringMatching(/3 %E\*S elements.*at most 2/) });
    expect(await scansStarted()).toBe(scansBefore);
  });

  it('answers the nested-SUBSTR query of the issue: its translation now grows with the query, not with 3^depth', async () => {
    expect(Buffer.byteLength(NESTED_SUBSTR)).toBe(24_340);
    const response = await sandboxed(NESTED_SUBSTR);
    expect(response.statusCode, response.body).toBe(200);
    const rows = response.json().result as Record<string, string>[];
    expect(rows).toHaveLength(EVENTS.length);
    expect(new Set(rows.flatMap((row) => Object.values(row)))).toEqual(new Set(EVENTS.map((event) => event.event_message)));
    expect(Object.keys(rows[0]!)).toHaveLength(256);
    await expectServiceAnswers();
  });

  it('refuses a query whose translation passes the budget with 400 query_too_expensive, before any scan, and keeps answering', async () => {
    const scansBefore = await scansStarted();
    for (const sql of [ALIAS_COPIES, `(${ALIAS_COPIES}) union all (${ALIAS_COPIES})`]) {
      const response = await sandboxed(sql);
      expect(response.statusCode, response.body.slice(0, 500)).toBe(400);
      const { error } = response.json() as { error: { code: string; message: string } };
      expect(error.code).toBe('query_too_expensive');
      expect(error.message).toContain(`${server.config.SANDBOX_MAX_TRANSLATED_CHARS} characters`);
      expect(error.message).toContain('SANDBOX_MAX_TRANSLATED_CHARS');
    }
    expect(await scansStarted()).toBe(scansBefore);
    await expectServiceAnswers();
  });
});
