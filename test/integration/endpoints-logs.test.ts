import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logsAll } from '../../queries/logs-all.ts';
import { BOOTSTRAP_KEY, edgeEvent, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';

const START = '2024-01-01T00:00:00.000Z';
const END = '2024-01-01T01:00:00.000Z';
const request = { url: 'https://abc.supabase.co/rest/v1/t', path: '/rest/v1/t' };

type LogRow = { id: string; timestamp: number; event_message: string; metadata: Record<string, unknown>[] };

describe('logs.all (docs/design/SPEC.md 4.2)', () => {
  let server: EndpointTestServer;

  const logs = async (query: Record<string, string>, key = BOOTSTRAP_KEY) => {
    const response = await server.app.inject({ method: 'GET', url: '/api/endpoints/query/logs.all', query, headers: { 'x-api-key': key } });
    return { status: response.statusCode, headers: response.headers, body: response.json() as { result: LogRow[]; error?: { code: string; message: string } } };
  };
  const ids = (rows: LogRow[]) => rows.map((row) => row.id);

  beforeAll(async () => {
    server = await startEndpointServer({ now: Date.UTC(2024, 0, 2) });
    await server.index('edge_logs', [
      edgeEvent('at-start', '2024-01-01T00:00:00.000000Z', 'abc', request),
      edgeEvent('after-start', '2024-01-01T00:00:00.000001Z', 'abc', request, { response: { status_code: 200, headers: { cf_ray: 'r' } }, tags: ['x', 'y'] }),
      edgeEvent('tie-a', '2024-01-01T00:30:00.000000Z', 'abc', request),
      edgeEvent('tie-b', '2024-01-01T00:30:00.000000Z', 'abc', request),
      edgeEvent('at-end', '2024-01-01T01:00:00.000000Z', 'abc', request),
      edgeEvent('after-end', '2024-01-01T01:00:00.000001Z', 'abc', request),
      edgeEvent('other-project', '2024-01-01T00:31:00.000000Z', 'xyz', request),
      ...Array.from({ length: 150 }, (_, i) =>
        edgeEvent(
          `many-${String(i).padStart(3, '0')}`,
          `2024-01-01T02:${String(Math.floor(i / 60)).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}.000000Z`,
          'many',
          request,
        ),
      ),
    ]);
    // other sources, same project and time: the saved selection reads edge_logs only
    await server.index('postgres_logs', [{ id: 'postgres', timestamp: '2024-01-01T00:40:00.000000Z', event_message: 'db', project: 'abc', metadata: {} }]);
    await server.index('realtime_logs', [{ id: 'realtime', timestamp: '2024-01-01T00:41:00.000000Z', event_message: 'rt', metadata: { project: 'abc' } }]);
  });

  afterAll(async () => {
    await server.close();
  });

  it('start is exclusive and end inclusive, newest first with id as tie-break, only the project, only edge_logs', async () => {
    const response = await logs({ project: 'abc', iso_timestamp_start: START, iso_timestamp_end: END });
    expect(response.status).toBe(200);
    expect(response.headers['x-cache']).toBe('BYPASS');
    expect(ids(response.body.result)).toEqual(['at-end', 'tie-b', 'tie-a', 'after-start']);
  });

  it('an empty or absent bound means no bound', async () => {
    expect(ids((await logs({ project: 'abc', iso_timestamp_start: '', iso_timestamp_end: END })).body.result)).toEqual([
      'at-end',
      'tie-b',
      'tie-a',
      'after-start',
      'at-start',
    ]);
    expect(ids((await logs({ project: 'abc', iso_timestamp_start: START })).body.result)).toEqual(['after-end', 'at-end', 'tie-b', 'tie-a', 'after-start']);
    expect(ids((await logs({ project: 'abc', iso_timestamp_start: '', iso_timestamp_end: '' })).body.result)).toHaveLength(6);
  });

  it('returns the four columns: microsecond timestamps and metadata as arrays of records', async () => {
    const rows = (await logs({ project: 'abc', iso_timestamp_start: START, iso_timestamp_end: '2024-01-01T00:00:00.000001Z' })).body.result;
    expect(rows).toEqual([
      {
        id: 'after-start',
        timestamp: 1_704_067_200_000_001,
        event_message: 'GET | 200 | after-start',
        metadata: [{ request: [request], response: [{ status_code: 200, headers: [{ cf_ray: 'r' }] }], tags: ['x', 'y'] }],
      },
    ]);
  });

  it('returns at most 100 rows, newest first', async () => {
    const rows = (await logs({ project: 'many' })).body.result;
    expect(rows).toHaveLength(100);
    expect(rows[0]!.id).toBe('many-149');
    expect(rows[99]!.id).toBe('many-050');
  });

  it('answers an unknown project with no rows', async () => {
    expect((await logs({ project: 'nobody' })).body.result).toEqual([]);
  });

  it('rejects an unparseable timestamp naming the parameter, and a missing project', async () => {
    const bad = await logs({ project: 'abc', iso_timestamp_start: 'yesterday' });
    expect(bad.status).toBe(400);
    expect(bad.body.error?.message).toMatch(/iso_timestamp_start/);
    const badEnd = await logs({ project: 'abc', iso_timestamp_end: '2024-02-30T00:00:00Z' });
    expect(badEnd.status).toBe(400);
    expect(badEnd.body.error?.message).toMatch(/iso_timestamp_end/);
    for (const query of [{}, { project: '' }] as Record<string, string>[]) {
      const missing = await logs(query);
      expect(missing.status).toBe(400);
      expect(missing.body.error?.message).toMatch(/project is required/);
    }
  });

  it('a key limited to projects gets 403 for another project and rows for its own', async () => {
    const key = await server.createKey({ projects: ['abc'] });
    const forbidden = await logs({ project: 'xyz' }, key);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error?.code).toBe('forbidden');
    expect((await logs({ project: 'abc', iso_timestamp_start: START, iso_timestamp_end: END }, key)).body.result).toHaveLength(4);
  });

  it('is reachable by its UUID', async () => {
    const response = await server.app.inject({
      url: `/api/endpoints/query/${logsAll.id}?project=abc&iso_timestamp_start=${START}&iso_timestamp_end=${END}`,
      headers: { 'x-api-key': BOOTSTRAP_KEY },
    });
    expect(ids((response.json() as { result: LogRow[] }).result)).toEqual(['at-end', 'tie-b', 'tie-a', 'after-start']);
  });
});
