import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOTSTRAP_KEY, edgeEvent, startEndpointServer, storedTimestamp, type EndpointTestServer } from '../support/endpoint-server.ts';

/** Now: 2024-03-10T12:34:56.789Z. The hourly and minutely windows start at 11:34:56.789, the daily one 7 days earlier. */
const NOW = Date.UTC(2024, 2, 10, 12, 34, 56, 789);
const HOUR = 3600_000;
const DAY = 24 * HOUR;
const at = (iso: string) => Date.parse(iso);

const abc = (path: string) => ({ url: `https://abc.supabase.co${path}`, path });

describe('usage.api-counts (docs/design/SPEC.md 4.1)', () => {
  let server: EndpointTestServer;
  let limitedKey: string;

  const usage = async (query: Record<string, string>, key = BOOTSTRAP_KEY) => {
    const response = await server.app.inject({ method: 'GET', url: '/api/endpoints/query/usage.api-counts', query, headers: { 'x-api-key': key } });
    return {
      status: response.statusCode,
      headers: response.headers,
      body: response.json() as { result: Record<string, unknown>[]; error?: { code: string; message: string } },
    };
  };

  beforeAll(async () => {
    server = await startEndpointServer({ now: NOW });
    await server.index('edge_logs', [
      // window start: one microsecond before is out, exactly at it is in (same hour and minute bucket)
      edgeEvent('before-start', '2024-03-10T11:34:56.788999Z', 'abc', abc('/rest/v1/before')),
      edgeEvent('at-start', '2024-03-10T11:34:56.789000Z', 'abc', abc('/rest/v1/at-start')),
      // bucket edges: last microsecond of 11:00 and first of 12:00
      edgeEvent('end-of-11', '2024-03-10T11:59:59.999999Z', 'abc', abc('/storage/v1/object/a')),
      // several request records in one event, each counted
      edgeEvent('two-records', '2024-03-10T12:00:00.000000Z', 'abc', [abc('/auth/v1/token'), abc('/realtime/v1/websocket')]),
      // a path containing several texts counts in each column
      edgeEvent('multi-path', '2024-03-10T12:30:00.000000Z', 'abc', abc('/rest/v1/auth/realtime')),
      // a matching url with no counted path: the bucket appears with zeros
      edgeEvent('graphql-only', '2024-03-10T12:20:30.000000Z', 'abc', abc('/graphql/v1')),
      // another project's url is not counted
      edgeEvent('other-url', '2024-03-10T12:10:00.000000Z', 'xyz', { url: 'https://xyz.supabase.co/rest/v1/t', path: '/rest/v1/t' }),
      // an event of another key project whose url matches: counted for a key without project limits only
      edgeEvent('other-project', '2024-03-10T12:40:00.000000Z', 'other', abc('/storage/v1/b')),
      // one event with a matching and a non-matching record: only the matching record counts
      edgeEvent('mixed-records', '2024-03-10T12:50:00.000000Z', 'abc', [abc('/rest/v1/m'), { url: 'https://xyz.supabase.co/rest/v1/m', path: '/rest/v1/m' }]),
      // after now: the saved query has no upper bound, so it is counted
      edgeEvent('future', '2024-03-10T13:00:00.000000Z', 'abc', abc('/rest/v1/future')),
      // daily window: start 2024-03-03T12:34:56.789Z
      edgeEvent('day-before-start', '2024-03-03T12:34:56.788999Z', 'abc', abc('/rest/v1/d0')),
      edgeEvent('day-at-start', '2024-03-03T12:34:56.789000Z', 'abc', abc('/rest/v1/d1')),
      edgeEvent('day-end', '2024-03-03T23:59:59.999999Z', 'abc', abc('/storage/v1/d2')),
      // regex metacharacters: `abc.supabase` is a pattern, its dot matches any character
      edgeEvent('dot-any', '2024-03-10T12:05:00.000000Z', 'dot', { url: 'https://abcXsupabase.co/rest/v1/dot', path: '/rest/v1/dot' }),
    ]);
    // another source with matching urls is never read
    await server.index('auth_logs', [edgeEvent('auth-source', '2024-03-10T12:15:00.000000Z', 'abc', abc('/rest/v1/auth-source'))]);
    limitedKey = await server.createKey({ projects: ['abc'] });
  });

  afterAll(async () => {
    await server.close();
  });

  it('hourly: last hour from the window start on, by hour, ascending, counts per request record', async () => {
    const response = await usage({ interval: 'hourly', project: 'abc\\.supabase\\.co' });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.body.result).toEqual([
      { timestamp: '2024-03-10T11:00:00', total_rest_requests: 1, total_storage_requests: 1, total_auth_requests: 0, total_realtime_requests: 0 },
      { timestamp: '2024-03-10T12:00:00', total_rest_requests: 2, total_storage_requests: 1, total_auth_requests: 2, total_realtime_requests: 2 },
      { timestamp: '2024-03-10T13:00:00', total_rest_requests: 1, total_storage_requests: 0, total_auth_requests: 0, total_realtime_requests: 0 },
    ]);
  });

  it('minutely: last 60 minutes by minute; a bucket with matching requests but no counted path has zeros; empty minutes are absent', async () => {
    const response = await usage({ interval: 'minutely', project: 'abc\\.supabase\\.co' });
    const zero = { total_rest_requests: 0, total_storage_requests: 0, total_auth_requests: 0, total_realtime_requests: 0 };
    expect(response.body.result).toEqual([
      { timestamp: '2024-03-10T11:34:00', ...zero, total_rest_requests: 1 },
      { timestamp: '2024-03-10T11:59:00', ...zero, total_storage_requests: 1 },
      { timestamp: '2024-03-10T12:00:00', ...zero, total_auth_requests: 1, total_realtime_requests: 1 },
      { timestamp: '2024-03-10T12:20:00', ...zero },
      { timestamp: '2024-03-10T12:30:00', ...zero, total_rest_requests: 1, total_auth_requests: 1, total_realtime_requests: 1 },
      { timestamp: '2024-03-10T12:40:00', ...zero, total_storage_requests: 1 },
      { timestamp: '2024-03-10T12:50:00', ...zero, total_rest_requests: 1 },
      { timestamp: '2024-03-10T13:00:00', ...zero, total_rest_requests: 1 },
    ]);
  });

  it('daily: last 7 days by UTC day', async () => {
    const response = await usage({ interval: 'daily', project: 'abc\\.supabase\\.co' });
    expect(response.body.result).toEqual([
      { timestamp: '2024-03-03T00:00:00', total_rest_requests: 1, total_storage_requests: 1, total_auth_requests: 0, total_realtime_requests: 0 },
      { timestamp: '2024-03-10T00:00:00', total_rest_requests: 5, total_storage_requests: 2, total_auth_requests: 2, total_realtime_requests: 2 },
    ]);
  });

  it('treats project as a regular expression: an unescaped dot matches any character', async () => {
    const loose = await usage({ interval: 'hourly', project: 'abc.supabase' });
    const strict = await usage({ interval: 'hourly', project: 'abc\\.supabase' });
    const rest12 = (rows: Record<string, unknown>[]) => rows.find((row) => row.timestamp === '2024-03-10T12:00:00')?.total_rest_requests;
    expect(rest12(loose.body.result)).toBe(3);
    expect(rest12(strict.body.result)).toBe(2);
  });

  it('matches the pattern anywhere in the url, and anchors when asked', async () => {
    expect((await usage({ interval: 'hourly', project: 'abc' })).body.result).toHaveLength(3);
    expect((await usage({ interval: 'hourly', project: '^abc' })).body.result).toEqual([]);
    expect((await usage({ interval: 'hourly', project: '^https://xyz\\.' })).body.result).toEqual([
      { timestamp: '2024-03-10T12:00:00', total_rest_requests: 2, total_storage_requests: 0, total_auth_requests: 0, total_realtime_requests: 0 },
    ]);
  });

  it("a key limited to projects counts only its projects' events", async () => {
    const response = await usage({ interval: 'hourly', project: 'abc\\.supabase\\.co' }, limitedKey);
    expect(response.status).toBe(200);
    expect(response.body.result[1]).toEqual({
      timestamp: '2024-03-10T12:00:00',
      total_rest_requests: 2,
      total_storage_requests: 0,
      total_auth_requests: 2,
      total_realtime_requests: 2,
    });
  });

  it('moves the window with the clock: an hour later only events from 12:34:56.789 on count', async () => {
    await server.clock.advance(HOUR);
    const response = await usage({ interval: 'hourly', project: 'abc\\.supabase\\.co\\/' });
    expect(response.body.result).toEqual([
      { timestamp: '2024-03-10T12:00:00', total_rest_requests: 1, total_storage_requests: 1, total_auth_requests: 0, total_realtime_requests: 0 },
      { timestamp: '2024-03-10T13:00:00', total_rest_requests: 1, total_storage_requests: 0, total_auth_requests: 0, total_realtime_requests: 0 },
    ]);
    await server.clock.advance(DAY);
  });

  it('rejects an interval outside the three naming the allowed values, and a missing project', async () => {
    const bad = await usage({ interval: 'weekly', project: 'abc' });
    expect(bad.status).toBe(400);
    expect(bad.body.error?.message).toMatch(/hourly, daily, minutely/);
    const noProject = await usage({ interval: 'hourly' });
    expect(noProject.status).toBe(400);
    expect(noProject.body.error?.message).toMatch(/project is required/);
    const emptyProject = await usage({ interval: 'hourly', project: '' });
    expect(emptyProject.status).toBe(400);
  });

  it('rejects a pattern it cannot translate, naming the construct', async () => {
    const response = await usage({ interval: 'hourly', project: '(?i)abc' });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'unsupported_pattern' });
    expect(response.body.error?.message).toMatch(/inline flags/);
  });
});

