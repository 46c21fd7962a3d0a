import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsRegistry } from '../../src/metrics.ts';
import { BOOTSTRAP_KEY, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';
import { sandboxDataset } from '../support/sandbox-data.ts';

/** More than the ids of the project's events take, less than their metadata. */
const HELD_BYTES = 64 * 1024;
const dataset = sandboxDataset({ perSource: 720, projects: ['default', 'other'] });
const edge = dataset.events.get('edge_logs')!;
const defaults = edge.filter((event) => event.project === 'default');
let server: EndpointTestServer;

async function gauge(name: string): Promise<number> {
  const metric = await metricsRegistry.getSingleMetric(name)!.get();
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
    overrides: { RATE_LIMIT_PER_MINUTE: '0', SANDBOX_MAX_HELD_BYTES: String(HELD_BYTES) },
  });
  await server.index('edge_logs', edge);
});

afterAll(async () => {
  await server?.close();
});

describe('the bytes the scanned rows of sandboxed queries take together (SANDBOX_MAX_HELD_BYTES)', () => {
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
