import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createElasticsearchClient } from '../../shared/elasticsearch.ts';
import { createLogger } from '../../shared/logger.ts';
import { buildServer } from '../../src/server.ts';
import { testConfig, uniqueName } from '../support/stack.ts';

/**
 * Each route's onRequest hooks by name, from fastify's own tree of routes: `GET /health` -> ['sendRequestId'].
 * A node is indented four characters a level under its parent and its path continues the parent's;
 * a node without methods is only a shared prefix.
 */
function onRequestHooks(app: FastifyInstance): Map<string, string[]> {
  const hooks = new Map<string, string[]>();
  const segments: string[] = [];
  let routes: string[] = [];
  for (const line of app.printRoutes({ includeHooks: true }).split('\n')) {
    const node = /^([│├└─ ]*)([^•\s]\S*)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (node) {
      segments.length = node[1]!.length / 4 - 1;
      segments.push(node[2]!);
      routes = (node[3]?.split(', ') ?? []).map((method) => `${method} ${segments.join('')}`);
      continue;
    }
    const hookLine = /• \(onRequest\) (\[.*\])$/.exec(line);
    if (!hookLine) continue;
    const names = (JSON.parse(hookLine[1]!) as string[]).map((name) => name.replace(/\(\)$/, ''));
    for (const route of routes) hooks.set(route, names);
  }
  return hooks;
}

describe('the API scope', () => {
  const opsToken = 'ops-token-for-api-scope-tests';
  const config = testConfig({ INDEX_PREFIX: `${uniqueName('scope')}-`, OPS_TOKEN: opsToken });
  const elasticsearch = createElasticsearchClient({ url: inject('elasticsearchUrl') });
  let app: FastifyInstance;

  beforeAll(async () => {
    app = await buildServer({ config, logger: createLogger('test', 'silent'), elasticsearch, kafkaBrokers: config.KAFKA_BROKERS! });
    await app.ready();
  });

  afterAll(async () => {
    await app.close();
    await elasticsearch.close();
  });

  it('authenticates and rate limits the API routes, after the request id', () => {
    const hooks = onRequestHooks(app);
    for (const method of ['GET', 'POST'])
      expect(hooks.get(`${method} /api/endpoints/query/:endpoint`)).toEqual(['sendRequestId', 'authenticate', 'spendToken']);
    expect(hooks.get('DELETE /api/endpoints/:endpoint')?.slice(0, 3)).toEqual(['sendRequestId', 'authenticate', 'spendToken']);
  });

  it('runs no key or rate-limit hook on the routes outside it', () => {
    const hooks = onRequestHooks(app);
    for (const route of ['GET /health', 'GET /ready', 'GET /metrics', 'GET /openapi.json', 'GET /docs']) expect(hooks.get(route)).toEqual(['sendRequestId']);
  });

  it('refuses a route under /api/ declared outside it, which would answer without a key, and takes one declared in it', async () => {
    const probe = async () => 'open';
    const other = await buildServer({
      config,
      logger: createLogger('test', 'silent'),
      elasticsearch,
      kafkaBrokers: config.KAFKA_BROKERS!,
      apiRoutes: async (api) => {
        api.get('/probe', probe);
      },
    });
    try {
      expect(() => other.get('/api/elsewhere', probe)).toThrow('GET /api/elsewhere is under /api/ but outside the API scope');
      expect(() => other.get('/elsewhere', probe)).not.toThrow();
      await other.ready();
      expect((await other.inject({ method: 'GET', url: '/api/probe' })).json().error.code).toBe('unauthorized');
      expect((await other.inject({ method: 'GET', url: '/api/probe', headers: { authorization: `Bearer ${opsToken}` } })).statusCode).toBe(401);
    } finally {
      await other.close();
    }
  });

  it('asks for a key before answering an unknown path under /api/, and not elsewhere', async () => {
    expect((await app.inject({ method: 'GET', url: '/api/nowhere' })).json().error.code).toBe('unauthorized');
    const outside = await app.inject({ method: 'GET', url: '/nowhere' });
    expect(outside.statusCode).toBe(404);
    expect(outside.json().error.code).toBe('route_not_found');
  });

  it('validates a management body by its route schema, before the handler looks the endpoint up, with the same codes', async () => {
    const headers = { authorization: `Bearer ${opsToken}` };
    const replace = await app.inject({ method: 'PUT', url: '/api/endpoints/no.such-endpoint', headers, payload: { name: 'Not Lower', sql: 'select 1' } });
    expect(replace.statusCode).toBe(400);
    expect(replace.json().error).toMatchObject({ code: 'invalid_endpoint', message: expect.stringContaining('name: a name is lower-case words') });
    const patch = await app.inject({ method: 'PATCH', url: '/api/endpoints/no.such-endpoint', headers, payload: [1] });
    expect(patch.json().error).toEqual({ code: 'invalid_endpoint', message: 'a PATCH body must be a JSON object holding the fields to change' });
    // no body at all is the handler's to refuse, as before
    const empty = await app.inject({ method: 'POST', url: '/api/endpoints', headers });
    expect(empty.json().error).toMatchObject({ code: 'bad_request', message: expect.stringContaining('send the endpoint as a JSON body') });
    // a valid body passes on to the handler, which finds no such endpoint
    const valid = await app.inject({ method: 'PUT', url: '/api/endpoints/no.such-endpoint', headers, payload: { name: 'x.y', sql: 'select 1' } });
    expect(valid.json().error.code).toBe('endpoint_not_found');
  });

  it('takes OPS_TOKEN for an operator on the management routes only', async () => {
    const headers = { authorization: `Bearer ${opsToken}` };
    expect((await app.inject({ method: 'GET', url: '/api/endpoints', headers })).statusCode).toBe(200);
    const query = await app.inject({ method: 'GET', url: '/api/endpoints/query/logs.all', headers });
    expect(query.statusCode).toBe(401);
    expect(query.json().error.code).toBe('unauthorized');
  });
});
