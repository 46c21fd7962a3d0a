import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Authenticator } from '../../src/auth/authenticator.ts';
import { KeyStore } from '../../src/auth/key-store.ts';
import { buildServer } from '../../src/server.ts';
import { createElasticsearchClient } from '../../shared/elasticsearch.ts';
import { BOOTSTRAP_KEY, edgeEvent, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { testConfig, uniqueName } from '../support/stack.ts';

const NOW = Date.UTC(2024, 0, 1, 12, 30);
const headers = { 'x-api-key': BOOTSTRAP_KEY };

/** A raw HTTP/1.1 exchange, for what fetch and inject cannot send (a repeated header). */
function rawGet(
  address: string,
  path: string,
  requestHeaders: Record<string, string | string[]>,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${address}${path}`, { headers: requestHeaders }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body }));
    });
    request.on('error', reject);
    request.end();
  });
}

function expectEnvelope(
  response: { statusCode: number; headers: Record<string, unknown>; body: string },
  status: number,
  code: string,
): { code: string; message: string } {
  expect(response.statusCode).toBe(status);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  expect(response.headers['x-request-id']).toEqual(expect.any(String));
  const parsed = JSON.parse(response.body) as { error: { code: string; message: string } };
  expect(Object.keys(parsed)).toEqual(['error']);
  expect(parsed.error.code).toBe(code);
  return parsed.error;
}

describe('hostile requests against the query service', () => {
  let server: EndpointTestServer;
  let address: string;

  beforeAll(async () => {
    server = await startEndpointServer({ now: NOW, overrides: { RATE_LIMIT_PER_MINUTE: '0' } });
    address = await server.app.listen({ host: '127.0.0.1', port: 0 });
    await server.index('edge_logs', [
      edgeEvent(
        'issue-ips',
        '2024-01-01T12:10:00.000000Z',
        'abc',
        {
          url: 'https://abc.supabase.co/rest/v1/t?ip=2001:db8::1_end&h=%5B2001%3Adb8%3A%3A9%5D&v4=198%2E51%2E100%2E14',
          path: '/rest/v1/t',
          headers: { '203.0.113.50': 'yes', forwarded: '[2001:db8::9]:8080' },
        },
        {
          notes: [
            '2001:db8::28: connection refused',
            'ip:::1',
            'host.2001:db8::7',
            'client_2001:db8::5',
            '2001:db8::6ms',
            '2001:db8:85a3:0:0:8a2e:370:7334:443',
          ],
        },
      ),
    ]);
  });

  afterAll(async () => {
    await server.close();
  });

  describe('redaction', () => {
    it('redacts every address of the issue, in values and keys, over HTTP', async () => {
      const plain = await server.app.inject({ url: '/api/endpoints/query/logs.all?project=abc', headers });
      expect(plain.body).toContain('203.0.113.50');
      const redacted = await server.app.inject({
        url: '/api/endpoints/query/logs.all?project=abc',
        headers: { ...headers, 'svc-endpoint-redact-pii': ' TRUE ' },
      });
      expect(redacted.statusCode).toBe(200);
      expect(redacted.body).not.toMatch(/2001|db8|203\.0\.113|198%2E51|198\.51|:::1/);
      expect(redacted.json().result[0].metadata[0].notes).toEqual([
        'REDACTED: connection refused',
        'ip:REDACTED',
        'host.REDACTED',
        'client_REDACTED',
        'REDACTEDms',
        'REDACTED:443',
      ]);
      expect(redacted.json().result[0].metadata[0].request[0].headers[0]).toEqual({ REDACTED: 'yes', forwarded: '[REDACTED]:8080' });
    });

    const values = ['1', 'yes', 'on', '"true"', 'true;'];
    it.each(['SVC-ENDPOINT-REDACT-PII', 'LF-ENDPOINT-REDACT-PII'].flatMap((name) => values.map((value) => [name, value])))(
      'refuses %s: %s with 400 naming the header and the allowed values',
      async (name, value) => {
        const response = await server.app.inject({ url: '/api/endpoints/query/logs.all?project=abc', headers: { ...headers, [name.toLowerCase()]: value } });
        expect(expectEnvelope(response, 400, 'bad_request').message).toMatch(new RegExp(`^${name} must be exactly true or false`));
      },
    );

    it.each(['svc-endpoint-redact-pii', 'lf-endpoint-redact-pii'])('refuses a repeated %s header sent over real HTTP', async (name) => {
      const response = await rawGet(address, '/api/endpoints/query/logs.all?project=abc', { ...headers, [name]: ['true', 'true'] });
      expect(expectEnvelope({ statusCode: response.status, headers: response.headers, body: response.body }, 400, 'bad_request').message).toMatch(
        /must be exactly true or false/,
      );
    });
  });

  describe('project patterns', () => {
    it('answers 3,000 nested parentheses with 400, not 500', async () => {
      const pattern = `${'('.repeat(3000)}a${')'.repeat(3000)}`;
      const response = await server.app.inject({ url: '/api/endpoints/query/usage.api-counts', query: { interval: 'hourly', project: pattern }, headers });
      expect(expectEnvelope(response, 400, 'pattern_too_complex').message).toMatch(/more than 1000/);
      const nested = await server.app.inject({
        url: '/api/endpoints/query/usage.api-counts',
        query: { interval: 'hourly', project: `${'('.repeat(40)}a${')'.repeat(40)}` },
        headers,
      });
      expect(expectEnvelope(nested, 400, 'pattern_too_complex').message).toMatch(/nests groups more than 32 deep/);
    });

    it('refuses a 1 MB pattern in a POST body by its length', async () => {
      const response = await server.app.inject({
        method: 'POST',
        url: '/api/endpoints/query/usage.api-counts',
        headers: { ...headers, 'content-type': 'application/json' },
        payload: JSON.stringify({ interval: 'hourly', project: 'a('.repeat(500_000) }),
      });
      expect(expectEnvelope(response, 400, 'pattern_too_complex').message).toMatch(/1000000 characters long/);
    });
  });

  describe('the envelope, whatever fails', () => {
    it('FST_ERR_BAD_URL: an invalid percent-escape, without echoing the URL', async () => {
      const response = await rawGet(address, '/api/endpoints/query/%ff', headers);
      const error = expectEnvelope({ statusCode: response.status, headers: response.headers, body: response.body }, 400, 'bad_request');
      expect(error.message).toMatch(/invalid percent-escape/);
      expect(response.body).not.toContain('%ff');
      expect(response.body).not.toContain('FST_');
    });

    it('FST_ERR_MAX_PARAM_LENGTH: a 600-character endpoint name', async () => {
      const name = 'n'.repeat(600);
      const response = await rawGet(address, `/api/endpoints/query/${name}`, headers);
      expectEnvelope({ statusCode: response.status, headers: response.headers, body: response.body }, 414, 'request_too_large');
      expect(response.body).not.toContain(name);
    });

    it('an unknown route does not echo its path', async () => {
      const response = await server.app.inject({ url: '/<script>alert(1)</script>' });
      expectEnvelope(response, 404, 'route_not_found');
      expect(response.body).not.toContain('script');
      const endpoint = await server.app.inject({ url: '/api/endpoints/query/%3Cimg%20src%3Dx%3E', headers });
      expectEnvelope(endpoint, 404, 'endpoint_not_found');
      expect(endpoint.body).not.toMatch(/img|src/);
    });

    it('wrong content types, bodies too large, bodies that are not objects, __proto__ keys, a non-string sql', async () => {
      const post = (payload: string, contentType = 'application/json') =>
        server.app.inject({ method: 'POST', url: '/api/endpoints/query/logs.all', headers: { ...headers, 'content-type': contentType }, payload });
      expect(expectEnvelope(await post('project=abc', 'application/x-www-form-urlencoded'), 415, 'bad_request').message).toMatch(
        /unsupported content type: send the parameters as a JSON object/,
      );
      expectEnvelope(await post('x', 'text/plain'), 415, 'bad_request');
      expectEnvelope(await post(JSON.stringify({ project: 'abc', padding: 'x'.repeat(1024 * 1024) })), 413, 'request_too_large');
      expect(expectEnvelope(await post('{"project": '), 400, 'bad_request').message).toMatch(/body is not valid JSON/);
      expect(expectEnvelope(await post('[{"project": "abc"}]'), 400, 'bad_request').message).toMatch(/must be an object .* got an array/);
      expect(expectEnvelope(await post('{"__proto__": {"project": "abc"}}'), 400, 'bad_request').message).toMatch(/holds the key "__proto__"/);
      expect(expectEnvelope(await post('{"\\u005f_proto__": {}}'), 400, 'bad_request').message).toMatch(/holds the key "__proto__"/);
      expect(expectEnvelope(await post('{"project": "abc", "sql": 5}'), 400, 'bad_parameter').message).toMatch(/sql must be a string .* got number/);
      expect(expectEnvelope(await post('{"project": "abc", "sql": {"select": 1}}'), 400, 'bad_parameter').message).toMatch(
        /sql must be a string .* got object/,
      );
    });
  });

  describe('request ids', () => {
    it('sends one on every response, reusing a sane caller id and replacing anything else', async () => {
      const own = await server.app.inject({ url: '/health', headers: { 'x-request-id': 'client-run-42.a:b' } });
      expect(own.headers['x-request-id']).toBe('client-run-42.a:b');
      for (const insane of ['has space', 'x'.repeat(200), 'new\u00e9line', '']) {
        const replaced = await server.app.inject({ url: '/health', headers: { 'x-request-id': insane } });
        expect(replaced.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      }
      for (const url of ['/health', '/metrics', '/nothing', '/api/endpoints/query/logs.all?project=abc']) {
        const response = await server.app.inject({ url });
        expect(response.headers['x-request-id'], url).toMatch(/^[0-9a-f-]{36}$/);
      }
    });

    it('the 500 body points to an id that is in the header and in the service log', async () => {
      const lines: string[] = [];
      const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
      const config = testConfig({ INDEX_PREFIX: `${uniqueName('boom')}-`, BOOTSTRAP_API_KEY: BOOTSTRAP_KEY });
      const elasticsearch = createElasticsearchClient({ url: config.ELASTICSEARCH_URL! });
      const app: FastifyInstance = await buildServer({ config, logger, elasticsearch, kafkaBrokers: config.KAFKA_BROKERS! });
      app.get('/test/boom', async () => {
        throw new Error('a bug with a secret detail');
      });
      try {
        const response = await app.inject({ url: '/test/boom', headers: { 'x-request-id': 'trace-500-check' } });
        const error = expectEnvelope(response, 500, 'internal_error');
        expect(response.headers['x-request-id']).toBe('trace-500-check');
        expect(error.message).toContain('trace-500-check');
        expect(error.message).not.toContain('secret');
        const logged = lines.map((line) => JSON.parse(line) as { reqId?: string; msg?: string; err?: { message?: string } });
        expect(logged.find((line) => line.reqId === 'trace-500-check' && line.msg === 'unhandled error')?.err?.message).toBe('a bug with a secret detail');
      } finally {
        await app.close();
        await elasticsearch.close();
      }
    });
  });
});

describe('failed authentication', () => {
  const FLOOR_MS = 60;
  const config = testConfig({
    INDEX_PREFIX: `${uniqueName('authfail')}-`,
    BOOTSTRAP_API_KEY: BOOTSTRAP_KEY,
    AUTH_FAILURE_MIN_MS: String(FLOOR_MS),
    AUTH_FAILURES_PER_MINUTE: '6',
    AUTH_FAILURE_BURST: '4',
    API_KEY_MISS_CACHE_SECONDS: '30',
  });
  const elasticsearch = createElasticsearchClient({ url: config.ELASTICSEARCH_URL! });
  const clock = new ManualClock(NOW);
  let app: FastifyInstance;
  let store: KeyStore;
  let lookUps = 0;

  beforeAll(async () => {
    store = new KeyStore(elasticsearch, config.INDEX_PREFIX, 0);
    await store.ensureIndex();
    // the real store, counting how often the authenticator asks it
    const find = store.find.bind(store);
    store.find = async (keyId) => {
      lookUps += 1;
      return find(keyId);
    };
    const authenticator = new Authenticator({
      keyStore: store,
      bootstrapKey: BOOTSTRAP_KEY,
      clock,
      cacheSeconds: 5,
      missCacheSeconds: config.API_KEY_MISS_CACHE_SECONDS,
    });
    app = await buildServer({ config, logger: pino({ level: 'silent' }), elasticsearch, kafkaBrokers: config.KAFKA_BROKERS!, clock, authenticator });
  });

  afterAll(async () => {
    await app.close();
    await elasticsearch.indices.delete({ index: store.index, ignore_unavailable: true });
    await elasticsearch.close();
  });

  const call = (key: string, remoteAddress: string) =>
    app.inject({ url: '/api/endpoints/query/logs.all?project=abc', headers: { 'x-api-key': key }, remoteAddress });

  it('asks the store once for an unknown key id, then refuses it from memory; both refusals take the same floor', async () => {
    const unknown = 'lpk_00000000000000aa_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
    const before = lookUps;
    const timings: number[] = [];
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const started = performance.now();
      const response = await call(unknown, '10.9.0.1');
      timings.push(performance.now() - started);
      expectEnvelope(response, 401, 'unauthorized');
    }
    expect(lookUps - before).toBe(1);
    const { key } = await store.create({ account: 'timing', endpoints: 'all', projects: null });
    const forged = key.slice(0, -4) + (key.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    const started = performance.now();
    expectEnvelope(await call(forged, '10.9.0.2'), 401, 'unauthorized');
    timings.push(performance.now() - started);
    // a refusal never answers before the floor, whichever path refused it (cached miss, store look-up, wrong secret)
    for (const elapsed of timings) expect(elapsed).toBeGreaterThanOrEqual(FLOOR_MS - 1);
  });

  it('answers 429 with Retry-After once an address failed its burst, valid key or not, and lets other addresses and time through', async () => {
    const wrong = 'lpk_00000000000000bb_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
    for (let attempt = 0; attempt < 4; attempt += 1) expectEnvelope(await call(wrong, '10.9.1.1'), 401, 'unauthorized');
    const limited = await call(wrong, '10.9.1.1');
    expect(expectEnvelope(limited, 429, 'rate_limited').message).toMatch(/too many failed authentications from this address: 6 per minute with bursts of 4/);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    const validButBlocked = await call(BOOTSTRAP_KEY, '10.9.1.1');
    expect(validButBlocked.statusCode).toBe(429);
    expect((await call(BOOTSTRAP_KEY, '10.9.1.2')).statusCode).not.toBe(429);
    await clock.advance(Number(limited.headers['retry-after']) * 1000);
    expectEnvelope(await call(wrong, '10.9.1.1'), 401, 'unauthorized');
    const metrics = await app.inject({ url: '/metrics' });
    expect(metrics.body).toMatch(/http_auth_failures_total\{outcome="rate_limited"\} [1-9]/);
    // the event-loop delay histogram is served next to them
    expect(metrics.body).toMatch(/^# TYPE event_loop_delay_seconds histogram$/m);
    expect(metrics.body).toMatch(/^event_loop_delay_seconds_bucket\{le="0.05"\} \d+$/m);
    expect(Number(/^event_loop_delay_seconds_count (\d+)$/m.exec(metrics.body)?.[1])).toBeGreaterThan(0);
  });
});

describe('slow clients', () => {
  let server: EndpointTestServer;
  let port: number;

  beforeAll(async () => {
    server = await startEndpointServer({
      now: NOW,
      overrides: { HTTP_HEADERS_TIMEOUT_MS: '2000', HTTP_REQUEST_TIMEOUT_MS: '4000', HTTP_KEEP_ALIVE_TIMEOUT_MS: '1000' },
    });
    await server.app.listen({ host: '127.0.0.1', port: 0 });
    port = (server.app.server.address() as { port: number }).port;
  });

  afterAll(async () => {
    await server.close();
  });

  // every 5 s as the issue found it, and faster than any idle timeout: the headers timeout counts from the first byte
  it.each([5000, 300])('cuts off a client trickling one header byte every %i ms, answering 408 in the envelope', async (everyMs) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.on('error', () => undefined);
    socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
    const trickle = setInterval(() => socket.writable && socket.write('a'), everyMs);
    try {
      // the server, not the client, ends it: with a 408 at the 2 s headers timeout (the 60 s it used to take
      // would run into this test's timeout)
      await closed;
      expect(received).toMatch(/^HTTP\/1\.1 408 /);
      expect(received).toMatch(/x-request-id: [0-9a-f-]{36}/i);
      expect(JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4))).toMatchObject({ error: { code: 'request_timeout' } });
    } finally {
      clearInterval(trickle);
      socket.destroy();
    }
  });

  it('closes an idle keep-alive connection after HTTP_KEEP_ALIVE_TIMEOUT_MS', async () => {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write('GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n');
    // the server closes it (Node's default of 72 s would run into this test's timeout), after answering
    await closed;
    expect(received).toMatch(/^HTTP\/1\.1 200 /);
    expect(received).toMatch(/keep-alive: timeout=1/i);
  });
});
