import { describe, expect, it } from 'vitest';
import { partitionIndexName } from '../../shared/partitions.ts';
import { documentCount, produce, waitFor, workerForFile } from '../support/ingest.ts';

interface FieldMapping {
  type?: string;
  properties?: Record<string, FieldMapping>;
}

describe('ingest: partitions are created from the template as events arrive', () => {
  const { config, client } = workerForFile('index-template');

  it('a partition deleted while the worker runs comes back through auto-create with the event mapping, and the events arrive', async () => {
    const index = partitionIndexName(config.INDEX_PREFIX, 'edge_logs', 'daily', Date.parse('2024-05-01T10:00:00Z'));
    await produce(config, 'edge_logs', [{ event_message: 'first', timestamp: '2024-05-01T09:00:00Z', project: 'default' }]);
    await waitFor(`the first event in ${index}`, async () => ((await documentCount(client, index)) === 1 ? true : undefined));
    await client.indices.delete({ index });
    expect(await client.indices.exists({ index })).toBe(false);

    const events = Array.from({ length: 20 }, (_, n) => ({
      event_message: `GET /rest/v1/items ${n}`,
      timestamp: `2024-05-01T10:00:00.${String(n).padStart(6, '0')}Z`,
      project: 'default',
      metadata: {
        request: [
          { url: `https://example.test/rest/v1/items?n=${n}`, path: '/rest/v1/items' },
          { url: 'https://example.test/health', path: '/health' },
        ],
      },
    }));
    await produce(config, 'edge_logs', events);
    await waitFor(`20 events in the re-created ${index}`, async () => ((await documentCount(client, index)) === 20 ? true : undefined));

    const mapping = (await client.indices.getMapping({ index }))[index]!.mappings.properties as Record<string, FieldMapping>;
    expect(mapping.timestamp?.type).toBe('date_nanos');
    expect(mapping.metadata?.properties?.request?.type).toBe('nested');
    // nested: each request record is matched on its own, so url and path of different records do not mix
    const mixed = await client.count({
      index,
      query: {
        nested: {
          path: 'metadata.request',
          query: { bool: { filter: [{ term: { 'metadata.request.path': '/health' } }, { prefix: { 'metadata.request.url': 'https://example.test/rest' } }] } },
        },
      },
    });
    expect(mixed.count).toBe(0);
    const stored = await client.search<{ timestamp: string }>({ index, size: 1, sort: [{ timestamp: 'desc' }] });
    expect(stored.hits.hits[0]!._source!.timestamp).toBe('2024-05-01T10:00:00.000019Z');
  });

  it('leaves other indices of the prefix (the API keys) to their own mapping', async () => {
    const keys = `${config.INDEX_PREFIX}api-keys`;
    await client.index({ index: keys, document: { timestamp: '2024-05-01T10:00:00.000000Z' }, refresh: true });
    const mapping = (await client.indices.getMapping({ index: keys }))[keys]!.mappings.properties as Record<string, FieldMapping>;
    expect(mapping.timestamp?.type).not.toBe('date_nanos');
  });
});
