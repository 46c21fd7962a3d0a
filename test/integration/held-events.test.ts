import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsRegistry } from '../../src/metrics.ts';
import { BOOTSTRAP_KEY, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';
import { sandboxDataset } from '../support/sandbox-data.ts';

const dataset = sandboxDataset({ perSource: 720, projects: ['default', 'other'] });
const edge = dataset.events.get('edge_logs')!;
const defaults = edge.filter((event) => event.project === 'default');

async function gauge(name: string): Promise<number> {
  const metric = await metricsRegistry.getSingleMetric(name)!.get();
  return metric.values[0]?.value ?? 0;
}

/** A server of its own for a describe block, with the edge events indexed; `query` sends a sandboxed SQL text to it. */
function serverWith(overrides: Record<string, string>) {
  let server: EndpointTestServer;
  beforeAll(async () => {
    server = await startEndpointServer({ now: Date.UTC(2024, 0, 1, 1), overrides: { RATE_LIMIT_PER_MINUTE: '0', ...overrides } });
    await server.index('edge_logs', edge);
  });
  afterAll(async () => {
    await server?.close();
  });
  return {
    query: (sql: string) =>
      server.app.inject({
        method: 'POST',
        url: '/api/endpoints/query/logs.all',
        headers: { 'x-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' },
        payload: { project: 'default', sql },
      }),
  };
}

describe('the events all sandboxed queries hold together (SANDBOX_MAX_HELD_EVENTS)', () => {
  /** Less than two of these queries read: they cannot all hold their events at once. */
  const HELD = 501;
  const { query } = serverWith({ SANDBOX_MAX_SCAN_EVENTS: '500', SANDBOX_MAX_HELD_EVENTS: String(HELD), SANDBOX_ENGINE_QUEUE_PER_KEY: '20' });

  it('answers queries that together read more than the cap: each whole, or refused with 503 naming the cap; nothing stays held', async () => {
    expect(defaults.length * 2).toBeGreaterThan(HELD);
    const sqls = Array.from({ length: 6 }, (_, n) => (n % 2 === 0 ? 'select id from edge_logs' : 'select id, count(*) over () as n from edge_logs'));
    const responses = await Promise.all(sqls.map(query));
    const answered = responses.filter((response) => response.statusCode === 200);
    expect(answered.length).toBeGreaterThan(0);
    for (const response of answered) expect(response.json().result).toHaveLength(defaults.length);
    for (const response of responses.filter((candidate) => candidate.statusCode !== 200)) {
      expect(response.statusCode, response.body.slice(0, 300)).toBe(503);
      expect(response.json().error.code).toBe('store_unavailable');
      expect(response.json().error.message).toMatch(/SANDBOX_MAX_HELD_EVENTS/);
      expect(response.headers['retry-after']).toBe('1');
    }
    expect(await gauge('sandbox_held_events')).toBe(0);
  });

  it('a query alone reads its whole budget under the cap, and gives every event back', async () => {
    const response = await query('select id from edge_logs');
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
    expect(response.json().result).toHaveLength(defaults.length);
    expect(await gauge('sandbox_held_events')).toBe(0);
  });
});

describe('the bytes the scanned rows of sandboxed queries take together (SANDBOX_MAX_HELD_BYTES)', () => {
  /** More than the ids of the project's events take, less than their metadata. */
  const HELD_BYTES = 64 * 1024;
  const { query } = serverWith({ SANDBOX_MAX_HELD_BYTES: String(HELD_BYTES) });

  it('answers a query whose rows fit, whole, and gives every byte back', async () => {
    const response = await query('select id from edge_logs where length(id) > 0');
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
    expect(response.json().result).toHaveLength(defaults.length);
    expect(await gauge('sandbox_held_bytes')).toBe(0);
    expect(await gauge('sandbox_held_events')).toBe(0);
  });

  it('refuses with 400 query_too_broad, naming the variable, a query whose rows alone take more; nothing stays held', async () => {
    const response = await query('select id, metadata from edge_logs where length(id) > 0');
    expect(response.statusCode, response.body.slice(0, 300)).toBe(400);
    expect(response.json().error.code).toBe('query_too_broad');
    expect(response.json().error.message).toMatch(/more than the 65536 bytes the query service holds for sandboxed queries \(SANDBOX_MAX_HELD_BYTES\)/);
    expect(await gauge('sandbox_held_bytes')).toBe(0);
    expect(await gauge('sandbox_held_events')).toBe(0);
  });
});
