import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../shared/event-index.ts';
import { eventShape } from '../../shared/event-shape.ts';
import { initSqlParser } from '../../src/sql/index.ts';
import { BOOTSTRAP_KEY, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';

/** Names bound once, before any scan, from what the store holds for the source: the same meaning in every time window. */

function event(id: string, minute: number, metadata: Record<string, unknown>): StoredEvent {
  const timestamp = `2024-01-01T00:${String(minute).padStart(2, '0')}:00.000000Z`;
  return { id, timestamp, event_message: `message ${id}`, project: 'default', metadata, shape: eventShape(metadata) };
}

// e1's top-level record has `level`; e2's request record has it. Each sits alone in its own window.
const EVENTS = [event('e1', 10, { level: 'error', request: [{ path: '/a' }] }), event('e2', 40, { request: [{ path: '/b', level: 'error' }] })];
const ONLY_E1 = { project: 'default', iso_timestamp_start: '2024-01-01T00:00:00Z', iso_timestamp_end: '2024-01-01T00:20:00Z' };
const ONLY_E2 = { project: 'default', iso_timestamp_start: '2024-01-01T00:30:00Z', iso_timestamp_end: '2024-01-01T00:50:00Z' };

let server: EndpointTestServer;

beforeAll(async () => {
  await initSqlParser();
  server = await startEndpointServer({ now: Date.UTC(2024, 0, 1, 1) });
  await server.index('edge_logs', EVENTS);
}, 120_000);

afterAll(async () => {
  await server?.close();
});

async function sandboxed(sql: string, params: Record<string, string>) {
  return server.app.inject({
    method: 'POST',
    url: '/api/endpoints/query/logs.all',
    headers: { 'x-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' },
    payload: { ...params, sql },
  });
}

describe('one meaning per name, whatever the window holds', () => {
  const bare = "select id from edge_logs cross join unnest(metadata) m cross join unnest(m.request) r where level = 'error'";

  it('a bare field two unnested records have is ambiguous in every window, as BigQuery says from its schema', async () => {
    // the printer used to pick the record by the scanned rows' types: m.level over e1's window, r.level over e2's
    for (const window of [ONLY_E1, ONLY_E2]) {
      const response = await sandboxed(bare, window);
      expect(response.statusCode, response.body).toBe(400);
      expect(response.json().error.code).toBe('invalid_query');
      expect(response.json().error.message).toMatch(/^Name level is ambiguous: more than one unnested record has a field level; qualify it/);
    }
  });

  it('qualified, each field is the one named, in the store and in the engine alike', async () => {
    const top = "select id from edge_logs cross join unnest(metadata) m cross join unnest(m.request) r where m.level = 'error'";
    const nested = "select id from edge_logs cross join unnest(metadata) m cross join unnest(m.request) r where r.level = 'error'";
    const all = { project: 'default' };
    expect((await sandboxed(top, all)).json().result).toEqual([{ id: 'e1' }]);
    expect((await sandboxed(nested, all)).json().result).toEqual([{ id: 'e2' }]);
    expect((await sandboxed(top, ONLY_E2)).json().result).toEqual([]);
    expect((await sandboxed(nested, ONLY_E1)).json().result).toEqual([]);
  });

  it("a bare field only one record has is that record's, filtered in the store and in the engine", async () => {
    const path = "select id, path from edge_logs cross join unnest(metadata) m cross join unnest(m.request) r where path = '/b'";
    expect((await sandboxed(path, { project: 'default' })).json().result).toEqual([{ id: 'e2', path: '/b' }]);
  });
});

describe('a table alias used as a value', () => {
  it("is the whole row as a STRUCT of the table's columns", async () => {
    const response = await sandboxed("select t as raw from edge_logs as t where t.id = 'e1'", { project: 'default' });
    expect(response.statusCode, response.body).toBe(200);
    // a STRUCT value is answered as a one-element array of its record, as every record is
    expect(response.json().result).toEqual([
      {
        raw: [
          {
            id: 'e1',
            timestamp: Date.UTC(2024, 0, 1, 0, 10) * 1000,
            event_message: 'message e1',
            metadata: [{ level: 'error', request: [{ path: '/a' }] }],
            project: 'default',
          },
        ],
      },
    ]);
  });

  it('to_json_string(t) is the row as a JSON object', async () => {
    const response = await sandboxed("select to_json_string(t) as j from edge_logs as t where id = 'e2'", { project: 'default' });
    expect(response.statusCode, response.body).toBe(200);
    const [row] = response.json().result as { j: string }[];
    expect(JSON.parse(row!.j)).toMatchObject({ id: 'e2', event_message: 'message e2', metadata: [{ request: [{ path: '/b', level: 'error' }] }] });
  });
});
