import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyStore } from '../../src/auth/key-store.ts';
import { metricsRegistry } from '../../src/metrics.ts';
import { BOOTSTRAP_KEY, edgeEvent, startEndpointServer, storedTimestamp, type EndpointTestServer } from '../support/endpoint-server.ts';
import { sandboxDataset } from '../support/sandbox-data.ts';

/** After the sandbox dataset (2023-12-31T12:00 to 2024-01-02T00:00); the usage events sit in the hour before. */
const NOW = Date.UTC(2024, 0, 2, 12);
const MINUTE = 60_000;
const dataset = sandboxDataset({ perSource: 40, projects: ['default', 'other'] });
const LOGS_WINDOW = { project: 'default', iso_timestamp_start: '2023-12-30T00:00:00Z', iso_timestamp_end: '2024-01-02T00:00:00Z' };
/** Edge events of project default in LOGS_WINDOW, counted here from the dataset. */
const inScopeEdgeEvents = dataset.events.get('edge_logs')!.filter((event) => event.project === 'default').length;
/** Usage events in the last hour whose url matches the project pattern. */
const USAGE_IN_SCOPE = 7;
const USAGE = { interval: 'hourly', project: 'abc\\.supabase\\.co' };

interface Stats {
  elapsed_ms: number;
  rows_returned: number;
  events_scanned: Record<string, number>;
  bytes_read: number;
  cache: { hit: boolean; age_seconds: number };
  pushed_down: string[];
  engine: { ran: boolean };
  partitions: string[];
}

let server: EndpointTestServer;

type Query = Record<string, string>;

async function query(
  endpoint: string,
  options: { query?: Query; headers?: Record<string, string>; body?: Record<string, unknown>; key?: string; on?: EndpointTestServer } = {},
) {
  const headers = { 'x-api-key': options.key ?? BOOTSTRAP_KEY, ...options.headers, ...(options.body ? { 'content-type': 'application/json' } : {}) };
  const response = await (options.on ?? server).app.inject({
    method: options.body ? 'POST' : 'GET',
    url: `/api/endpoints/query/${endpoint}`,
    query: options.query,
    headers,
    ...(options.body ? { payload: options.body } : {}),
  });
  return {
    status: response.statusCode,
    text: response.body,
    headers: response.headers,
    json: () => response.json() as { result: unknown[]; stats?: Stats; error?: { code: string; message: string } },
  };
}

