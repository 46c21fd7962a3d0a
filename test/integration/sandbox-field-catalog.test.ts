import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOTSTRAP_KEY, edgeEvent, startEndpointServer, storedTimestamp, type EndpointTestServer } from '../support/endpoint-server.ts';

const NOW = Date.UTC(2024, 0, 10, 12);
const HOUR = 3_600_000;

let server: EndpointTestServer;

async function sql(text: string): Promise<{ status: number; result: Record<string, unknown>[] }> {
  const response = await server.app.inject({
    method: 'POST',
    url: '/api/endpoints/query/logs.all',
    headers: { 'x-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' },
    payload: { project: 'default', sql: text },
  });
  return { status: response.statusCode, result: (response.json() as { result: Record<string, unknown>[] }).result };
}

/** A bare field under three unnested records (metadata, its request, its response): the catalog decides which one holds it. */
const query = (field: string) =>
  `select id, ${field} from edge_logs cross join unnest(metadata) as m cross join unnest(m.request) as r cross join unnest(m.response) as s order by id`;

beforeAll(async () => {
  server = await startEndpointServer({ now: NOW, overrides: { RATE_LIMIT_PER_MINUTE: '0', FIELD_CATALOG_SECONDS: '3600' } });
  await server.index('edge_logs', [
    edgeEvent('a', storedTimestamp(NOW - HOUR), 'default', { url: 'https://x/a', path: '/a' }, { response: { status_code: 200 } }),
  ]);
});

afterAll(async () => {
  await server?.close();
});

describe('SQL binds a bare field against the field types read again when the kept ones lack it', () => {
  it('a field first stored after the types were read is found, under the record that has it', async () => {
    const field = `fresh_${Date.now().toString(36)}`;
    // no record has it yet: NULL, and the field types are now kept for an hour
    const before = await sql(query(field));
    expect(before.status).toBe(200);
    expect(before.result).toEqual([{ id: 'a', [field]: null }]);
    await server.index('edge_logs', [
      edgeEvent('b', storedTimestamp(NOW - HOUR / 2), 'default', { url: 'https://x/b', path: '/b' }, { response: { status_code: 500, [field]: 'yes' } }),
    ]);
    const after = await sql(query(field));
    expect(after.status).toBe(200);
    expect(after.result).toEqual([
      { id: 'a', [field]: null },
      { id: 'b', [field]: 'yes' },
    ]);
  });

  it('a field no event has still reads as NULL', async () => {
    const response = await sql(query('never_stored'));
    expect(response.status).toBe(200);
    expect(response.result.map((row) => row.never_stored)).toEqual([null, null]);
  });
});
