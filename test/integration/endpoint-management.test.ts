import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logger.ts';
import { kafkaConnection } from '../../shared/kafka-connection.ts';
import { KeyStore } from '../../src/auth/key-store.ts';
import { parseKeysCommand } from '../../src/auth/keys-command.ts';
import { buildServer } from '../../src/server.ts';
import { startEndpointAdminServer, storedDocumentCount } from '../support/endpoint-admin.ts';
import { BOOTSTRAP_KEY, edgeEvent, storedTimestamp, type EndpointTestServer } from '../support/endpoint-server.ts';
import { ManualClock } from '../support/manual-clock.ts';

const NOW = Date.UTC(2024, 4, 1, 12, 0, 0);
const OPS_TOKEN = 'ops-token-for-endpoint-management-tests';
const operator = { authorization: `Bearer ${OPS_TOKEN}` };
const caller = { 'x-api-key': BOOTSTRAP_KEY };

const countByPattern = {
  name: 'edge.count-matching',
  description: 'Edge events of one project whose message matches a LIKE pattern',
  sql: 'select count(*) as n from edge_logs where event_message like @pattern',
  parameters: [
    { name: 'project', type: 'string', required: true, description: 'project reference' },
    { name: 'pattern', type: 'string', required: true, description: 'LIKE pattern' },
  ],
  cacheSeconds: 60,
};

interface Stored {
  id: string;
  version: number;
  name: string;
  sql: string;
  deleted?: boolean;
}

/** A second query service on the same index prefix (so the same endpoint store), its own process state. */
async function secondService(server: EndpointTestServer): Promise<FastifyInstance> {
  const app = await buildServer({
    config: server.config,
    logger: createLogger('query-service', 'silent'),
    elasticsearch: server.elasticsearch,
    kafkaBrokers: server.config.KAFKA_BROKERS!,
    kafkaTls: kafkaConnection(server.config).tls,
    clock: new ManualClock(NOW),
  });
  await app.ready();
  return app;
}

