import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsRegistry } from '../../src/metrics.ts';
import { BOOTSTRAP_KEY, edgeEvent, startEndpointServer, storedTimestamp, type EndpointTestServer } from '../support/endpoint-server.ts';

const NOW = Date.UTC(2024, 4, 1, 12, 0, 0);
/** A pattern the store refuses to evaluate (determinizing `.*a.{12}b.*` needs more than its fixed 10,000 effort) that the translator accepts. */
const TOO_COMPLEX = 'a.{12}b';

let server: EndpointTestServer;

async function searchesOf(endpoint: string): Promise<number> {
  const metric = (await metricsRegistry.getMetricsAsJSON()).find((m) => m.name === 'elasticsearch_query_duration_seconds');
  const values = (metric?.values ?? []) as { value: number; labels: Record<string, unknown>; metricName?: string }[];
  return values.find((v) => v.metricName === 'elasticsearch_query_duration_seconds_count' && v.labels.endpoint === endpoint)?.value ?? 0;
}

async function ask(endpoint: string, params: Record<string, string>): Promise<{ status: number; code?: string; message?: string }> {
  const response = await server.app.inject({
    method: 'POST',
    url: `/api/endpoints/query/${endpoint}`,
    headers: { 'x-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' },
    payload: params,
  });
  const body = response.json() as { error?: { code: string; message: string } };
  return { status: response.statusCode, code: body.error?.code, message: body.error?.message };
}

/** `count` LQL filters on request paths, each its own regular expression. */
const lqlWith = (count: number) => `f:edge_logs ${Array.from({ length: count }, (_, n) => `-m.request.path:~"p${n}x"`).join(' ')}`;
/** A WHERE with `count` regexp_contains the store can check, each pushed down as its own regexp query. */
const sqlWith = (count: number) =>
  `select id from edge_logs where ${Array.from({ length: count }, (_, n) => `regexp_contains(event_message, 'p${n}x')`).join(' or ')}`;

beforeAll(async () => {
  server = await startEndpointServer({ now: NOW, overrides: { RATE_LIMIT_PER_MINUTE: '0' } });
  await server.index('edge_logs', [
    edgeEvent('e1', storedTimestamp(NOW - 60_000), 'default', { url: 'https://abc.supabase.co/rest/v1/a', path: '/rest/v1/a' }),
  ]);
});

afterAll(async () => {
  await server?.close();
});

describe('regular expressions per request are bounded before any search runs', () => {
  it('an LQL query with more than SANDBOX_MAX_REGEX_PER_QUERY (16) patterns is refused with 400 naming the limit; 16 run', async () => {
    const before = await searchesOf('logs.all');
    const refused = await ask('logs.all', { project: 'default', lql: lqlWith(17) });
    expect(refused).toMatchObject({ status: 400, code: 'query_too_expensive' });
    expect(refused.message).toMatch(/17 regular expressions.*at most 16.*SANDBOX_MAX_REGEX_PER_QUERY/);
    expect(await searchesOf('logs.all')).toBe(before);
    const allowed = await ask('logs.all', { project: 'default', lql: lqlWith(16) });
    expect(allowed.status, allowed.message).toBe(200);
  });

  it('sandboxed SQL pushing down more than 16 regexp_contains is refused the same way', async () => {
    const before = await searchesOf('logs.all');
    const refused = await ask('logs.all', { project: 'default', sql: sqlWith(17) });
    expect(refused).toMatchObject({ status: 400, code: 'query_too_expensive' });
    expect(refused.message).toMatch(/17 regular expressions.*at most 16/);
    expect(await searchesOf('logs.all')).toBe(before);
    expect((await ask('logs.all', { project: 'default', sql: sqlWith(16) })).status).toBe(200);
  });

  it('patterns longer than SANDBOX_MAX_REGEX_CHARS (4096) together are refused, naming the limit', async () => {
    const long = (n: number) => `-m.request.path:~"${String.fromCharCode(97 + n).repeat(900)}"`;
    const before = await searchesOf('logs.all');
    const refused = await ask('logs.all', { project: 'default', lql: `f:edge_logs ${[0, 1, 2, 3, 4].map(long).join(' ')}` });
    expect(refused).toMatchObject({ status: 400, code: 'query_too_expensive' });
    expect(refused.message).toMatch(/4\d{3} characters.*more than 4096.*SANDBOX_MAX_REGEX_CHARS/);
    expect(await searchesOf('logs.all')).toBe(before);
  });

  it('the limits are configuration: a service allowing 20 patterns answers 17', async () => {
    const wider = await startEndpointServer({ now: NOW, overrides: { RATE_LIMIT_PER_MINUTE: '0', SANDBOX_MAX_REGEX_PER_QUERY: '20' } });
    try {
      await wider.index('edge_logs', [
        edgeEvent('e1', storedTimestamp(NOW - 60_000), 'default', { url: 'https://abc.supabase.co/rest/v1/a', path: '/rest/v1/a' }),
      ]);
      const response = await wider.app.inject({
        method: 'POST',
        url: '/api/endpoints/query/logs.all',
        headers: { 'x-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' },
        payload: { project: 'default', lql: lqlWith(17) },
      });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json().result.map((row: { id: string }) => row.id)).toEqual(['e1']);
    } finally {
      await wider.close();
    }
  });
});

