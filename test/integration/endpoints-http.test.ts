import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageApiCounts } from '../../queries/usage-api-counts.ts';
import { BOOTSTRAP_KEY, edgeEvent, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';

const NOW = Date.UTC(2024, 0, 1, 12, 30);
const headers = { 'x-api-key': BOOTSTRAP_KEY };

describe('endpoint route: methods, parameters, cache headers, redaction', () => {
  let server: EndpointTestServer;

  beforeAll(async () => {
    server = await startEndpointServer({ now: NOW });
    await server.index('edge_logs', [
      edgeEvent(
        'ips',
        '2024-01-01T12:10:00.000000Z',
        'abc',
        { url: 'https://abc.supabase.co/rest/v1/t?ip=203.0.113.9', path: '/rest/v1/t', headers: { x_forwarded_for: '2001:db8::7, 198.51.100.23' } },
        {
          response: { origin_time: 12, headers: { via: 'proxy fe80::1%eth0' } },
        },
      ),
    ]);
    await server.index('edge_logs', [
      {
        ...edgeEvent('ip-message', '2024-01-01T12:11:00.000000Z', 'abc', { url: 'https://abc.supabase.co/auth/v1', path: '/auth/v1' }),
        event_message: 'GET | 200 | 192.0.2.44 | ray',
      },
    ]);
  });

  afterAll(async () => {
    await server.close();
  });

  it('unknown endpoint after a valid key: 404 endpoint_not_found', async () => {
    const response = await server.app.inject({ url: '/api/endpoints/query/usage.nothing?project=a', headers });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ error: { code: 'endpoint_not_found' } });
  });

  it('a key scoped to other endpoints: 403, while its own endpoint answers by UUID and by name', async () => {
    const key = await server.createKey({ endpoints: [usageApiCounts.id] });
    const other = await server.app.inject({ url: '/api/endpoints/query/logs.all?project=abc', headers: { 'x-api-key': key } });
    expect(other.statusCode).toBe(403);
    expect(other.json()).toMatchObject({ error: { code: 'forbidden' } });
    for (const path of [usageApiCounts.id, usageApiCounts.name]) {
      const own = await server.app.inject({ url: `/api/endpoints/query/${path}?interval=hourly&project=abc`, headers: { 'x-api-key': key } });
      expect(own.statusCode).toBe(200);
    }
  });

  it('sql and lql run in the sandbox (from the query string or a JSON body); a non-empty sql wins', async () => {
    const fromQuery = await server.app.inject({ url: '/api/endpoints/query/logs.all', query: { project: 'abc', sql: "select 'q' as via" }, headers });
    expect(fromQuery.json()).toEqual({ result: [{ via: 'q' }] });
    const fromBody = await server.app.inject({
      method: 'POST',
      url: '/api/endpoints/query/logs.all',
      payload: { project: 'abc', sql: "select 'b' as via", lql: 'x' },
      headers: { ...headers, 'content-type': 'application/json' },
    });
    expect(fromBody.json()).toEqual({ result: [{ via: 'b' }] });
    const fromGetBody = await server.app.inject({
      method: 'GET',
      url: '/api/endpoints/query/logs.all',
      payload: JSON.stringify({ project: 'abc', sql: "select 'g' as via" }),
      headers: { ...headers, 'content-type': 'application/json; charset=utf-8' },
    });
    expect(fromGetBody.json()).toEqual({ result: [{ via: 'g' }] });
    const badGetBody = await server.app.inject({
      method: 'GET',
      url: '/api/endpoints/query/logs.all?project=abc',
      payload: '{"sql":',
      headers: { ...headers, 'content-type': 'application/json' },
    });
    expect(badGetBody.statusCode).toBe(400);
    expect(badGetBody.json().error.message).toMatch(/body is not valid JSON/);
    const lql = await server.app.inject({ url: '/api/endpoints/query/logs.all', query: { project: 'abc', lql: 'f:edge_logs error' }, headers });
    expect(lql.statusCode).toBe(200);
    expect(lql.json()).toEqual({ result: [] });
    const blankSqlBesideLql = await server.app.inject({
      url: '/api/endpoints/query/logs.all',
      query: { project: 'abc', sql: ' ', lql: 'f:edge_logs error' },
      headers,
    });
    expect(blankSqlBesideLql.json()).toEqual({ result: [] });
  });

  it('a blank sql or lql is a 400 "Query cannot be empty", never the saved query', async () => {
    for (const query of <Record<string, string>[]>[
      { sql: '' },
      { sql: '  \n ' },
      { sql: '-- only a comment\n/* and another */' },
      { sql: ';' },
      { lql: '' },
      { sql: '', lql: ' ' },
    ]) {
      const response = await server.app.inject({ url: '/api/endpoints/query/logs.all', query: { project: 'abc', ...query }, headers });
      expect(response.statusCode, JSON.stringify(query)).toBe(400);
      expect(response.json(), JSON.stringify(query)).toEqual({ error: { code: 'invalid_query', message: 'Query cannot be empty' } });
    }
  });

  it('ignores parameters the endpoint does not declare, also in the cache key', async () => {
    const first = await server.app.inject({ url: '/api/endpoints/query/usage.api-counts?interval=minutely&project=abc&utm=1', headers });
    const second = await server.app.inject({ url: '/api/endpoints/query/usage.api-counts?interval=minutely&project=abc&utm=2&foo=bar', headers });
    expect(first.statusCode).toBe(200);
    expect(first.headers['x-cache']).toBe('MISS');
    expect(second.headers['x-cache']).toBe('HIT');
    expect(second.json()).toEqual(first.json());
  });

  it('POST with a JSON body works, body values overriding the query string', async () => {
    const response = await server.app.inject({
      method: 'POST',
      url: '/api/endpoints/query/logs.all?project=nobody',
      headers: { ...headers, 'content-type': 'application/json; charset=utf-8' },
      payload: { project: 'abc', iso_timestamp_start: '', iso_timestamp_end: '2024-01-01T12:10:00.000Z' },
    });
    expect(response.statusCode).toBe(200);
    expect((response.json() as { result: { id: string }[] }).result.map((row) => row.id)).toEqual(['ips']);
  });

  it('cached endpoints carry X-Cache and Age; logs.all bypasses the cache', async () => {
    const miss = await server.app.inject({ url: '/api/endpoints/query/usage.api-counts?interval=hourly&project=supabase', headers });
    expect(miss.headers['x-cache']).toBe('MISS');
    expect(miss.headers.age).toBe('0');
    await server.clock.advance(61_000);
    const hit = await server.app.inject({ url: '/api/endpoints/query/usage.api-counts?project=supabase&interval=hourly', headers });
    expect(hit.headers['x-cache']).toBe('HIT');
    expect(hit.headers.age).toBe('61');
    const logs = await server.app.inject({ url: '/api/endpoints/query/logs.all?project=abc', headers });
    expect(logs.headers['x-cache']).toBe('BYPASS');
    expect(logs.headers.age).toBe('0');
  });

  it('SVC-ENDPOINT-REDACT-PII: true redacts IPv4 and IPv6 at any depth; without it rows are untouched', async () => {
    const plain = await server.app.inject({ url: '/api/endpoints/query/logs.all?project=abc', headers });
    const plainRows = (plain.json() as { result: Record<string, unknown>[] }).result;
    expect(JSON.stringify(plainRows)).toContain('2001:db8::7');
    expect(JSON.stringify(plainRows)).toContain('192.0.2.44');
    for (const value of ['true', 'TRUE', 'True']) {
      const redacted = await server.app.inject({ url: '/api/endpoints/query/logs.all?project=abc', headers: { ...headers, 'svc-endpoint-redact-pii': value } });
      expect(redacted.json()).toEqual({
        result: [
          {
            id: 'ip-message',
            timestamp: 1_704_111_060_000_000,
            event_message: 'GET | 200 | REDACTED | ray',
            metadata: [{ request: [{ url: 'https://abc.supabase.co/auth/v1', path: '/auth/v1' }] }],
          },
          {
            id: 'ips',
            timestamp: 1_704_111_000_000_000,
            event_message: 'GET | 200 | ips',
            metadata: [
              {
                request: [{ url: 'https://abc.supabase.co/rest/v1/t?ip=REDACTED', path: '/rest/v1/t', headers: [{ x_forwarded_for: 'REDACTED, REDACTED' }] }],
                response: [{ origin_time: 12, headers: [{ via: 'proxy REDACTED' }] }],
              },
            ],
          },
        ],
      });
    }
    const off = await server.app.inject({ url: '/api/endpoints/query/logs.all?project=abc', headers: { ...headers, 'svc-endpoint-redact-pii': 'false' } });
    expect(off.json()).toEqual(plain.json());
  });

  it('LF-ENDPOINT-REDACT-PII answers exactly as SVC-ENDPOINT-REDACT-PII; both agreeing count as one, disagreeing are a 400 naming both', async () => {
    const url = '/api/endpoints/query/logs.all?project=abc';
    const answer = (extra: Record<string, string>) => server.app.inject({ url, headers: { ...headers, ...extra } });
    const plain = await answer({});
    const redacted = await answer({ 'svc-endpoint-redact-pii': 'true' });
    expect(redacted.body).not.toEqual(plain.body);
    for (const value of ['true', ' TRUE ']) expect((await answer({ 'lf-endpoint-redact-pii': value })).body).toEqual(redacted.body);
    expect((await answer({ 'lf-endpoint-redact-pii': 'false' })).body).toEqual(plain.body);
    expect((await answer({ 'svc-endpoint-redact-pii': 'true', 'lf-endpoint-redact-pii': 'True' })).body).toEqual(redacted.body);
    expect((await answer({ 'svc-endpoint-redact-pii': 'false', 'lf-endpoint-redact-pii': 'false' })).body).toEqual(plain.body);
    for (const [svc, lf] of [
      ['true', 'false'],
      ['FALSE', 'true'],
    ]) {
      const refused = await answer({ 'svc-endpoint-redact-pii': svc!, 'lf-endpoint-redact-pii': lf! });
      expect(refused.statusCode).toBe(400);
      expect(refused.json().error.code).toBe('bad_request');
      expect(refused.json().error.message).toMatch(/SVC-ENDPOINT-REDACT-PII: (true|false), LF-ENDPOINT-REDACT-PII: (true|false) disagree/);
    }
  });

  describe('Server-Timing', () => {
    /** The header's phases and their durations, checking each entry is `name;dur=<non-negative number>`. */
    function phases(header: unknown): Record<string, number> {
      expect(typeof header).toBe('string');
      return Object.fromEntries(
        String(header)
          .split(', ')
          .map((entry) => {
            const match = /^(\w+);dur=(\d+(?:\.\d+)?)$/.exec(entry);
            expect(match, entry).not.toBeNull();
            return [match![1], Number(match![2])];
          }),
      );
    }

    it('a cached answer names cache but not store; the miss before it read the store', async () => {
      const url = '/api/endpoints/query/usage.api-counts?interval=minutely&project=timing';
      const miss = await server.app.inject({ url, headers });
      const hit = await server.app.inject({ url, headers });
      expect([miss.headers['x-cache'], hit.headers['x-cache']]).toEqual(['MISS', 'HIT']);
      expect(Object.keys(phases(miss.headers['server-timing']))).toEqual(['auth', 'cache', 'plan', 'store', 'encode']);
      expect(Object.keys(phases(hit.headers['server-timing']))).toEqual(['auth', 'cache']);
      expect(hit.body).toBe(miss.body);
      expect(hit.body.startsWith('{"result":[')).toBe(true);
    });

    it('an uncached logs.all answer names store, and its body is the plain result', async () => {
      const response = await server.app.inject({ url: '/api/endpoints/query/logs.all?project=abc', headers });
      expect(response.headers['x-cache']).toBe('BYPASS');
      expect(Object.keys(phases(response.headers['server-timing']))).toEqual(['auth', 'plan', 'store', 'encode']);
      expect(Object.keys(response.json())).toEqual(['result']);
    });

    it('a sandboxed SQL answer names the engine that ran its residual query', async () => {
      const response = await server.app.inject({
        url: '/api/endpoints/query/logs.all',
        query: { project: 'abc', sql: 'select count(*) as n from edge_logs where length(event_message) >= 0' },
        headers,
      });
      expect(response.body).toBe('{"result":[{"n":2}]}');
      expect(Object.keys(phases(response.headers['server-timing']))).toEqual(['auth', 'plan', 'store', 'engine', 'encode']);
    });

    it('a count the service finishes over the scanned events has no engine phase', async () => {
      const response = await server.app.inject({
        url: '/api/endpoints/query/logs.all',
        query: { project: 'abc', sql: 'select count(*) as n from edge_logs' },
        headers,
      });
      expect(response.body).toBe('{"result":[{"n":2}]}');
      expect(Object.keys(phases(response.headers['server-timing']))).toEqual(['auth', 'plan', 'store', 'encode']);
    });

    it('an error answer names the phases it went through', async () => {
      const response = await server.app.inject({ url: '/api/endpoints/query/logs.all', query: { project: 'abc', sql: 'select nope(' }, headers });
      expect(response.statusCode).toBe(400);
      expect(Object.keys(phases(response.headers['server-timing']))).toEqual(['auth', 'plan']);
    });
  });

  it('keeps redacted and unredacted results apart in the cache', async () => {
    const url = '/api/endpoints/query/usage.api-counts?interval=daily&project=abc';
    const plain = await server.app.inject({ url, headers });
    const redacted = await server.app.inject({ url, headers: { ...headers, 'svc-endpoint-redact-pii': 'true' } });
    const plainAgain = await server.app.inject({ url, headers });
    const redactedAgain = await server.app.inject({ url, headers: { ...headers, 'svc-endpoint-redact-pii': 'true' } });
    expect([plain, redacted, plainAgain, redactedAgain].map((response) => response.headers['x-cache'])).toEqual(['MISS', 'MISS', 'HIT', 'HIT']);
  });

  it('accepts a URL of 16 KiB and more over real HTTP', async () => {
    const address = await server.app.listen({ host: '127.0.0.1', port: 0 });
    const padding = 'x'.repeat(20 * 1024);
    const response = await fetch(`${address}/api/endpoints/query/logs.all?project=abc&iso_timestamp_end=2024-01-01T12:10:00.000Z&padding=${padding}`, {
      headers,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(((await response.json()) as { result: { id: string }[] }).result.map((row) => row.id)).toEqual(['ips']);
  });

  it('answers a URL beyond the limit with 414 in the JSON envelope, and a body over 1 MiB with 413', async () => {
    const address = server.app.server.listening
      ? `http://127.0.0.1:${(server.app.server.address() as { port: number }).port}`
      : await server.app.listen({ host: '127.0.0.1', port: 0 });
    const tooLong = await fetch(`${address}/api/endpoints/query/logs.all?project=abc&padding=${'x'.repeat(100 * 1024)}`, { headers });
    expect(tooLong.status).toBe(414);
    expect(await tooLong.json()).toMatchObject({ error: { code: 'request_too_large' } });
    const bigBody = await server.app.inject({
      method: 'POST',
      url: '/api/endpoints/query/logs.all',
      headers: { ...headers, 'content-type': 'application/json' },
      payload: JSON.stringify({ project: 'abc', padding: 'x'.repeat(1024 * 1024 + 1) }),
    });
    expect(bigBody.statusCode).toBe(413);
    expect(bigBody.json()).toMatchObject({ error: { code: 'request_too_large' } });
  });
});
