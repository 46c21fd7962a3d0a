import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repositoryRoot } from '../../shared/config.ts';
import { restoreSetAsideFields, type StoredEvent } from '../../shared/event-index.ts';
import { eventShape } from '../../shared/event-shape.ts';
import { SOURCES, type SourceName } from '../../shared/sources.ts';
import { BOOTSTRAP_KEY, startEndpointServer } from '../support/endpoint-server.ts';
import { documentCount, produce, sourceIndex, waitFor, workerForFile, storedById } from '../support/ingest.ts';

const samplesDir = path.join(repositoryRoot, 'test', 'fixtures', 'logflare-samples');
const sample = (upstream: string): Record<string, unknown> => JSON.parse(readFileSync(path.join(samplesDir, `${upstream}.json`), 'utf8'));

describe('ingest: every sample source into its own index', () => {
  const { config, client, worker } = workerForFile('samples');

  it('stores each sample in its source index with every field intact', async () => {
    for (const [position, source] of SOURCES.entries()) {
      await produce(config, source.name, [{ ...sample(source.upstream), id: `sample-${source.name}`, timestamp: 1_700_000_000_000_000 + position }]);
    }
    for (const [position, source] of SOURCES.entries()) {
      const index = sourceIndex(config, source.name);
      const stored = await waitFor(`the ${source.name} sample in ${index}`, async () => {
        const response = await storedById<StoredEvent>(client, index, `sample-${source.name}`);
        return response.found ? response._source : undefined;
      });
      // JSON.parse keeps the last of duplicate keys, as any producer's serialiser would
      const { metadata, event_message, project } = sample(source.upstream);
      expect(stored).toEqual({
        id: `sample-${source.name}`,
        timestamp: `2023-11-14T22:13:20.000${String(position).padStart(3, '0')}Z`,
        event_message,
        ...(project === undefined ? {} : { project }),
        metadata,
        shape: eventShape(metadata),
      });
      expect(await documentCount(client, index)).toBe(1);
    }
  });

  it('makes the project fields searchable the way each source is filtered', async () => {
    for (const source of SOURCES) {
      const { count } = await client.count({
        index: sourceIndex(config, source.name),
        query: { term: { [source.projectField]: expectedProject(source.name) } },
      });
      expect(count, source.name).toBe(1);
    }
    const { count } = await client.count({
      index: sourceIndex(config, 'edge_logs'),
      query: {
        nested: {
          path: 'metadata.request',
          query: {
            bool: {
              filter: [
                { term: { 'metadata.request.path': '/rest/v1/some_table' } },
                { prefix: { 'metadata.request.url': 'https://default.supabase.co/rest/v1/' } },
              ],
            },
          },
        },
      },
    });
    expect(count).toBe(1);
  });

  it('stores an event whose metadata type clashes with the mapping, sets the field aside and counts the conflict', async () => {
    const first = { id: 'typed-1', event_message: 'a', project: 'default', metadata: { detail: { code: 1 }, level: 'info' } };
    const clashing = {
      id: 'typed-2',
      event_message: 'b',
      project: 'default',
      metadata: { detail: 'plain text', level: 'info', request: [{ url: 'https://default.supabase.co/rest/v1/x', path: '/rest/v1/x' }] },
    };
    await produce(config, 'postgres_logs', [first], 0);
    const index = sourceIndex(config, 'postgres_logs');
    await waitFor('the first typed event', async () => ((await storedById(client, index, 'typed-1')).found ? true : undefined));
    await produce(config, 'postgres_logs', [clashing], 0);
    const stored = await waitFor('the clashing event', async () => {
      const response = await storedById<StoredEvent>(client, index, 'typed-2');
      return response.found ? response._source : undefined;
    });
    expect(stored?.metadata).toEqual({ level: 'info', request: clashing.metadata.request });
    expect(stored?.metadata_unindexed).toEqual([{ path: ['detail'], value: 'plain text' }]);
    expect(restoreSetAsideFields(stored!)).toMatchObject({ id: 'typed-2', metadata: clashing.metadata });
    // the rest of the event stays searchable
    await client.indices.refresh({ index });
    const { count } = await client.count({
      index,
      query: { nested: { path: 'metadata.request', query: { term: { 'metadata.request.path': '/rest/v1/x' } } } },
    });
    expect(count).toBe(1);
    const metrics = await (await fetch(`http://127.0.0.1:${worker().port}/metrics`)).text();
    expect(metrics).toMatch(/ingest_type_conflicts_total\{source="postgres_logs"\} 1/);
  });

  it('returns the ingested edge events through the query path as the same events, set-aside fields included', async () => {
    const request = { url: 'https://default.supabase.co/rest/v1/t', path: '/rest/v1/t', method: 'GET' };
    await produce(
      config,
      'edge_logs',
      [{ id: 'edge-typed-1', event_message: 'a', project: 'default', timestamp: '2023-11-14T22:13:21.5Z', metadata: { request, extra: { a: 1 } } }],
      0,
    );
    const index = sourceIndex(config, 'edge_logs');
    await waitFor('the first edge event', async () => ((await storedById(client, index, 'edge-typed-1')).found ? true : undefined));
    await produce(
      config,
      'edge_logs',
      [{ id: 'edge-typed-2', event_message: 'b', project: 'default', timestamp: '2023-11-14T22:13:22.25Z', metadata: { request, extra: 'text' } }],
      0,
    );
    await waitFor('the clashing edge event', async () => ((await storedById(client, index, 'edge-typed-2')).found ? true : undefined));
    await client.indices.refresh({ index });

    const server = await startEndpointServer({ now: Date.now(), overrides: { INDEX_PREFIX: config.INDEX_PREFIX } });
    try {
      const response = await server.app.inject({ url: '/api/endpoints/query/logs.all?project=default', headers: { 'x-api-key': BOOTSTRAP_KEY } });
      expect(response.statusCode).toBe(200);
      const rows = (response.json() as { result: { id: string; timestamp: number; event_message: string; metadata: Record<string, unknown>[] }[] }).result;
      expect(rows.map((row) => row.id)).toEqual(['edge-typed-2', 'edge-typed-1', 'sample-edge_logs']);
      const edge = sample('cloudflare.logs.prod') as {
        event_message: string;
        metadata: { request: { cf: { city: string }; path: string }; response: { status_code: number } };
      };
      const [typed2, typed1, sampleRow] = rows as [(typeof rows)[0], (typeof rows)[0], (typeof rows)[0]];
      expect(sampleRow).toMatchObject({ timestamp: 1_700_000_000_000_000, event_message: edge.event_message });
      const metadata = sampleRow.metadata[0] as { request: [{ path: string; cf: [{ city: string }] }]; response: [{ status_code: number }] };
      expect(metadata.request[0].path).toBe(edge.metadata.request.path);
      expect(metadata.request[0].cf[0].city).toBe(edge.metadata.request.cf.city);
      expect(metadata.response[0].status_code).toBe(edge.metadata.response.status_code);
      expect(typed1).toMatchObject({ timestamp: 1_700_000_001_500_000, metadata: [{ extra: [{ a: 1 }] }] });
      expect(typed2).toMatchObject({ timestamp: 1_700_000_002_250_000, metadata: [{ extra: 'text', request: [request] }] });
    } finally {
      await server.app.close();
    }
  });

  it('serves health and metrics', async () => {
    const health = await fetch(`http://127.0.0.1:${worker().port}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'consuming' });
    const metrics = await (await fetch(`http://127.0.0.1:${worker().port}/metrics`)).text();
    expect(metrics).toMatch(/ingest_events_indexed_total\{source="edge_logs"\} 3/);
    expect(metrics).toMatch(/ingest_bulk_duration_seconds_bucket/);
    // the lag gauge is read from Kafka every INGEST_LAG_POLL_MS, so it may lag the indexing by one poll
    const lag = await waitFor(
      'the consumer lag gauge for edge_logs',
      async () => {
        const text = await (await fetch(`http://127.0.0.1:${worker().port}/metrics`)).text();
        return /ingest_consumer_lag\{topic="[^"]+edge_logs",partition="\d"\} 0/.exec(text)?.[0];
      },
      20_000,
    );
    expect(lag).toMatch(/ 0$/);
  });
});

function expectedProject(source: SourceName): string {
  const { project, metadata } = sample(SOURCES.find((entry) => entry.name === source)!.upstream) as { project?: string; metadata: Record<string, string> };
  const field = SOURCES.find((entry) => entry.name === source)!.projectField;
  return field === 'project' ? project! : metadata[field.slice('metadata.'.length)]!;
}