/** The value of one series in the exposition text (0 when absent). */
async function metricValue(name: string, labels: Record<string, string>): Promise<number> {
  const text = await metricsRegistry.metrics();
  const wanted = Object.entries(labels).map(([label, value]) => `${label}="${value}"`);
  const line = text.split('\n').find((candidate) => {
    if (!candidate.startsWith(`${name}{`)) return false;
    const inside = candidate.slice(name.length + 1, candidate.lastIndexOf('}')).split(',');
    return inside.length === wanted.length && wanted.every((pair) => inside.includes(pair));
  });
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

beforeAll(async () => {
  server = await startEndpointServer({ now: NOW, overrides: { RATE_LIMIT_PER_MINUTE: '0' } });
  await server.index('edge_logs', dataset.events.get('edge_logs')!);
  const abc = (n: number) => ({ url: `https://abc.supabase.co/rest/v1/${n}`, path: `/rest/v1/${n}` });
  await server.index('edge_logs', [
    ...Array.from({ length: USAGE_IN_SCOPE }, (_, n) => edgeEvent(`usage-${n}`, storedTimestamp(NOW - (n + 1) * 5 * MINUTE), 'abc', abc(n))),
    // before the hourly window, and another project's url: not in scope
    edgeEvent('usage-old', storedTimestamp(NOW - 2 * 60 * MINUTE), 'abc', abc(100)),
    edgeEvent('usage-other-url', storedTimestamp(NOW - 10 * MINUTE), 'xyz', { url: 'https://xyz.supabase.co/rest/v1/x', path: '/rest/v1/x' }),
  ]);
});

afterAll(async () => {
  await server?.close();
});

describe('the stats object', () => {
  it('a pushed-down aggregation reports the events in scope as scanned, and its partitions without the index prefix', async () => {
    const response = await query('usage.api-counts', { query: { ...USAGE, stats: 'true' } });
    expect(response.status).toBe(200);
    const { result, stats } = response.json();
    expect(stats!.events_scanned).toEqual({ edge_logs: USAGE_IN_SCOPE });
    expect(stats!.rows_returned).toBe(result.length);
    expect(stats!.cache).toEqual({ hit: false, age_seconds: 0 });
    expect(stats!.pushed_down).toEqual(['filters', 'aggregation']);
    expect(stats!.engine).toEqual({ ran: false });
    expect(stats!.bytes_read).toBeGreaterThan(0);
    expect(stats!.partitions.length).toBeGreaterThan(0);
    for (const partition of stats!.partitions) expect(partition).toMatch(/^edge_logs/);
    expect(JSON.stringify(stats)).not.toContain(server.config.INDEX_PREFIX);
    expect(Number.isFinite(stats!.elapsed_ms)).toBe(true);
  });

  it('a cache hit reports hit true, its age, and that this request read nothing', async () => {
    await server.clock.advance(30_000);
    const response = await query('usage.api-counts', { query: USAGE, headers: { 'SVC-ENDPOINT-STATS': 'true' } });
    expect(response.headers['x-cache']).toBe('HIT');
    const { stats } = response.json();
    expect(stats!.cache).toEqual({ hit: true, age_seconds: 30 });
    expect(stats!.events_scanned).toEqual({});
    expect(stats!.bytes_read).toBe(0);
    expect(stats!.partitions).toEqual([]);
    expect(stats!.rows_returned).toBe(response.json().result.length);
  });

  it('the cached answer never holds stats: a hit without stats is the plain body', async () => {
    const plain = await query('usage.api-counts', { query: USAGE });
    expect(plain.headers['x-cache']).toBe('HIT');
    expect(plain.text).toBe(JSON.stringify({ result: plain.json().result }));
    const withStats = await query('usage.api-counts', { query: { ...USAGE, stats: 'true' } });
    expect(withStats.text.startsWith(`${plain.text.slice(0, -1)},"stats":{`)).toBe(true);
  });

  it('a sandboxed count pushed down to the store: events scanned are the events in scope; the engine runs only for a computed residual', async () => {
    const counted = await query('logs.all', { body: { ...LOGS_WINDOW, sql: 'select count(*) as n from edge_logs', stats: true } });
    expect(counted.status).toBe(200);
    const { result, stats } = counted.json();
    expect(result).toEqual([{ n: inScopeEdgeEvents }]);
    expect(stats!.pushed_down).toContain('aggregation');
    // the group is the answer as it stands: the service finishes it without the engine
    expect(stats!.engine).toEqual({ ran: false });
    expect(stats!.events_scanned).toEqual({ edge_logs: inScopeEdgeEvents });
    expect(stats!.rows_returned).toBe(1);

    const computed = await query('logs.all', { body: { ...LOGS_WINDOW, sql: 'select count(*) * 2 as n from edge_logs', stats: true } });
    const twice = computed.json();
    expect(twice.result).toEqual([{ n: 2 * inScopeEdgeEvents }]);
    expect(twice.stats!.pushed_down).toContain('aggregation');
    expect(twice.stats!.engine).toEqual({ ran: true });
    expect(twice.stats!.events_scanned).toEqual({ edge_logs: inScopeEdgeEvents });
  });

  it('the saved log selection runs in the store alone: filters, sort and limit pushed down, the hits returned counted', async () => {
    const response = await query('logs.all', { query: { ...LOGS_WINDOW, stats: 'true' } });
    const { result, stats } = response.json();
    expect(result.length).toBe(inScopeEdgeEvents);
    expect(stats!.engine).toEqual({ ran: false });
    expect(stats!.pushed_down).toEqual(['filters', 'sort', 'limit']);
    expect(stats!.events_scanned).toEqual({ edge_logs: inScopeEdgeEvents });
    expect(stats!.cache).toEqual({ hit: false, age_seconds: 0 });
  });

  it('without stats asked, or with stats=false, the body is exactly {"result":[...]}', async () => {
    const plain = await query('logs.all', { query: LOGS_WINDOW });
    const refused = await query('logs.all', { query: { ...LOGS_WINDOW, stats: 'false' }, headers: { 'SVC-ENDPOINT-STATS': 'FALSE' } });
    expect(plain.status).toBe(200);
    expect(plain.text).toBe(JSON.stringify({ result: plain.json().result }));
    expect(refused.text).toBe(plain.text);
    const asked = await query('logs.all', { query: { ...LOGS_WINDOW, stats: 'true' } });
    expect(asked.text.startsWith(`${plain.text.slice(0, -1)},"stats":{`)).toBe(true);
  });

  it('the header, the query-string parameter and the JSON body ask alike', async () => {
    const sql = 'select id from edge_logs order by timestamp desc limit 3';
    const answers = await Promise.all([
      query('logs.all', { query: { ...LOGS_WINDOW, sql, stats: 'true' } }),
      query('logs.all', { query: { ...LOGS_WINDOW, sql }, headers: { 'SVC-ENDPOINT-STATS': ' True ' } }),
      query('logs.all', { body: { ...LOGS_WINDOW, sql, stats: true } }),
      query('logs.all', { body: { ...LOGS_WINDOW, sql, stats: 'true' }, headers: { 'SVC-ENDPOINT-STATS': 'true' } }),
    ]);
    const shapes = answers.map((answer) => {
      const { result, stats } = answer.json();
      return { result, stats: { ...stats!, elapsed_ms: 0, bytes_read: stats!.bytes_read > 0 } };
    });
    for (const shape of shapes) expect(shape).toEqual(shapes[0]);
    expect(shapes[0]!.stats.rows_returned).toBe(3);
  });

  it('a value other than true or false is a 400 naming the parameter or the header; so are the two disagreeing', async () => {
    const parameter = await query('logs.all', { query: { ...LOGS_WINDOW, stats: 'yes' } });
    expect(parameter.status).toBe(400);
    expect(parameter.json().error!.code).toBe('bad_request');
    expect(parameter.json().error!.message).toContain('the stats parameter must be exactly true or false');
    expect(parameter.json().error!.message).toContain('"yes"');
    const header = await query('logs.all', { query: LOGS_WINDOW, headers: { 'SVC-ENDPOINT-STATS': '1' } });
    expect(header.status).toBe(400);
    expect(header.json().error!.message).toContain('the SVC-ENDPOINT-STATS header must be exactly true or false');
    const number = await query('logs.all', { body: { ...LOGS_WINDOW, stats: 1 } });
    expect(number.status).toBe(400);
    expect(number.json().error!.message).toContain('got number');
    const disagree = await query('logs.all', { query: { ...LOGS_WINDOW, stats: 'true' }, headers: { 'SVC-ENDPOINT-STATS': 'false' } });
    expect(disagree.status).toBe(400);
    expect(disagree.json().error!.message).toContain('disagree');
  });
});

describe('the stats object in /openapi.json', () => {
  it('names the parameter, the header and the object', async () => {
    const document = (await server.app.inject({ url: '/openapi.json' })).json() as {
      paths: Record<string, Record<string, { parameters: { name: string; in: string }[]; responses: Record<string, unknown> }>>;
    };
    const get = document.paths['/api/endpoints/query/logs.all']!.get!;
    expect(get.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'stats', in: 'query' }), expect.objectContaining({ name: 'SVC-ENDPOINT-STATS', in: 'header' })]),
    );
    expect(JSON.stringify(get.responses['200'])).toContain('"events_scanned"');
  });
});

