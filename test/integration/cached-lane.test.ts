import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { usageApiCounts } from '../../queries/usage-api-counts.ts';
import { createLogger } from '../../shared/logger.ts';
import { KeyStore } from '../../src/auth/key-store.ts';
import { CachedLane } from '../../src/http/cached-lane.ts';
import { metricsRegistry } from '../../src/metrics.ts';
import { BOOTSTRAP_KEY, edgeEvent, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';

/**
 * The cached-answer lane (src/http/cached-lane.ts) against the full path: the same requests sent
 * over real HTTP to a service with the lane (HTTP_CACHED_LANE, the default) and to one without,
 * each on its own copy of the same events. Whatever the lane answers must equal the full path's
 * answer in status, headers and bytes, and move the same metrics and write the same access line.
 */
const NOW = Date.UTC(2024, 0, 1, 12, 30);
const DAILY = '/api/endpoints/query/usage.api-counts?interval=daily&project=abc';
const HOURLY = '/api/endpoints/query/usage.api-counts?interval=hourly&project=abc%5C.supabase';

interface Served {
  server: EndpointTestServer;
  port: number;
  /** The access lines written so far. */
  lines: Record<string, unknown>[];
  keys: KeyStore;
}

interface Answer {
  status: number;
  /** Header names and values in the order sent. */
  headers: [string, string][];
  body: Buffer;
}

const answered = vi.spyOn(CachedLane.prototype, 'answer');

async function serve(overrides: Record<string, string>): Promise<Served> {
  const lines: Record<string, unknown>[] = [];
  const accessLogger = createLogger('access', 'info', { redact: false, destination: { write: (line: string) => void lines.push(JSON.parse(line)) } });
  const server = await startEndpointServer({ now: NOW, overrides, accessLogger });
  await server.index(
    'edge_logs',
    ['rest', 'auth', 'storage'].map((area, position) =>
      edgeEvent(`e${position}`, `2024-01-01T12:0${position}:00.000000Z`, 'abc', { url: `https://abc.supabase.co/${area}/v1/t`, path: `/${area}/v1/t` }),
    ),
  );
  await server.app.listen({ host: '127.0.0.1', port: 0 });
  const keys = new KeyStore(server.elasticsearch, server.config.INDEX_PREFIX, server.config.ELASTICSEARCH_INDEX_REPLICAS);
  return { server, port: (server.app.server.address() as AddressInfo).port, lines, keys };
}

function send(served: Served, path: string, headers: Record<string, string> = {}, method = 'GET', body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    // node frames a GET body only with a declared length
    const framed = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) };
    const outgoing = httpRequest({ host: '127.0.0.1', port: served.port, path, method, headers: framed }, (incoming) => {
      const chunks: Buffer[] = [];
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
      incoming.on('end', () => {
        const pairs: [string, string][] = [];
        for (let index = 0; index < incoming.rawHeaders.length; index += 2) pairs.push([incoming.rawHeaders[index]!, incoming.rawHeaders[index + 1]!]);
        resolve({ status: incoming.statusCode!, headers: pairs, body: Buffer.concat(chunks) });
      });
    });
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

/** Headers to compare: the date and a fresh request id left out, Server-Timing's phases kept but not their durations. */
function comparable(answer: Answer, keepRequestId = false) {
  const headers = answer.headers
    .filter(([name]) => name.toLowerCase() !== 'date' && (keepRequestId || name !== 'x-request-id'))
    .map(([name, value]) => [name, name === 'server-timing' ? value.replace(/dur=[\d.]+/g, 'dur=_') : value]);
  return { status: answer.status, headers, body: answer.body.toString('utf8') };
}

