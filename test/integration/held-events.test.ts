import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsRegistry } from '../../src/metrics.ts';
import { BOOTSTRAP_KEY, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';
import { sandboxDataset } from '../support/sandbox-data.ts';

/** Less than two of this file's queries read: they cannot all hold their events at once. */
const HELD = 501;
const dataset = sandboxDataset({ perSource: 720, projects: ['default', 'other'] });
const edge = dataset.events.get('edge_logs')!;
const defaults = edge.filter((event) => event.project === 'default');
let server: EndpointTestServer;

async function heldEvents(): Promise<number> {
  const metric = await metricsRegistry.getSingleMetric('sandbox_held_events')!.get();
  return metric.values[0]?.value ?? 0;
}

const query = (sql: string) =>
  server.app.inject({
    method: 'POST',
    url: '/api/endpoints/query/logs.all',
    headers: { 'x-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' },
    payload: { project: 'default', sql },
  });

beforeAll(async () => {
  server = await startEndpointServer({
    now: Date.UTC(2024, 0, 1, 1),
    overrides: { RATE_LIMIT_PER_MINUTE: '0', SANDBOX_MAX_SCAN_EVENTS: '500', SANDBOX_MAX_HELD_EVENTS: String(HELD), SANDBOX_ENGINE_QUEUE_PER_KEY: '20' },
  });
  await server.index('edge_logs', edge);
});

afterAll(async () => {
  await server?.close();
});

describe('the events all sandboxed queries hold together (SANDBOX_MAX_HELD_EVENTS)', () => {
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
    expect(await heldEvents()).toBe(0);
  });

  it('a query alone reads its whole budget under the cap, and gives every event back', async () => {
    const response = await query('select id from edge_logs');
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
    expect(response.json().result).toHaveLength(defaults.length);
    expect(await heldEvents()).toBe(0);
  });
});
