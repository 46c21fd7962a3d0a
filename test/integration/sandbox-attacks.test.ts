import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsRegistry } from '../../src/metrics.ts';
import { SQL_ATTACKS } from '../fixtures/sql-attacks.ts';
import { BOOTSTRAP_KEY, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';

let server: EndpointTestServer;

async function scansRun(): Promise<number> {
  const metric = await metricsRegistry.getSingleMetric('sandbox_scans_total')!.get();
  return metric.values.reduce((sum, value) => sum + value.value, 0);
}

beforeAll(async () => {
  // the service's Elasticsearch is an address where nothing listens: a query that reached the
  // store would answer 503, and the engine only ever runs after the scans
  server = await startEndpointServer({ now: Date.UTC(2024, 0, 1, 1), elasticsearchUrl: 'http://127.0.0.1:9', overrides: { RATE_LIMIT_PER_MINUTE: '0' } });
});

afterAll(async () => {
  await server?.close();
});

describe(`the attack corpus over HTTP (${SQL_ATTACKS.length} cases)`, () => {
  it('refuses every case with 400 and its code before anything reaches Elasticsearch or the engine', async () => {
    const before = await scansRun();
    // a blank sql is no sandboxed query at all: the saved selection answers it
    for (const attack of SQL_ATTACKS.filter((candidate) => candidate.sql.trim() !== '')) {
      // long cases go in a JSON body, as clients send long SQL
      const response = await server.app.inject({
        method: 'POST',
        url: '/api/endpoints/query/logs.all',
        headers: { 'x-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' },
        payload: { project: 'default', sql: attack.sql },
      });
      expect(response.statusCode, `${attack.label}: ${response.body.slice(0, 300)}`).toBe(400);
      const error = (response.json() as { error: { code: string; message: string } }).error;
      expect(error.code, attack.label).toBe(attack.code);
      if (attack.mentions) expect(error.message, attack.label).toContain(attack.mentions);
    }
    expect(await scansRun()).toBe(before);
  }, 120_000);

  it('and a harmless query does try the store (so the check above is not vacuous)', async () => {
    const response = await server.app.inject({
      url: '/api/endpoints/query/logs.all?project=default&sql=select%20id%20from%20edge_logs',
      headers: { 'x-api-key': BOOTSTRAP_KEY },
    });
    expect(response.statusCode).toBe(503);
    expect(response.json().error.code).toBe('store_unavailable');
  });

  it('names no endpoint unknown while the endpoint store cannot be read: another name is 503, not 404', async () => {
    const response = await server.app.inject({ url: '/api/endpoints/query/errors.by-function?project=default', headers: { 'x-api-key': BOOTSTRAP_KEY } });
    expect(response.statusCode, response.body).toBe(503);
    expect(response.json().error.code).toBe('store_unavailable');
  });
});