/** The request path's series (requests, usage, cache, refusals) by name and labels; latencies only by count. */
async function counters(): Promise<Map<string, number>> {
  const series = new Map<string, number>();
  for (const line of (await metricsRegistry.metrics()).split('\n')) {
    if (!/^(http_|endpoint_|result_cache_lookups|auth_failures)/.test(line) || /_(bucket|sum)\{/.test(line)) continue;
    const space = line.lastIndexOf(' ');
    series.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return series;
}

/** What one step moved: each series' change, the ones that did not change left out. */
async function moved(step: () => Promise<Answer>): Promise<{ answer: Answer; changes: Record<string, number> }> {
  const before = await counters();
  const answer = await step();
  const after = await counters();
  const changes: Record<string, number> = {};
  for (const [name, value] of after) if (value !== (before.get(name) ?? 0)) changes[name] = value - (before.get(name) ?? 0);
  return { answer, changes };
}

/** Whether the lane answered the last request (rather than handing it to fastify). */
const laneAnswered = () => answered.mock.results.at(-1)?.value === true;

/** The last access line, without what differs between any two requests (time, process, duration). */
function lastLine(served: Served) {
  const { time: _time, pid: _pid, hostname: _hostname, ms, ...line } = served.lines.at(-1)!;
  expect(ms).toEqual(expect.any(Number));
  return line;
}

/** Sends one request to both services in turn (the full path first): both answers, what each moved, whether the lane answered. */
async function both(lane: Served, full: Served, path: string, headers: Record<string, string> = {}, method = 'GET', body?: string) {
  const fullPath = await moved(() => send(full, path, headers, method, body));
  answered.mockClear();
  const viaLane = await moved(() => send(lane, path, headers, method, body));
  return { lane: viaLane, full: fullPath, laneAnswered: laneAnswered() };
}

describe('the cached lane answers what the full path answers', () => {
  let lane: Served;
  let full: Served;

  beforeAll(async () => {
    [lane, full] = await Promise.all([serve({}), serve({ HTTP_CACHED_LANE: 'false' })]);
  });

  afterAll(async () => {
    await Promise.all([lane?.server.close(), full?.server.close()]);
  });

  afterEach(() => {
    answered.mockClear();
  });

  it('a cache hit: same status, headers and bytes, the same series moved, the same access line', async () => {
    const headers = { 'x-api-key': BOOTSTRAP_KEY };
    const first = await both(lane, full, DAILY, headers);
    expect(first.laneAnswered).toBe(false);
    expect(first.lane.answer.headers).toContainEqual(['x-cache', 'MISS']);
    const hit = await both(lane, full, DAILY, headers);
    expect(hit.laneAnswered).toBe(true);
    expect(hit.full.answer.headers).toContainEqual(['x-cache', 'HIT']);
    expect(comparable(hit.lane.answer)).toEqual(comparable(hit.full.answer));
    expect(JSON.parse(hit.lane.answer.body.toString()).result.length).toBeGreaterThan(0);
    expect(hit.lane.changes).toEqual(hit.full.changes);
    expect(hit.lane.changes).toMatchObject({
      'http_requests_total{endpoint="usage.api-counts",status="200"}': 1,
      'endpoint_requests_total{endpoint="usage.api-counts",key_id="bootstrap",status="200"}': 1,
      'result_cache_lookups_total{result="hit"}': 1,
    });
    expect(lastLine(lane)).toEqual({ ...lastLine(full), reqId: lastLine(lane).reqId });
    const sentId = hit.lane.answer.headers.find(([name]) => name === 'x-request-id')![1];
    expect(lastLine(lane)).toMatchObject({ level: 30, reqId: sentId, method: 'GET', path: '/api/endpoints/query/usage.api-counts', status: 200 });
  });

  it('other parameters, their order, an escaped value, and the endpoint by UUID: each its own hit', async () => {
    const headers = { 'x-api-key': BOOTSTRAP_KEY };
    await both(lane, full, HOURLY, headers);
    const reordered = '/api/endpoints/query/usage.api-counts?project=abc%5C.supabase&interval=hourly';
    for (const path of [HOURLY, reordered, `/api/endpoints/query/${usageApiCounts.id}?interval=hourly&project=abc%5C.supabase`]) {
      const answer = await both(lane, full, path, headers);
      expect(comparable(answer.lane.answer)).toEqual(comparable(answer.full.answer));
      expect(answer.lane.changes).toEqual(answer.full.changes);
    }
  });

  it("honours the caller's request id on a hit", async () => {
    const headers = { 'x-api-key': BOOTSTRAP_KEY, 'x-request-id': 'caller-id-42' };
    await both(lane, full, DAILY, headers);
    const hit = await both(lane, full, DAILY, headers);
    expect(hit.laneAnswered).toBe(true);
    expect(comparable(hit.lane.answer, true)).toEqual(comparable(hit.full.answer, true));
    expect(hit.lane.answer.headers).toContainEqual(['x-request-id', 'caller-id-42']);
    expect(lastLine(lane)).toEqual(lastLine(full));
  });

  it('Accept and If-None-Match change nothing on either path', async () => {
    for (const headers of [{ accept: 'text/csv' }, { 'if-none-match': '"x"' }] as Record<string, string>[]) {
      const answer = await both(lane, full, DAILY, { 'x-api-key': BOOTSTRAP_KEY, ...headers });
      expect(answer.lane.answer.status).toBe(200);
      expect(comparable(answer.lane.answer)).toEqual(comparable(answer.full.answer));
    }
  });

  it('a key verified lately is served by the lane; revoked, it is refused once its verification lapses, as on the full path', async () => {
    const [laneKey, fullKey] = await Promise.all([lane, full].map((served) => served.keys.create({ account: 'lane', endpoints: 'all', projects: null })));
    const keyOf = (served: Served) => ({ 'x-api-key': (served === lane ? laneKey : fullKey)!.key });
    const sendBoth = async () => {
      const fullAnswer = await send(full, DAILY, keyOf(full));
      answered.mockClear();
      return { full: fullAnswer, lane: await send(lane, DAILY, keyOf(lane)), laneAnswered: laneAnswered() };
    };
    await sendBoth();
    const hit = await sendBoth();
    expect(hit.laneAnswered).toBe(true);
    expect(comparable(hit.lane)).toEqual(comparable(hit.full));
    await Promise.all([lane.keys.revoke(laneKey!.record.keyId), full.keys.revoke(fullKey!.record.keyId)]);
    for (const served of [lane, full]) await served.server.clock.advance((served.server.config.API_KEY_CACHE_SECONDS + 1) * 1000);
    const revoked = await sendBoth();
    expect(revoked.laneAnswered).toBe(false);
    expect(revoked.lane.status).toBe(401);
    expect(revoked.full.status).toBe(401);
    expect(JSON.parse(revoked.lane.body.toString()).error.message).toMatch(/was revoked/);
  });

  it('a key out of the endpoint scope, stats, an export, HEAD, a bad parameter, a body: left to the full path, same answers', async () => {
    const [laneKey, fullKey] = await Promise.all(
      [lane, full].map((served) => served.keys.create({ account: 'scoped', endpoints: ['logs.all'], projects: null })),
    );
    const scoped = async () => {
      const fullAnswer = await send(full, DAILY, { 'x-api-key': fullKey!.key });
      answered.mockClear();
      return { full: fullAnswer, lane: await send(lane, DAILY, { 'x-api-key': laneKey!.key }), laneAnswered: laneAnswered() };
    };
    const forbidden = await scoped();
    expect(forbidden.laneAnswered).toBe(false);
    expect(forbidden.lane.status).toBe(403);
    expect(comparable(forbidden.lane)).toEqual(comparable(forbidden.full));
    const headers = { 'x-api-key': BOOTSTRAP_KEY };
    await both(lane, full, DAILY, headers);
    const json = { 'content-type': 'application/json' };
    for (const [path, method, extra, body] of [
      [`${DAILY}&stats=true`, 'GET', {}],
      [`${DAILY}&format=csv`, 'GET', {}],
      [DAILY, 'HEAD', {}],
      [`${DAILY}&interval=weekly`, 'GET', {}],
      [DAILY, 'GET', { 'svc-endpoint-redact-pii': 'maybe' }],
      [DAILY, 'GET', { 'x-api-key': '', authorization: 'Basic abc' }],
      [DAILY, 'GET', json, '{"interval":"hourly"}'],
      [DAILY, 'POST', json, '{}'],
      [`${DAILY}&sql=select+1`, 'GET', {}],
    ] as const) {
      const answer = await both(lane, full, path, { ...headers, ...extra }, method, body);
      expect(answer.laneAnswered, `${method} ${path} ${JSON.stringify(extra)}`).toBe(false);
      expect(answer.lane.answer.status).toBe(answer.full.answer.status);
    }
  });
});

describe('the cached lane and a changed endpoint', () => {
  let lane: Served;

  beforeAll(async () => {
    lane = await serve({});
  });

  afterAll(async () => {
    await lane?.server.close();
  });

  it('stops answering an endpoint disabled after its answer was cached and proven', async () => {
    const headers = { 'x-api-key': BOOTSTRAP_KEY };
    await send(lane, DAILY, headers);
    answered.mockClear();
    expect((await send(lane, DAILY, headers)).status).toBe(200);
    expect(laneAnswered()).toBe(true);
    const admin = await lane.keys.create({ account: 'operator', endpoints: 'all', projects: null, admin: true });
    const patched = await lane.server.app.inject({
      method: 'PATCH',
      url: '/api/endpoints/usage.api-counts',
      headers: { 'x-api-key': admin.key, 'content-type': 'application/json' },
      payload: { enabled: false },
    });
    expect(patched.statusCode).toBe(200);
    answered.mockClear();
    const disabled = await send(lane, DAILY, headers);
    expect(laneAnswered()).toBe(false);
    expect(disabled.status).toBe(404);
  });
});

describe('the cached lane and the rate limit', () => {
  let lane: Served;
  let full: Served;

  beforeAll(async () => {
    const limits = { RATE_LIMIT_PER_MINUTE: '1', RATE_LIMIT_BURST: '3' };
    [lane, full] = await Promise.all([serve(limits), serve({ ...limits, HTTP_CACHED_LANE: 'false' })]);
  });

  afterAll(async () => {
    await Promise.all([lane?.server.close(), full?.server.close()]);
  });

  it('spends the same bucket: the same remaining counts, then the same 429', async () => {
    const headers = { 'x-api-key': BOOTSTRAP_KEY };
    const statuses: number[] = [];
    const byLane: boolean[] = [];
    for (let sent = 0; sent < 4; sent += 1) {
      const answer = await both(lane, full, DAILY, headers);
      expect(comparable(answer.lane.answer)).toEqual(comparable(answer.full.answer));
      expect(answer.lane.changes).toEqual(answer.full.changes);
      statuses.push(answer.lane.answer.status);
      byLane.push(answer.laneAnswered);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(byLane).toEqual([false, true, true, false]);
  });
});