async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (let attempt = 0; ; attempt += 1) {
    const value = await read();
    if (done(value) || attempt >= 200) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('endpoint management API', () => {
  let server: EndpointTestServer;
  let other: FastifyInstance;

  beforeAll(async () => {
    server = await startEndpointAdminServer(NOW, OPS_TOKEN, [
      edgeEvent('e4', storedTimestamp(NOW - 180_000), 'p2', { url: 'https://y.test/rest/v1/d', path: '/rest/v1/d' }),
    ]);
    other = await secondService(server);
  });

  afterAll(async () => {
    await other?.close();
    await server?.close();
  });

  const admin = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown, headers: Record<string, string> = operator) =>
    server.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }) });
  const query = (app: FastifyInstance, endpoint: string, parameters: string) =>
    app.inject({ url: `/api/endpoints/query/${endpoint}?${parameters}`, headers: caller });
  const storedVersions = () => storedDocumentCount(server);

  it('lists the two seeded endpoints with their UUIDs and settings', async () => {
    const response = await admin('GET', '/api/endpoints');
    expect(response.statusCode, response.body).toBe(200);
    const endpoints = (response.json() as { endpoints: (Stored & Record<string, unknown>)[] }).endpoints;
    expect(endpoints.map((endpoint) => [endpoint.name, endpoint.id, endpoint.version])).toEqual([
      ['usage.api-counts', 'c4f6a2e0-5b1d-4d8e-9a3c-7e2b1f0d6a41', 1],
      ['logs.all', '8d3b9f57-2c64-4e1a-b0d7-5f9e3a6c2b18', 1],
    ]);
    expect(endpoints[0]).toMatchObject({ maxRows: 1000, cacheSeconds: 900, warmingSeconds: 300, sandboxable: true, redactPii: false, enabled: true });
  });

  it('creates, calls, edits (new rows, cache dropped), restores and deletes an endpoint; a second service follows each change', async () => {
    const created = await admin('POST', '/api/endpoints', countByPattern);
    expect(created.statusCode, created.body).toBe(201);
    const endpoint = (created.json() as { endpoint: Stored }).endpoint;
    expect(endpoint).toMatchObject({ name: 'edge.count-matching', version: 1, maxRows: 1000 });

    const first = await query(server.app, 'edge.count-matching', 'project=p1&pattern=%25%7C%20200%20%7C%20e%25');
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toEqual({ result: [{ n: 3 }] });
    expect(first.headers['x-cache']).toBe('MISS');
    expect((await query(server.app, endpoint.id, 'project=p1&pattern=%25e1')).json()).toEqual({ result: [{ n: 1 }] });
    expect((await query(server.app, 'edge.count-matching', 'project=p1&pattern=%25%7C%20200%20%7C%20e%25')).headers['x-cache']).toBe('HIT');

    // the second service reads the same store: it serves the new endpoint within its refresh period
    const seen = await eventually(
      () => query(other, 'edge.count-matching', 'project=p1&pattern=%25'),
      (response) => response.statusCode === 200,
    );
    expect(seen.json()).toEqual({ result: [{ n: 3 }] });

    const edited = await admin('PATCH', `/api/endpoints/${endpoint.id}`, { sql: 'select count(*) * 10 as n from edge_logs where event_message like @pattern' });
    expect(edited.statusCode, edited.body).toBe(200);
    expect((edited.json() as { endpoint: Stored }).endpoint).toMatchObject({ id: endpoint.id, version: 2, cacheSeconds: 60 });
    const after = await query(server.app, 'edge.count-matching', 'project=p1&pattern=%25%7C%20200%20%7C%20e%25');
    expect(after.json()).toEqual({ result: [{ n: 30 }] });
    expect(after.headers['x-cache']).toBe('MISS');
    const otherAfter = await eventually(
      () => query(other, 'edge.count-matching', 'project=p1&pattern=%25'),
      (response) => response.body.includes('30'),
    );
    expect(otherAfter.json()).toEqual({ result: [{ n: 30 }] });

    const versions = await admin('GET', `/api/endpoints/${endpoint.id}/versions`);
    expect((versions.json() as { versions: Stored[] }).versions.map((version) => [version.version, version.sql.includes('* 10'), version.deleted])).toEqual([
      [1, false, false],
      [2, true, false],
    ]);

    const restored = await admin('POST', `/api/endpoints/${endpoint.id}/versions/1/restore`);
    expect(restored.statusCode, restored.body).toBe(200);
    expect((restored.json() as { endpoint: Stored }).endpoint).toMatchObject({ version: 3, sql: countByPattern.sql });
    expect((await query(server.app, 'edge.count-matching', 'project=p1&pattern=%25')).json()).toEqual({ result: [{ n: 3 }] });

    const deleted = await admin('DELETE', `/api/endpoints/${endpoint.id}`);
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect((await query(server.app, 'edge.count-matching', 'project=p1&pattern=%25')).statusCode).toBe(404);
    expect((await admin('GET', `/api/endpoints/${endpoint.id}`)).statusCode).toBe(404);
    const gone = await eventually(
      () => query(other, endpoint.id, 'project=p1&pattern=%25'),
      (response) => response.statusCode === 404,
    );
    expect(gone.json()).toMatchObject({ error: { code: 'endpoint_not_found' } });
    const history = (await admin('GET', `/api/endpoints/${endpoint.id}/versions`)).json() as { versions: Stored[] };
    expect(history.versions.map((version) => [version.version, version.deleted])).toEqual([
      [1, false],
      [2, false],
      [3, false],
      [4, true],
    ]);
  });

  it('validates each call against the declared parameters, naming the parameter', async () => {
    const created = await admin('POST', '/api/endpoints', {
      name: 'edge.newest',
      sql: 'select id from edge_logs where char_length(event_message) >= cast(@min_length as int64) order by timestamp desc limit 2',
      parameters: [
        { name: 'project', type: 'string', required: true },
        { name: 'min_length', type: 'integer', default: 1 },
      ],
    });
    expect(created.statusCode, created.body).toBe(201);
    expect((await query(server.app, 'edge.newest', 'project=p1')).json()).toEqual({ result: [{ id: 'e1' }, { id: 'e2' }] });
    const document = (await server.app.inject({ url: '/openapi.json' })).json() as {
      paths: Record<string, { get: { parameters: { name: string; required: boolean }[] } }>;
    };
    expect(document.paths['/api/endpoints/query/edge.newest']?.get.parameters.map((parameter) => [parameter.name, parameter.required])).toEqual([
      ['project', true],
      ['min_length', false],
      ['sql', false],
      ['lql', false],
      ['stats', false],
      ['format', false],
      ['cursor', false],
      ['page_size', false],
      ['SVC-ENDPOINT-REDACT-PII', false],
      ['LF-ENDPOINT-REDACT-PII', false],
      ['SVC-ENDPOINT-STATS', false],
    ]);
    const missing = await query(server.app, 'edge.newest', '');
    expect(missing.statusCode).toBe(400);
    expect(missing.json()).toMatchObject({ error: { code: 'bad_parameter', message: expect.stringContaining('project is required') } });
    expect((await query(server.app, 'edge.newest', 'project=p1&min_length=100')).json()).toEqual({ result: [] });
    const wrongType = await query(server.app, 'edge.newest', 'project=p1&min_length=two');
    expect(wrongType.statusCode).toBe(400);
    expect(wrongType.json()).toMatchObject({ error: { code: 'bad_parameter', message: expect.stringContaining('min_length must be an integer') } });
  });

  it("lets a caller's sql read the saved query's CTEs, and stops serving a disabled endpoint", async () => {
    const created = await admin('POST', '/api/endpoints', {
      name: 'edge.matching',
      sql: 'with matching as (select id, timestamp, event_message from edge_logs where event_message like @pattern)\nselect count(*) as n from matching',
      parameters: countByPattern.parameters,
    });
    expect(created.statusCode, created.body).toBe(201);
    const sql = (text: string) => `project=p1&pattern=%25e%25&sql=${encodeURIComponent(text)}`;
    expect((await query(server.app, 'edge.matching', sql('select id from matching order by id'))).json()).toEqual({
      result: [{ id: 'e1' }, { id: 'e2' }, { id: 'e3' }],
    });
    expect((await query(server.app, 'edge.matching', sql('select count(*) as n from edge_logs'))).json()).toEqual({ result: [{ n: 3 }] });
    const shadowed = await query(server.app, 'edge.matching', sql('with matching as (select 1 as id) select id from matching'));
    expect(shadowed.json()).toMatchObject({ error: { code: 'sandbox_violation', message: expect.stringContaining('already defines matching') } });
    const unknown = await query(server.app, 'edge.matching', sql('select id from elsewhere'));
    expect(unknown.json()).toMatchObject({ error: { code: 'unknown_table', message: expect.stringContaining('matching') } });

    expect((await admin('PATCH', '/api/endpoints/edge.matching', { enabled: false })).statusCode).toBe(200);
    expect((await query(server.app, 'edge.matching', 'project=p1&pattern=%25')).statusCode).toBe(404);
    expect((await server.app.inject({ url: '/openapi.json' })).body).not.toContain('edge.matching');
    expect((await admin('GET', '/api/endpoints/edge.matching')).json()).toMatchObject({ endpoint: { enabled: false, version: 2 } });
  });

  it('refuses invalid SQL, an undeclared or unused parameter, a name clash and a query key, storing nothing', async () => {
    const before = await storedVersions();
    const refusals: [string, unknown, number, string, RegExp][] = [
      ['syntax', { ...countByPattern, name: 'bad.syntax', sql: 'select count(*) as n\nfrom edge_logs where' }, 400, 'sql_syntax', /line 2, column \d+/],
      [
        'unknown table',
        { ...countByPattern, name: 'bad.table', sql: 'select count(*) as n from secrets where x like @pattern' },
        400,
        'unknown_table',
        /secrets/,
      ],
      [
        'undeclared',
        { ...countByPattern, name: 'bad.undeclared', sql: 'select count(*) as n from edge_logs where event_message like @other' },
        400,
        'invalid_query',
        /@other/,
      ],
      [
        'unused',
        { ...countByPattern, name: 'bad.unused', sql: 'select count(*) as n from edge_logs' },
        400,
        'invalid_endpoint',
        /pattern is declared but the sql never reads it/,
      ],
      ['no project', { ...countByPattern, name: 'bad.scope', parameters: [countByPattern.parameters[1]] }, 400, 'invalid_endpoint', /project must be declared/],
      ['bad record', { ...countByPattern, name: 'bad.rows', maxRows: 20_000 }, 400, 'invalid_endpoint', /^maxRows: /],
      ['name clash', { ...countByPattern, name: 'logs.all' }, 409, 'name_taken', /logs\.all is taken/],
    ];
    for (const [label, body, status, code, message] of refusals) {
      const response = await admin('POST', '/api/endpoints', body);
      expect(response.statusCode, `${label}: ${response.body}`).toBe(status);
      expect(response.json(), label).toMatchObject({ error: { code, message: expect.stringMatching(message) } });
    }
    const queryKey = await server.createKey({});
    for (const [method, url] of [
      ['GET', '/api/endpoints'],
      ['POST', '/api/endpoints'],
      ['DELETE', '/api/endpoints/logs.all'],
    ] as const) {
      const response = await admin(method, url, method === 'POST' ? { ...countByPattern, name: 'by.query-key' } : undefined, { 'x-api-key': queryKey });
      expect(response.statusCode, response.body).toBe(403);
      expect(response.json()).toMatchObject({ error: { code: 'forbidden', message: expect.stringContaining('operator credential') } });
    }
    expect((await admin('GET', '/api/endpoints', undefined, {})).statusCode).toBe(401);
    expect(await storedVersions()).toBe(before);
  });

  it('gives a name to one endpoint only, even to saves racing for it; a renamed or deleted endpoint lets its name go', async () => {
    const racing = await Promise.all(Array.from({ length: 4 }, () => admin('POST', '/api/endpoints', { ...countByPattern, name: 'edge.contested' })));
    expect(racing.map((response) => response.statusCode).sort()).toEqual([201, 409, 409, 409]);
    for (const refused of racing.filter((response) => response.statusCode === 409)) expect(refused.json()).toMatchObject({ error: { code: 'name_taken' } });
    const listed = (await admin('GET', '/api/endpoints')).json() as { endpoints: Stored[] };
    expect(listed.endpoints.filter((endpoint) => endpoint.name === 'edge.contested')).toHaveLength(1);

    const first = (racing.find((response) => response.statusCode === 201)!.json() as { endpoint: Stored }).endpoint;
    expect((await admin('PATCH', `/api/endpoints/${first.id}`, { name: 'edge.renamed' })).statusCode).toBe(200);
    const second = await admin('POST', '/api/endpoints', { ...countByPattern, name: 'edge.contested' });
    expect(second.statusCode, second.body).toBe(201);
    expect((await admin('POST', `/api/endpoints/${first.id}/versions/1/restore`)).json()).toMatchObject({ error: { code: 'name_taken' } });
    expect((await admin('DELETE', `/api/endpoints/${(second.json() as { endpoint: Stored }).endpoint.id}`)).statusCode).toBe(200);
    const restored = await admin('POST', `/api/endpoints/${first.id}/versions/1/restore`);
    expect((restored.json() as { endpoint: Stored }).endpoint).toMatchObject({ name: 'edge.contested', version: 3 });
  });

  it('keeps a key limited to an endpoint (by id, as npm run keys stores it) on that endpoint through a rename', async () => {
    const created = await admin('POST', '/api/endpoints', { ...countByPattern, name: 'edge.scoped' });
    const endpoint = (created.json() as { endpoint: Stored }).endpoint;
    const command = parseKeysCommand(['create', '--account', 'scoped', '--endpoints', 'edge.scoped'], [endpoint]);
    const ids = command.action === 'create' && command.endpoints !== 'all' ? command.endpoints : [];
    expect(ids).toEqual([endpoint.id]);
    const { key } = await new KeyStore(server.elasticsearch, server.config.INDEX_PREFIX, 0).create({ account: 'scoped', endpoints: ids, projects: null });
    const call = (name: string) => server.app.inject({ url: `/api/endpoints/query/${name}?project=p1&pattern=%25`, headers: { 'x-api-key': key } });
    expect((await call('edge.scoped')).statusCode).toBe(200);
    expect((await admin('PATCH', `/api/endpoints/${endpoint.id}`, { name: 'edge.scoped-renamed' })).statusCode).toBe(200);
    const renamed = await eventually(
      () => call('edge.scoped-renamed'),
      (response) => response.statusCode !== 404,
    );
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect((await call('logs.all')).statusCode).toBe(403);
  });

  it('accepts an API key created with the admin scope', async () => {
    const { key } = await new KeyStore(server.elasticsearch, server.config.INDEX_PREFIX, 0).create({
      account: 'ops',
      endpoints: 'all',
      projects: null,
      admin: true,
    });
    const response = await admin('PATCH', '/api/endpoints/logs.all', { description: 'edited by an admin key' }, { 'x-api-key': key });
    expect(response.statusCode, response.body).toBe(200);
    expect((response.json() as { endpoint: Stored }).endpoint).toMatchObject({ name: 'logs.all', version: 2 });
    // a settings-only change keeps the seeded query, so logs.all answers exactly as before
    const rows = await query(server.app, 'logs.all', 'project=p1');
    expect((rows.json() as { result: { id: string }[] }).result.map((row) => row.id)).toEqual(['e1', 'e2', 'e3']);
  });

  it('keeps every endpoint and version across a restart', async () => {
    const before = (await admin('GET', '/api/endpoints')).json() as { endpoints: Stored[] };
    await other.close();
    other = await secondService(server);
    const restarted = await other.inject({ url: '/api/endpoints', headers: operator });
    expect(restarted.json()).toEqual(before);
    const newest = before.endpoints.find((endpoint) => endpoint.name === 'edge.newest')!;
    expect((await query(other, 'edge.newest', 'project=p1')).json()).toEqual({ result: [{ id: 'e1' }, { id: 'e2' }] });
    const versions = await other.inject({ url: `/api/endpoints/${newest.id}/versions`, headers: operator });
    expect((versions.json() as { versions: Stored[] }).versions).toHaveLength(1);
  });
});