describe('a pattern the store refuses as too complex is named after where it came from', () => {
  it('LQL: lql and the pattern as written', async () => {
    const answer = await ask('logs.all', { project: 'default', lql: `f:edge_logs m.request.url:~"${TOO_COMPLEX}"` });
    expect(answer).toMatchObject({ status: 400, code: 'pattern_too_complex' });
    expect(answer.message).toMatch(/^lql: the pattern "a\.\{12\}b" is too complex for the log store/);
  });

  it('SQL: sql and the pattern of regexp_contains', async () => {
    const answer = await ask('logs.all', { project: 'default', sql: `select id from edge_logs where regexp_contains(event_message, '${TOO_COMPLEX}')` });
    expect(answer).toMatchObject({ status: 400, code: 'pattern_too_complex' });
    expect(answer.message).toMatch(/^sql: the pattern "a\.\{12\}b" is too complex for the log store/);
    const grouped = await ask('logs.all', {
      project: 'default',
      sql: `select count(*) as n from edge_logs where regexp_contains(event_message, '${TOO_COMPLEX}')`,
    });
    expect(grouped).toMatchObject({ status: 400, code: 'pattern_too_complex' });
    expect(grouped.message).toMatch(/^sql: the pattern "a\.\{12\}b" is too complex for the log store/);
  });

  it('usage.api-counts: the project parameter, also when the query adds a pattern of its own', async () => {
    const saved = await ask('usage.api-counts', { interval: 'hourly', project: TOO_COMPLEX });
    expect(saved).toMatchObject({ status: 400, code: 'pattern_too_complex' });
    expect(saved.message).toMatch(/^project: the pattern "a\.\{12\}b" is too complex/);
    const withLql = await ask('usage.api-counts', { interval: 'hourly', project: 'abc', lql: `f:edge_logs event_message:~"${TOO_COMPLEX}"` });
    expect(withLql).toMatchObject({ status: 400, code: 'pattern_too_complex' });
    expect(withLql.message).toMatch(/^lql: the pattern "a\.\{12\}b"/);
  });

  it('usual project patterns keep working', async () => {
    for (const project of ['abc', 'abc\\.supabase\\.co', '^https://abc\\.', '.*supabase.*', '[Aa][Bb][Cc]', 'rest|storage']) {
      const answer = await ask('usage.api-counts', { interval: 'hourly', project });
      expect(answer.status, `${project}: ${answer.message}`).toBe(200);
    }
  });
});
