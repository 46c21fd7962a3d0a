import { readFileSync } from 'node:fs';
import type { Client, UndiciConnection } from '@elastic/elasticsearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SOURCES } from '../../shared/sources.ts';
import { initSqlParser } from '../../src/sql/index.ts';
import { BOOTSTRAP_KEY, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';
import { sandboxDataset } from '../support/sandbox-data.ts';

interface StudioQuery {
  id: string;
  sql: string;
  params: Record<string, string>;
}
const studio: StudioQuery[] = JSON.parse(readFileSync(new URL('../fixtures/examples/studio-queries.json', import.meta.url), 'utf8'));

/** A search of the event indices (the endpoint catalog's own refreshes, in the background, are not a request's). */
const searchesEvents = (path: string) => path.includes('/_search') && SOURCES.some((source) => path.includes(source.name));

/** The event searches a client sends, counted by how: through its transport, or as plain requests on its connections' pools. */
function countSearches(client: Client): { transport: number; plain: number } {
  const counts = { transport: 0, plain: 0 };
  const request = client.transport.request.bind(client.transport);
  client.transport.request = ((params: { path: string }, options?: unknown) => {
    if (searchesEvents(params.path)) counts.transport += 1;
    return request(params as never, options as never);
  }) as typeof client.transport.request;
  for (const connection of client.connectionPool.connections as UndiciConnection[]) {
    const pool = connection.pool;
    const send = pool.request.bind(pool);
    pool.request = ((options: { path: string }) => {
      if (searchesEvents(options.path)) counts.plain += 1;
      return send(options as never);
    }) as typeof pool.request;
  }
  return counts;
}

const dataset = sandboxDataset({ perSource: 120, projects: ['default', 'other'] });
let server: EndpointTestServer;
let counts: { transport: number; plain: number };

beforeAll(async () => {
  await initSqlParser();
  server = await startEndpointServer({ now: Date.UTC(2024, 0, 1, 1), overrides: { RATE_LIMIT_PER_MINUTE: '0' } });
  for (const [source, events] of dataset.events) await server.index(source, events);
  // the server's searches go through this client: the store client is the one it was built with
  counts = countSearches(server.elasticsearch);
}, 180_000);

afterAll(async () => {
  await server?.close();
});

const headers = { 'x-api-key': BOOTSTRAP_KEY };

async function searchesOf(url: string, payload?: Record<string, string>): Promise<{ plain: number; transport: number; rows: unknown[] }> {
  const before = { ...counts };
  const response = await server.app.inject(
    payload ? { method: 'POST', url, headers: { ...headers, 'content-type': 'application/json' }, payload } : { method: 'GET', url, headers },
  );
  expect(response.statusCode, response.body).toBe(200);
  return { plain: counts.plain - before.plain, transport: counts.transport - before.transport, rows: response.json().result as unknown[] };
}

describe('every search of a request is a plain request, none through the client transport', () => {
  it.each(['preview_edge_local', 'preview_count_edge_errors', 'chart_edge', 'preview_fn_edge_local'])("the sandbox's scans of %s", async (id) => {
    const query = studio.find((candidate) => candidate.id === id)!;
    const searches = await searchesOf('/api/endpoints/query/logs.all', { ...query.params, sql: query.sql });
    expect(searches.plain).toBeGreaterThan(0);
    expect(searches.transport).toBe(0);
  });

  it.each(['daily', 'hourly', 'minutely'])("usage's %s series, uncached, and a sandboxed query over it", async (interval) => {
    const url = (sql?: string) =>
      `/api/endpoints/query/usage.api-counts?interval=${interval}&project=${encodeURIComponent('default\\.example')}${sql ? `&sql=${encodeURIComponent(sql)}` : ''}`;
    const saved = await searchesOf(url());
    expect(saved.plain).toBeGreaterThan(0);
    expect(saved.transport).toBe(0);
    const sandboxed = await searchesOf(url('select id from edge_logs'));
    expect(sandboxed.plain).toBeGreaterThan(0);
    expect(sandboxed.transport).toBe(0);
  });
});
