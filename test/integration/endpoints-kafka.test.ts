import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIngestWorker, type IngestWorker } from '../../ingest/worker.ts';
import { BOOTSTRAP_KEY, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';
import { ingestTestConfig, produce, silentLogger, waitFor } from '../support/ingest.ts';

const NOW = Date.UTC(2024, 0, 1, 12, 30);

/** An edge event as a producer sends it: no id, timestamp in epoch microseconds, request as one record. */
const produced = (micros: number, path: string, ip: string) => ({
  timestamp: micros,
  event_message: `GET | 200 | ${ip} | ${path}`,
  project: 'default',
  metadata: { request: { url: `https://default.supabase.co${path}`, path, headers: { cf_connecting_ip: ip } } },
});

describe('Kafka -> ingest worker -> endpoints', () => {
  const config = ingestTestConfig('endpoints-kafka');
  let worker: IngestWorker;
  let server: EndpointTestServer;

  beforeAll(async () => {
    worker = await startIngestWorker(config, silentLogger);
    server = await startEndpointServer({ now: NOW, overrides: { INDEX_PREFIX: config.INDEX_PREFIX } });
  });

  afterAll(async () => {
    await worker?.stop();
    await server?.close();
  });

  it('serves produced events with microsecond timestamps, counts them, and redacts on request', async () => {
    const base = NOW * 1000;
    await produce(config, 'edge_logs', [
      produced(base - 20 * 60 * 1_000_000 + 123, '/rest/v1/items', '203.0.113.5'),
      produced(base - 10 * 60 * 1_000_000 + 456, '/auth/v1/token', '2001:db8::5'),
      // a JSON array of events in one message
      [produced(base - 5 * 60 * 1_000_000 + 789, '/storage/v1/object', '198.51.100.1'), produced(base - 2 * 3600 * 1_000_000, '/rest/v1/old', '192.0.2.1')],
    ]);
    const rows = await waitFor('the four produced events through logs.all', async () => {
      const response = await server.app.inject({ url: '/api/endpoints/query/logs.all?project=default', headers: { 'x-api-key': BOOTSTRAP_KEY } });
      const result = (response.json() as { result: { id: string; timestamp: number; event_message: string; metadata: { request: { path: string }[] }[] }[] })
        .result;
      return result.length === 4 ? result : undefined;
    });
    expect(rows.map((row) => row.timestamp)).toEqual([
      base - 5 * 60 * 1_000_000 + 789,
      base - 10 * 60 * 1_000_000 + 456,
      base - 20 * 60 * 1_000_000 + 123,
      base - 2 * 3600 * 1_000_000,
    ]);
    expect(rows[0]!.metadata[0]!.request[0]!.path).toBe('/storage/v1/object');
    expect(new Set(rows.map((row) => row.id)).size).toBe(4);

    const usage = await server.app.inject({
      url: '/api/endpoints/query/usage.api-counts?interval=hourly&project=default\\.supabase',
      headers: { 'x-api-key': BOOTSTRAP_KEY },
    });
    expect(usage.json()).toEqual({
      result: [{ timestamp: '2024-01-01T12:00:00', total_rest_requests: 1, total_storage_requests: 1, total_auth_requests: 1, total_realtime_requests: 0 }],
    });

    const redacted = await server.app.inject({
      url: '/api/endpoints/query/logs.all?project=default',
      headers: { 'x-api-key': BOOTSTRAP_KEY, 'svc-endpoint-redact-pii': 'true' },
    });
    const text = redacted.body;
    for (const ip of ['203.0.113.5', '2001:db8::5', '198.51.100.1', '192.0.2.1']) expect(text).not.toContain(ip);
    expect(text).toContain('GET | 200 | REDACTED | /rest/v1/items');
  });
});
