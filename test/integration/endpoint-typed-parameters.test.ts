import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEndpointAdminServer, storedDocumentCount } from '../support/endpoint-admin.ts';
import { BOOTSTRAP_KEY, type EndpointTestServer } from '../support/endpoint-server.ts';

const NOW = Date.UTC(2024, 4, 1, 12, 0, 0);
const OPS_TOKEN = 'ops-token-for-typed-parameter-tests';
const operator = { authorization: `Bearer ${OPS_TOKEN}` };
const project = { name: 'project', type: 'string', required: true, description: 'project reference' };

describe("stored endpoints' typed parameters", () => {
  let server: EndpointTestServer;

  beforeAll(async () => {
    server = await startEndpointAdminServer(NOW, OPS_TOKEN);
  });

  afterAll(async () => {
    await server?.close();
  });

  const save = (body: Record<string, unknown>) => server.app.inject({ method: 'POST', url: '/api/endpoints', headers: operator, payload: body });
  const query = (endpoint: string, parameters: string) =>
    server.app.inject({ url: `/api/endpoints/query/${endpoint}?${parameters}`, headers: { 'x-api-key': BOOTSTRAP_KEY } });
  const storedVersions = () => storedDocumentCount(server);

  it('gives @name its declared type: INT64 against INT64 and as a LIMIT, FLOAT64, BOOL and TIMESTAMP', async () => {
    const created = await save({
      name: 'edge.typed',
      sql: [
        'select id, @ratio * 2 as doubled, @strict as strict from edge_logs',
        'where char_length(event_message) >= @min_length and timestamp > @since and (@strict or true)',
        'order by timestamp desc limit @n',
      ].join('\n'),
      parameters: [
        project,
        { name: 'min_length', type: 'integer', default: 1 },
        { name: 'n', type: 'integer', default: 2 },
        { name: 'ratio', type: 'number', default: 0.5 },
        { name: 'strict', type: 'boolean', default: false },
        { name: 'since', type: 'timestamp', default: '2024-01-01T00:00:00.000Z' },
      ],
    });
    expect(created.statusCode, created.body).toBe(201);
    const rows = await query('edge.typed', 'project=p1');
    expect(rows.statusCode, rows.body).toBe(200);
    expect(rows.json()).toEqual({
      result: [
        { id: 'e1', doubled: 1, strict: false },
        { id: 'e2', doubled: 1, strict: false },
      ],
    });
    const since = new Date(NOW - 150_000).toISOString();
    const narrowed = await query('edge.typed', `project=p1&n=5&ratio=-1.25&strict=TRUE&since=${since}`);
    expect(narrowed.json()).toEqual({
      result: [
        { id: 'e1', doubled: -2.5, strict: true },
        { id: 'e2', doubled: -2.5, strict: true },
      ],
    });
    expect((await query('edge.typed', 'project=p1&n=1&min_length=1000')).json()).toEqual({ result: [] });
    expect((await query('edge.typed', 'project=p1&n=1')).json()).toEqual({ result: [{ id: 'e1', doubled: 1, strict: false }] });
  });

  it('refuses at save, storing nothing, SQL only the printer finds wrong: a type mismatch, a LIMIT of a text parameter', async () => {
    const before = await storedVersions();
    const mismatch = await save({
      name: 'bad.mismatch',
      sql: 'select id from edge_logs where char_length(event_message) >= @label',
      parameters: [project, { name: 'label', type: 'string', default: 'x' }],
    });
    expect(mismatch.statusCode, mismatch.body).toBe(400);
    expect(mismatch.json()).toMatchObject({
      error: { code: 'invalid_query', message: expect.stringMatching(/No matching signature for operator >= for argument types INT64, STRING/) },
    });
    const limit = await save({
      name: 'bad.limit',
      sql: 'select id from edge_logs order by timestamp desc limit @n',
      parameters: [project, { name: 'n', type: 'string', default: '2' }],
    });
    expect(limit.statusCode, limit.body).toBe(400);
    expect(limit.json()).toMatchObject({
      error: { code: 'invalid_query', message: expect.stringContaining('LIMIT @n must be a parameter declared as an integer') },
    });
    expect(await storedVersions()).toBe(before);
    expect((await query('bad.mismatch', 'project=p1')).statusCode).toBe(404);
  });

  it('accepts at save a query over metadata, whose types only the scanned rows decide', async () => {
    const created = await save({
      name: 'edge.first-url',
      sql: 'select id, metadata[offset(0)].request[offset(0)].url as url from edge_logs order by timestamp desc limit @n',
      parameters: [project, { name: 'n', type: 'integer', default: 1 }],
    });
    expect(created.statusCode, created.body).toBe(201);
    expect((await query('edge.first-url', 'project=p1')).json()).toEqual({ result: [{ id: 'e1', url: 'https://x.test/rest/v1/a' }] });
  });

  it('lists each declared parameter in the OpenAPI document with its type, default, allowed values, pattern and description', async () => {
    const created = await save({
      name: 'edge.documented',
      sql: 'select id from edge_logs where event_message like @pattern and @verbose and char_length(@level) > 0 limit @n',
      parameters: [
        project,
        { name: 'n', type: 'integer', default: 10, description: 'rows at most' },
        { name: 'verbose', type: 'boolean', default: true },
        { name: 'level', type: 'string', allowedValues: ['info', 'error'], default: 'info' },
        { name: 'pattern', type: 'string', required: true, pattern: '[%a-z ]+', description: 'LIKE pattern' },
      ],
    });
    expect(created.statusCode, created.body).toBe(201);
    const document = (await server.app.inject({ url: '/openapi.json' })).json() as {
      paths: Record<string, { get: { parameters: { name: string; required: boolean; description: string; schema: unknown }[] } }>;
    };
    const parameters = document.paths['/api/endpoints/query/edge.documented']!.get.parameters;
    expect(parameters.slice(0, 5)).toEqual([
      { name: 'project', in: 'query', required: true, description: 'project reference', schema: { type: 'string' } },
      { name: 'n', in: 'query', required: false, description: 'rows at most', schema: { type: 'integer', default: 10 } },
      { name: 'verbose', in: 'query', required: false, description: '', schema: { type: 'boolean', default: true } },
      { name: 'level', in: 'query', required: false, description: '', schema: { type: 'string', default: 'info', enum: ['info', 'error'] } },
      { name: 'pattern', in: 'query', required: true, description: 'LIKE pattern', schema: { type: 'string', pattern: '^(?:[%a-z ]+)$' } },
    ]);
    // the docs page renders the same document, the new endpoint included
    const shown = (await server.app.inject({ url: '/docs/json' })).json() as typeof document;
    expect(shown.paths['/api/endpoints/query/edge.documented']!.get.parameters.slice(0, 5)).toEqual(parameters.slice(0, 5));
  });
});