describe('usage.api-counts row cap', () => {
  let server: EndpointTestServer;

  beforeAll(async () => {
    server = await startEndpointServer({ now: at('2024-05-01T00:00:00.000Z') });
    // 1100 minute buckets from now on: more than the 1000-row maximum
    await server.index(
      'edge_logs',
      Array.from({ length: 1100 }, (_, minute) =>
        edgeEvent(`cap-${minute}`, storedTimestamp(at('2024-05-01T00:00:00.000Z') + minute * 60_000 + 1000), 'cap', {
          url: 'https://cap.supabase.co/rest/v1/x',
          path: '/rest/v1/x',
        }),
      ),
    );
  });

  afterAll(async () => {
    await server.close();
  });

  it('returns at most 1000 rows, the oldest buckets first', async () => {
    const response = await server.app.inject({
      url: '/api/endpoints/query/usage.api-counts?interval=minutely&project=cap',
      headers: { 'x-api-key': BOOTSTRAP_KEY },
    });
    const rows = (response.json() as { result: { timestamp: string; total_rest_requests: number }[] }).result;
    expect(rows).toHaveLength(1000);
    expect(rows[0]).toMatchObject({ timestamp: '2024-05-01T00:00:00', total_rest_requests: 1 });
    expect(rows[999]!.timestamp).toBe('2024-05-01T16:39:00');
  });
});
