import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { logsAll } from '../../queries/logs-all.ts';
import { usageApiCounts } from '../../queries/usage-api-counts.ts';
import { createElasticsearchClient } from '../../shared/elasticsearch.ts';
import { ensureEventIndex, ensureEventIndexTemplate, eventIndexTemplateName } from '../../shared/event-index.ts';
import { legacyIndexName } from '../../shared/partitions.ts';
import { SOURCE_NAMES } from '../../shared/sources.ts';
import { LQL_ATTACKS } from '../fixtures/lql-attacks.ts';
import { SQL_ATTACKS } from '../fixtures/sql-attacks.ts';
import { edgeEvent } from '../support/endpoint-server.ts';
import { startServiceProcess, type ServiceProcess } from '../support/service-process.ts';
import { uniqueName } from '../support/stack.ts';

const KEY = 'fuzz-bootstrap-key-0123456789abcdef';
/** The issue's bound for /health during the fuzz: measured and printed with the run's figures, not asserted (timings on shared machines are reported, never asserted). */
const HEALTH_BOUND_MS = 100;
const RANDOM_RUNS = 400;

interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[]>;
  body?: Buffer;
}

interface FuzzResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

const UNRESERVED = new Set(Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.~-'));

/** Percent-encodes every byte of the UTF-8 form that is not unreserved (lone surrogates become U+FFFD, as a client would send). */
function percentEncoded(bytes: Uint8Array | string): string {
  const buffer = typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : Buffer.from(bytes);
  const parts: string[] = [];
  for (const byte of buffer) parts.push(UNRESERVED.has(byte) ? String.fromCharCode(byte) : `%${byte < 16 ? '0' : ''}${byte.toString(16).toUpperCase()}`);
  return parts.join('');
}

/**
 * Polls /health every 20 ms from a worker thread, so the fuzzer's own work on this thread's event
 * loop never delays a poll: what is measured is the service. Resolves to the latencies when stopped.
 */
function healthPoller(address: string): { stop(): Promise<Array<[number, number, number]>> } {
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     const latencies = [];
     let polling = true;
     parentPort.on('message', () => { polling = false; });
     (async () => {
       while (polling) {
         const started = performance.now();
         const response = await fetch(workerData + '/health');
         await response.arrayBuffer();
         latencies.push([Date.now(), performance.now() - started, response.status]);
         await new Promise((resolve) => setTimeout(resolve, 20));
       }
       parentPort.postMessage(latencies);
     })();`,
    { eval: true, workerData: address },
  );
  return {
    stop: () =>
      new Promise<Array<[number, number, number]>>((resolve, reject) => {
        worker.once('message', (latencies: Array<[number, number, number]>) => void worker.terminate().then(() => resolve(latencies)));
        worker.once('error', reject);
        worker.postMessage('stop');
      }),
  };
}

function send(address: string, request: FuzzRequest): Promise<FuzzResponse> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(`${address}${request.path}`, { method: request.method, headers: request.headers, timeout: 60_000 }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', reject);
    });
    outgoing.on('error', reject);
    outgoing.on('timeout', () => outgoing.destroy(new Error('no answer within 60 s')));
    outgoing.end(request.body);
  });
}

/** Never a 5xx, always a request id, and every refusal in the envelope. */
function checkAnswer(request: FuzzRequest, response: FuzzResponse): void {
  const label = `${request.method} ${request.path.slice(0, 200)} -> ${response.status} ${response.body.slice(0, 200)}`;
  expect(response.status, label).toBeLessThan(500);
  expect(response.headers['x-request-id'], label).toEqual(expect.any(String));
  if (response.status >= 400 && request.method !== 'HEAD') {
    expect(response.headers['content-type'], label).toMatch(/^application\/json/);
    const parsed = JSON.parse(response.body) as { error: { code: unknown; message: unknown } };
    expect(Object.keys(parsed), label).toEqual(['error']);
    expect(typeof parsed.error.code, label).toBe('string');
    expect(typeof parsed.error.message, label).toBe('string');
  }
}

const printable = (maxLength: number) => fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)), maxLength });
const anyText = (maxLength: number) => fc.string({ unit: 'binary', maxLength });

const parameterName = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom('project', 'interval', 'sql', 'lql', 'iso_timestamp_start', 'iso_timestamp_end') },
  { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', 'project[]', 'project[a]', '', 'toString') },
  { weight: 1, arbitrary: anyText(20) },
);
const parameterValue = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      'hourly',
      'daily',
      'minutely',
      'default',
      'abc',
      '.*',
      '^https://',
      '2024-01-01T00:00:00Z',
      '',
      'select id from edge_logs',
      'f:edge_logs m.level:error',
      'true',
    ),
  },
  { weight: 3, arbitrary: anyText(200) },
  { weight: 1, arbitrary: fc.integer({ min: 1000, max: 60_000 }).map((length) => 'x('.repeat(length / 2)) },
  { weight: 1, arbitrary: fc.constantFrom(...SQL_ATTACKS.map((attack) => attack.sql).filter((sql) => sql.length < 8000)) },
  { weight: 1, arbitrary: fc.constantFrom(...LQL_ATTACKS.map((attack) => attack.lql).filter((lql) => lql.length < 8000)) },
);
const rawQueryBytes = fc.uint8Array({ maxLength: 64 }).map((bytes) => [...bytes].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join(''));

const endpointPath = fc.constantFrom(
  ...[logsAll.name, logsAll.id, usageApiCounts.name, usageApiCounts.id.toUpperCase()].map((name) => `/api/endpoints/query/${name}`),
);
const path = fc.oneof(
  { weight: 8, arbitrary: endpointPath },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '/health',
      '/ready',
      '/metrics',
      '/openapi.json',
      '/docs',
      '/',
      '/api/',
      '/api/endpoints/query/',
      '/%2e%2e/%2e%2e/etc/passwd',
      '/api/endpoints/query/%ff',
      '/%61pi/endpoints/query/logs.all',
      `/api/endpoints/query/${'n'.repeat(600)}`,
    ),
  },
  { weight: 2, arbitrary: fc.uint8Array({ maxLength: 80 }).map((bytes) => `/api/endpoints/query/${percentEncoded(bytes)}`) },
  { weight: 1, arbitrary: anyText(40).map((text) => `/${percentEncoded(text)}`) },
);
const query = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .array(fc.tuple(parameterName, parameterValue), { maxLength: 6 })
      .map((pairs) => pairs.map(([name, value]) => `${percentEncoded(name)}=${percentEncoded(value)}`).join('&')),
  },
  { weight: 1, arbitrary: fc.tuple(rawQueryBytes, rawQueryBytes).map(([name, value]) => `${name}=${value}`) },
);
const contentType = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'application/json; charset=latin1',
  '*/*',
  'application/octet-stream',
);
const body = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .dictionary(
        parameterName,
        fc.oneof(parameterValue, fc.integer(), fc.boolean(), fc.constant(null), fc.array(parameterValue, { maxLength: 3 }), fc.object({ maxDepth: 2 })),
        { maxKeys: 6 },
      )
      .map((object) => Buffer.from(JSON.stringify(object))),
  },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 2048 }).map((bytes) => Buffer.from(bytes)) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((value) => Buffer.from(JSON.stringify(value) ?? 'null')) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom('{"__proto__": {"project": "x"}}', '{"project": "abc", "sql": 5}', '[]', '"str"', '{', '{"project": "abc", "lql": ["a"]}')
      .map((text) => Buffer.from(text)),
  },
);
const headers = fc.record(
  {
    'x-api-key': fc.oneof(
      { weight: 8, arbitrary: fc.constant(KEY) },
      { weight: 1, arbitrary: printable(80) },
      { weight: 1, arbitrary: fc.constant('lpk_0123456789abcdef_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA') },
    ),
    authorization: fc.oneof(printable(60), fc.constant(`Bearer ${KEY}`)),
    'svc-endpoint-redact-pii': fc.oneof(
      fc.constantFrom('true', 'false', 'TRUE', ' false ', '1', 'yes', 'true;', ''),
      printable(20),
      fc.constant(['true', 'false'] as string[]),
    ),
    'x-request-id': printable(200),
    accept: fc.constantFrom('*/*', 'application/json', 'text/html', 'application/xml'),
    'x-fuzz': printable(2000),
  },
  { requiredKeys: [] },
);
const fuzzRequest = fc
  // HEAD is left out: a HEAD refused by Node's HTTP parser itself (an oversized head) gets the envelope body, which HEAD clients reject (docs/known-gaps.md)
  .record({
    method: fc.constantFrom('GET', 'GET', 'GET', 'POST', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'),
    path,
    query,
    headers,
    contentType,
    body: fc.option(body, { nil: undefined }),
  })
  .map(({ method, path, query, headers, contentType, body }): FuzzRequest => {
    const all: Record<string, string | string[]> = { ...headers };
    if (body !== undefined) all['content-type'] = contentType;
    return { method, path: query === '' ? path : `${path}?${query}`, headers: all, body };
  });

describe('fuzzing the query service over HTTP', () => {
  const prefix = `${uniqueName('fuzz')}-`;
  const elasticsearch = createElasticsearchClient({ url: inject('elasticsearchUrl') });
  let service: ServiceProcess;
  let poller: ReturnType<typeof healthPoller> | undefined;
  let tried = 0;
  /** When each test began, to tell which kind of input slowed /health down. */
  const phases: Array<{ name: string; at: number }> = [];

  beforeAll(async () => {
    const edge = legacyIndexName(prefix, 'edge_logs');
    // as the worker does at start: /ready answers 200 once the template is there
    await ensureEventIndexTemplate(elasticsearch, prefix, 0);
    await Promise.all(SOURCE_NAMES.map((source) => ensureEventIndex(elasticsearch, legacyIndexName(prefix, source), 0)));
    const now = Date.now();
    const events = Array.from({ length: 50 }, (_, i) =>
      edgeEvent(`fuzz-${i}`, new Date(now - i * 60_000).toISOString().replace('Z', '000Z'), i % 2 === 0 ? 'abc' : 'default', {
        url: `https://abc.supabase.co/rest/v1/t${i}?ip=203.0.113.${i}`,
        path: `/rest/v1/t${i}`,
      }),
    );
    await elasticsearch.bulk({ refresh: true, operations: events.flatMap((event) => [{ index: { _index: edge, _id: event.id } }, event]) });
    service = await startServiceProcess({
      KAFKA_BROKERS: inject('kafkaBrokers').join(','),
      ELASTICSEARCH_URL: inject('elasticsearchUrl'),
      BOOTSTRAP_API_KEY: KEY,
      INDEX_PREFIX: prefix,
      // the fuzzer sends wrong keys and many requests on purpose: limits would only hide deeper code
      RATE_LIMIT_PER_MINUTE: '0',
      AUTH_FAILURES_PER_MINUTE: '0',
      AUTH_FAILURE_MIN_MS: '0',
      QUERY_TIMEOUT_MS: '20000',
    });
    // warm-up, outside the measured time: the first /health waits for its dependency check, the
    // first SQL starts the parser thread, the first query the engine runs forks its processes
    await fetch(`${service.address}/health`);
    const warmUp = [
      'select 1',
      'select upper(r.path) as p, count(*) as n from edge_logs t cross join unnest(t.metadata) as m cross join unnest(m.request) as r group by p',
    ];
    for (const sql of warmUp) {
      const response = await fetch(`${service.address}/api/endpoints/query/logs.all?project=abc&sql=${encodeURIComponent(sql)}`, {
        headers: { 'x-api-key': KEY },
      });
      expect(response.status, await response.text()).toBe(200);
    }
    await fetch(`${service.address}/api/endpoints/query/logs.all?project=abc&lql=${encodeURIComponent('f:edge_logs c:count(*) c:group_by(t::minute)')}`, {
      headers: { 'x-api-key': KEY },
    });
    poller = healthPoller(service.address);
  }, 180_000);

  afterAll(async () => {
    await poller?.stop();
    await service?.stop();
    const indices = Object.keys(await elasticsearch.indices.get({ index: `${prefix}*`, allow_no_indices: true }));
    if (indices.length > 0) await elasticsearch.indices.delete({ index: indices });
    await elasticsearch.indices.deleteIndexTemplate({ name: eventIndexTemplateName(prefix) }, { ignore: [404] });
    await elasticsearch.close();
  });

  it(`every sandbox and LQL attack case (${SQL_ATTACKS.length} SQL, ${LQL_ATTACKS.length} LQL) on both endpoints, by query string and body: never a 5xx, always the envelope`, async () => {
    phases.push({ name: 'attack corpus', at: Date.now() });
    const slowest: Array<[number, string]> = [];
    const cases = [...SQL_ATTACKS.map((attack) => ({ sql: attack.sql })), ...LQL_ATTACKS.map((attack) => ({ lql: attack.lql }))];
    for (const endpoint of [logsAll.name, usageApiCounts.name]) {
      for (const sandbox of cases) {
        const parameters = { project: 'abc', interval: 'hourly', ...sandbox };
        const text = JSON.stringify(parameters);
        const request: FuzzRequest =
          text.length < 60_000
            ? { method: 'GET', path: `/api/endpoints/query/${endpoint}?${new URLSearchParams(parameters).toString()}`, headers: { 'x-api-key': KEY } }
            : {
                method: 'POST',
                path: `/api/endpoints/query/${endpoint}`,
                headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
                body: Buffer.from(text),
              };
        const started = performance.now();
        checkAnswer(request, await send(service.address, request));
        slowest.push([performance.now() - started, `${endpoint} ${JSON.stringify(sandbox).slice(0, 80)}`]);
        tried += 1;
      }
    }
    slowest.sort((a, b) => b[0] - a[0]);
    console.log(
      `fuzz: slowest attack cases: ${slowest
        .slice(0, 5)
        .map(([ms, label]) => `${ms.toFixed(0)} ms ${label}`)
        .join('; ')}`,
    );
  }, 600_000);

  it(`${RANDOM_RUNS} random requests (parameters, headers, paths, bodies, methods): never a 5xx, always the envelope`, async () => {
    phases.push({ name: 'random requests', at: Date.now() });
    await fc.assert(
      fc.asyncProperty(fuzzRequest, async (request) => {
        checkAnswer(request, await send(service.address, request));
        tried += 1;
      }),
      // a counterexample can hold 60 KB of text: report its start only
      {
        numRuns: RANDOM_RUNS,
        endOnFailure: true,
        reporter: (details) => {
          if (details.failed)
            throw new Error(
              `fuzz failed after ${details.numRuns} runs (seed ${details.seed}): ${String(details.errorInstance).slice(0, 600)}\n${JSON.stringify(details.counterexample).slice(0, 600)}`,
            );
        },
      },
    );
  }, 600_000);

  it('malformed HTTP and oversized requests are answered in the envelope too', async () => {
    phases.push({ name: 'malformed HTTP', at: Date.now() });
    const raw = (text: string) =>
      new Promise<string>((resolve) => {
        const { port } = new URL(service.address);
        const socket = connect(Number(port), '127.0.0.1');
        let received = '';
        socket.setEncoding('utf8');
        socket.on('data', (chunk: string) => (received += chunk));
        socket.on('close', () => resolve(received));
        socket.on('error', () => resolve(received));
        socket.end(text);
      });
    const malformed = [
      'GARBAGE\r\n\r\n',
      'GET /health HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n',
      'GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n',
      'POST /api/endpoints/query/logs.all HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc',
      `GET /api/endpoints/query/logs.all?project=${'x'.repeat(100 * 1024)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'y'.repeat(100 * 1024)}\r\n\r\n`,
    ];
    for (const text of malformed) {
      const answer = await raw(text);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);
      expect(status, answer.slice(0, 200)).toBeGreaterThanOrEqual(400);
      expect(status, answer.slice(0, 200)).toBeLessThan(500);
      expect(answer).toMatch(/x-request-id: \S+/i);
      expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({ error: { code: expect.any(String), message: expect.any(String) } });
      tried += 1;
    }
    // the rest of a refused body is read before the 413 goes out: a client still writing when the
    // connection closed got a broken pipe instead (Node's client in most of these, before)
    const oversizedBody = Buffer.from(JSON.stringify({ project: 'abc', sql: `select '${'a'.repeat(2 * 1024 * 1024)}'` }));
    for (let attempt = 0; attempt < 10; attempt += 1) {
      const oversized = await send(service.address, {
        method: 'POST',
        path: '/api/endpoints/query/logs.all',
        headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
        body: oversizedBody,
      });
      expect(oversized.status).toBe(413);
      expect(JSON.parse(oversized.body)).toEqual({ error: { code: 'request_too_large', message: expect.any(String) } });
      tried += 1;
    }
  }, 120_000);

  it(`kept answering /health 200 throughout (its latency against the ${HEALTH_BOUND_MS} ms bound is printed)`, async () => {
    const polls = await poller!.stop();
    const phaseOf = (at: number) => [...phases].reverse().find((phase) => phase.at <= at)?.name ?? 'warm-up';
    const worst = new Map<string, number>();
    for (const [at, latency] of polls) worst.set(phaseOf(at), Math.max(worst.get(phaseOf(at)) ?? 0, latency));
    console.log(`fuzz: slowest /health per phase: ${[...worst].map(([name, latency]) => `${name} ${latency.toFixed(0)} ms`).join(', ')}`);
    const sorted = polls.map(([, latency]) => latency).sort((a, b) => a - b);
    poller = undefined;
    const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
    const metrics = await (await fetch(`${service.address}/metrics`)).text();
    const overFifty = /^event_loop_delay_seconds_bucket\{le="0.05"\} (\d+)/m.exec(metrics)?.[1];
    const samples = /^event_loop_delay_seconds_count (\d+)/m.exec(metrics)?.[1];
    console.log(
      `fuzz: ${tried} hostile requests; /health polled ${sorted.length} times: p50 ${at(50).toFixed(1)} ms, p99 ${at(99).toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms; ` +
        `service event loop: ${Number(samples) - Number(overFifty)} of ${samples} samples over 50 ms late`,
    );
    expect(sorted.length).toBeGreaterThan(50);
    // liveness is asserted; the latency bound is a figure (printed above, and by npm run soak), since
    // a shared 2-core machine starves the service of CPU in ways no code change can remove
    expect(polls.filter(([, , status]) => status !== 200)).toEqual([]);
    console.log(`fuzz: /health p99 ${at(99) < HEALTH_BOUND_MS ? 'within' : 'OVER'} the ${HEALTH_BOUND_MS} ms bound`);
  });
});
