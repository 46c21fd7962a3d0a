import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOTSTRAP_KEY, edgeEvent, startEndpointServer, storedTimestamp, type EndpointTestServer } from '../support/endpoint-server.ts';

const NOW = Date.UTC(2024, 4, 1, 12, 0, 0);

/** The error codes of docs/api.md's table, each asked for over a real socket and checked in the envelope. */
describe('error codes over HTTP', () => {
  let server: EndpointTestServer;
  let base: string;

  beforeAll(async () => {
    server = await startEndpointServer({ now: NOW });
    // the store must hold an edge event for a project pattern to reach Elasticsearch's regexp
    await server.index('edge_logs', [edgeEvent('e1', storedTimestamp(NOW - 60_000), 'default', { url: 'https://x.test/rest/v1/a', path: '/rest/v1/a' })]);
    base = await server.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => server?.close());

  async function call(path: string, init: RequestInit = {}): Promise<{ status: number; code: string; message: string }> {
    const response = await fetch(`${base}${path}`, { ...init, headers: { 'x-api-key': BOOTSTRAP_KEY, ...init.headers } });
    const body = (await response.json()) as { error?: { code: string; message: string } };
    return { status: response.status, code: body.error?.code ?? '(none)', message: body.error?.message ?? '' };
  }

  it('bad_parameter: a missing, unknown-valued or unparseable parameter, named in the message', async () => {
    expect(await call('/api/endpoints/query/usage.api-counts?interval=weekly&project=default')).toMatchObject({
      status: 400,
      code: 'bad_parameter',
      message: expect.stringContaining('interval'),
    });
    expect(await call('/api/endpoints/query/logs.all')).toMatchObject({ status: 400, code: 'bad_parameter', message: expect.stringContaining('project') });
    expect(await call('/api/endpoints/query/logs.all?project=default&iso_timestamp_start=yesterday-ish')).toMatchObject({
      status: 400,
      code: 'bad_parameter',
      message: expect.stringContaining('iso_timestamp_start'),
    });
  });

  it('invalid_pattern: a project pattern that is not a regular expression', async () => {
    for (const pattern of ['(abc', 'a{3,1}', '*x', '[z-a]']) {
      expect(await call(`/api/endpoints/query/usage.api-counts?interval=hourly&project=${encodeURIComponent(pattern)}`)).toMatchObject({
        status: 400,
        code: 'invalid_pattern',
      });
    }
  });

  it('pattern_too_complex: a valid pattern Elasticsearch refuses to evaluate', async () => {
    const tooLong = 'a'.repeat(1500);
    const answer = await call(`/api/endpoints/query/usage.api-counts?interval=hourly&project=${tooLong}`);
    expect(answer).toMatchObject({ status: 400, code: 'pattern_too_complex', message: expect.stringContaining('project') });
  });

  it('bad_request: a body that is not what its content type says', async () => {
    const malformed = await call('/api/endpoints/query/logs.all', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"project": "default",',
    });
    expect(malformed).toMatchObject({ status: 400, code: 'bad_request' });
    const unsupported = await call('/api/endpoints/query/logs.all', {
      method: 'POST',
      headers: { 'content-type': 'application/xml' },
      body: '<project>default</project>',
    });
    expect(unsupported.code).toBe('bad_request');
    expect(unsupported.status).toBe(415);
  });

  it('route_not_found: a path nothing is served at, inside and outside /api/', async () => {
    // the message says where endpoints are served, and never echoes the caller's path back
    const nowhere = await call('/nowhere');
    expect(nowhere).toMatchObject({ status: 404, code: 'route_not_found', message: expect.stringContaining('/api/endpoints/query/') });
    expect(nowhere.message).not.toContain('/nowhere');
    expect(await call('/api/endpoints/querry/logs.all')).toMatchObject({ status: 404, code: 'route_not_found' });
  });
});
