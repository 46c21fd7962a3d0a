import { CompressionTypes } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sourceTopic } from '../../ingest/topics.ts';
import { BOOTSTRAP_KEY, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';
import { produceMessages, sourceIndex, waitForCommittedToEnd, workerForFile, storedById } from '../support/ingest.ts';

type LogRow = Record<string, unknown> & { id: string; metadata: Record<string, unknown>[] };

describe('ingest: producer shapes, folded fields and shape, seen through logs.all', () => {
  const { config, client } = workerForFile('shapes', { INGEST_FIELD_MAP: 'edge_logs:text=event_message' });
  let server: EndpointTestServer;

  beforeAll(async () => {
    server = await startEndpointServer({ now: Date.UTC(2024, 0, 2), overrides: { INDEX_PREFIX: config.INDEX_PREFIX } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('stores aliases, folded fields, NDJSON, keys and id headers so logs.all returns them, and never returns shape', async () => {
    const topic = sourceTopic(config, 'edge_logs');
    const logstash = {
      '@timestamp': '2024-01-01T10:00:00.000Z',
      '@version': '1',
      message: 'GET /rest/v1/t',
      project: 'shapes',
      host: { name: 'web-1' },
      level: 'info',
      metadata: { level: 'debug', request: [{ path: '/a' }, { path: '/b' }] },
    };
    const ndjson = [
      { id: 'nd-1', msg: 'first line', ts: 1_704_103_200, project: 'shapes' },
      { id: 'nd-2', text: 'mapped field', time: '2024-01-01T10:00:02Z', project: 'shapes', tags: ['a', 'b'] },
    ];
    await produceMessages(
      config,
      topic,
      [{ key: 'user-1', value: JSON.stringify(logstash), headers: { id: 'logstash-1' } }, { value: ndjson.map((line) => JSON.stringify(line)).join('\n') }],
      CompressionTypes.Snappy,
    );
    await waitForCommittedToEnd(config, [topic]);
    await client.indices.refresh({ index: sourceIndex(config, 'edge_logs') });

    const response = await server.app.inject({
      method: 'GET',
      url: '/api/endpoints/query/logs.all',
      query: { project: 'shapes' },
      headers: { 'x-api-key': BOOTSTRAP_KEY },
    });
    expect(response.statusCode).toBe(200);
    const rows = (response.json() as { result: LogRow[] }).result;
    expect(rows.map((row) => row.id).sort()).toEqual(['logstash-1', 'nd-1', 'nd-2']);
    for (const row of rows) {
      for (const internal of ['shape', 'folded_fields', 'key_field']) expect(row).not.toHaveProperty(internal);
      expect(JSON.stringify(row.metadata)).not.toMatch(/"(shape|folded_fields|key_field|arrays|multi)"/);
    }

    const byId = new Map(rows.map((row) => [row.id, row]));
    expect(byId.get('logstash-1')).toMatchObject({ event_message: 'GET /rest/v1/t', timestamp: Date.UTC(2024, 0, 1, 10) * 1000 });
    // folded fields in the BigQuery view: own names, the clashing `level` under top_level_fields, the key
    expect(byId.get('logstash-1')!.metadata).toEqual([
      {
        level: 'debug',
        request: [{ path: '/a' }, { path: '/b' }],
        '@version': '1',
        host: [{ name: 'web-1' }],
        top_level_fields: [{ level: 'info' }],
        kafka_key: 'user-1',
      },
    ]);
    expect(byId.get('nd-2')).toMatchObject({ event_message: 'mapped field', metadata: [{ tags: ['a', 'b'] }] });
    expect(byId.get('nd-1')).toMatchObject({ event_message: 'first line', timestamp: 1_704_103_200_000_000, metadata: [] });

    // the stored document keeps how to undo the folding, and the shape for the planner
    const stored = (await storedById<Record<string, unknown>>(client, sourceIndex(config, 'edge_logs'), 'logstash-1'))._source!;
    expect(stored.folded_fields).toEqual(['@version', 'host', 'top_level_fields.level']);
    expect(stored.key_field).toBe('kafka_key');
    expect(stored.shape).toEqual({
      version: 1,
      arrays: ['metadata', 'metadata.host', 'metadata.request', 'metadata.top_level_fields'],
      multi: ['metadata.request'],
    });
    // shape is searchable as mapped
    const multi = await client.count({ index: sourceIndex(config, 'edge_logs'), query: { term: { 'shape.multi': 'metadata.request' } } });
    expect(multi.count).toBe(1);
    const mapping = await client.indices.getMapping({ index: sourceIndex(config, 'edge_logs') });
    expect(Object.values(mapping)[0]!.mappings.properties!.shape).toEqual({
      properties: { arrays: { type: 'keyword' }, multi: { type: 'keyword' }, version: { type: 'integer' } },
    });
  });
});