describe('per-endpoint usage in /metrics', () => {
  const usageLabels = (endpoint: string, keyId: string) => ({ endpoint, key_id: keyId });

  it('counts an answer (rows, bytes, duration), a 400, a 404 and a 401 under the endpoint and key id labels', async () => {
    const ok = usageLabels('logs.all', 'bootstrap');
    const before = {
      ok: await metricValue('endpoint_requests_total', { ...ok, status: '200' }),
      bad: await metricValue('endpoint_requests_total', { ...ok, status: '400' }),
      missing: await metricValue('endpoint_requests_total', { ...usageLabels('unknown_endpoint', 'bootstrap'), status: '404' }),
      rows: await metricValue('endpoint_rows_returned_total', ok),
      bytes: await metricValue('endpoint_bytes_returned_total', ok),
      durations: await metricValue('endpoint_request_duration_seconds_count', ok),
      unauthorized: await metricValue('endpoint_requests_total', { ...usageLabels('logs.all', 'none'), status: '401' }),
    };
    const answer = await query('logs.all', { query: LOGS_WINDOW });
    const bad = await query('logs.all', { query: { ...LOGS_WINDOW, stats: 'maybe' } });
    const missing = await query('no-such-endpoint-4f1c', {});
    const unauthorized = await query('logs.all', { query: LOGS_WINDOW, key: 'not-a-key-of-this-service-0000' });
    expect([answer.status, bad.status, missing.status, unauthorized.status]).toEqual([200, 400, 404, 401]);
    expect(await metricValue('endpoint_requests_total', { ...usageLabels('logs.all', 'none'), status: '401' })).toBe(before.unauthorized + 1);
    expect(await metricValue('endpoint_requests_total', { ...ok, status: '200' })).toBe(before.ok + 1);
    expect(await metricValue('endpoint_requests_total', { ...ok, status: '400' })).toBe(before.bad + 1);
    expect(await metricValue('endpoint_requests_total', { ...usageLabels('unknown_endpoint', 'bootstrap'), status: '404' })).toBe(before.missing + 1);
    expect(await metricValue('endpoint_rows_returned_total', ok)).toBe(before.rows + answer.json().result.length);
    expect(await metricValue('endpoint_bytes_returned_total', ok)).toBe(before.bytes + Buffer.byteLength(answer.text) + Buffer.byteLength(bad.text));
    expect(await metricValue('endpoint_request_duration_seconds_count', ok)).toBe(before.durations + 2);
    // the caller's raw text never becomes a label
    expect(await metricsRegistry.metrics()).not.toContain('no-such-endpoint-4f1c');
  });

  it('the /metrics route serves the usage series', async () => {
    const response = await server.app.inject({ url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.body).toMatch(/^endpoint_requests_total\{endpoint="logs.all",key_id="bootstrap",status="200"\} \d+$/m);
  });

  it('key ids past METRICS_MAX_KEY_LABELS are counted under other', async () => {
    const capped = await startEndpointServer({ now: NOW, overrides: { METRICS_MAX_KEY_LABELS: '2', RATE_LIMIT_PER_MINUTE: '0' } });
    try {
      const store = new KeyStore(capped.elasticsearch, capped.config.INDEX_PREFIX, capped.config.ELASTICSEARCH_INDEX_REPLICAS);
      const keys = [];
      for (let n = 0; n < 4; n += 1) keys.push(await store.create({ account: 'test', endpoints: 'all', projects: null }));
      const labels = (keyId: string) => ({ ...usageLabels('logs.all', keyId), status: '200' });
      const before = await metricValue('endpoint_requests_total', labels('other'));
      for (const { key } of keys) expect((await query('logs.all', { query: LOGS_WINDOW, key, on: capped })).status).toBe(200);
      expect(await metricValue('endpoint_requests_total', labels(keys[0]!.record.keyId))).toBe(1);
      expect(await metricValue('endpoint_requests_total', labels(keys[1]!.record.keyId))).toBe(1);
      expect(await metricValue('endpoint_requests_total', labels(keys[2]!.record.keyId))).toBe(0);
      expect(await metricValue('endpoint_requests_total', labels(keys[3]!.record.keyId))).toBe(0);
      expect(await metricValue('endpoint_requests_total', labels('other'))).toBe(before + 2);
    } finally {
      await capped.close();
    }
  });
});
