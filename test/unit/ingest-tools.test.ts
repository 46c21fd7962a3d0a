import { describe, expect, it } from 'vitest';
import { errors } from '@elastic/elasticsearch';
import { backoffMs, bulkEntry, chunkBySize, entryEvent, isRetriableRequestError, latestPerId } from '../../ingest/bulk.ts';
import { deadLetterMessage } from '../../ingest/dead-letter.ts';
import { demoEvents } from '../../scripts/demo-events.ts';
import { decodeMessage } from '../../ingest/event.ts';
import { eventsFromText, parseProduceArguments } from '../../scripts/produce-input.ts';
import { sourceTopic } from '../../ingest/topics.ts';
import { ConfigError, loadConfig } from '../../shared/config.ts';
import { SOURCE_NAMES } from '../../shared/sources.ts';

describe('bulk batching and retries', () => {
  it('bounds chunks by count and by bytes, keeping order', () => {
    expect(chunkBySize([1, 2, 3, 4, 5], () => 1, 100, 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(chunkBySize([60, 60, 10, 90], (n) => n, 100, 10)).toEqual([[60], [60, 10], [90]]);
    expect(chunkBySize([500], (n) => n, 100, 10)).toEqual([[500]]);
  });

  it('retries a bulk request Elasticsearch did not answer or answered with overload, not one it refused', () => {
    const answered = (statusCode: number) => new errors.ResponseError({ statusCode, body: {}, headers: {}, warnings: null, meta: {} as never });
    expect(isRetriableRequestError(new errors.ConnectionError('connect ECONNREFUSED'))).toBe(true);
    expect(isRetriableRequestError(new errors.TimeoutError('Request timed out'))).toBe(true);
    expect(isRetriableRequestError(answered(503))).toBe(true);
    expect(isRetriableRequestError(answered(429))).toBe(true);
    expect(isRetriableRequestError(answered(413))).toBe(false);
  });

  it('writes each id once, its latest version, in Kafka order', () => {
    const item = (id: string, event_message: string) => ({ entry: bulkEntry('i', { id, event_message, timestamp: '2024-01-01T00:00:00.000000Z' }) });
    expect(
      latestPerId([item('a', '1'), item('b', '1'), item('a', '2'), item('c', '1')]).map(({ entry }) => `${entry.id}${entryEvent(entry).event_message}`),
    ).toEqual(['b1', 'a2', 'c1']);
  });

  it('reads the stored event back from its bulk entry as it was serialised', () => {
    const event = { id: 'é/1', timestamp: '2024-01-01T00:00:00.000000Z', event_message: 'two\nlines "quoted"', metadata: [{ city: 'São Paulo', n: 1.5 }] };
    expect(entryEvent(bulkEntry('logs-x', event))).toEqual(event);
  });

  it('backs off exponentially up to the cap', () => {
    expect([0, 1, 2, 3, 10, 100].map((attempt) => backoffMs(attempt, 200, 5000))).toEqual([200, 400, 800, 1600, 5000, 5000]);
  });
});

describe('dead letters', () => {
  it('carry the original bytes, the reason and the source position in headers', () => {
    const message = deadLetterMessage({
      reason: 'invalid_json',
      detail: 'bad',
      key: null,
      value: Buffer.from('{x'),
      source: { topic: 't', partition: 2, offset: '41', element: 3 },
    });
    expect(message.value).toEqual(Buffer.from('{x'));
    expect(message.headers).toEqual({
      'dead-letter-reason': 'invalid_json',
      'dead-letter-detail': 'bad',
      'source-topic': 't',
      'source-partition': '2',
      'source-offset': '41',
      'source-element': '3',
    });
  });
});

describe('producer input', () => {
  it('reads one JSON document, an array, or newline-delimited JSON', () => {
    expect(eventsFromText('{\n  "event_message": "a"\n}\n')).toEqual(['{"event_message":"a"}']);
    expect(eventsFromText('[{"event_message":"a"},{"event_message":"b"}]')).toEqual(['{"event_message":"a"}', '{"event_message":"b"}']);
    expect(eventsFromText('{"event_message":"a"}\n\n{"event_message":"b"}\nnot json\n')).toEqual([
      '{"event_message":"a"}',
      '{"event_message":"b"}',
      'not json',
    ]);
  });

  it('parses the command line and explains mistakes', () => {
    expect(parseProduceArguments(['--source', 'edge_logs', 'file.ndjson'])).toEqual({ source: 'edge_logs', file: 'file.ndjson', compression: 'none' });
    expect(parseProduceArguments(['--source=auth_logs', '--compression', 'lz4'])).toEqual({ source: 'auth_logs', file: undefined, compression: 'lz4' });
    expect(() => parseProduceArguments(['--source=auth_logs', '--compression=zstd'])).toThrow(/--compression must be one of none, gzip, snappy, lz4/);
    expect(() => parseProduceArguments(['file.ndjson'])).toThrow(/--source is required/);
    expect(() => parseProduceArguments(['--source', 'x', '--fast'])).toThrow(/unknown option --fast/);
  });
});

describe('topic configuration', () => {
  it('names topics after the sources with the prefix, unless overridden', () => {
    const config = loadConfig({ TOPIC_PREFIX: 'p.', SOURCE_TOPICS: 'edge_logs=cf-edge, auth_logs=gotrue' });
    expect(sourceTopic(config, 'edge_logs')).toBe('cf-edge');
    expect(sourceTopic(config, 'auth_logs')).toBe('gotrue');
    expect(sourceTopic(config, 'postgres_logs')).toBe('p.postgres_logs');
    expect(config.INGEST_PORT).toBe(4001);
    expect(config.INGEST_TOPIC_PARTITIONS).toBe(3);
  });

  it('rejects an unknown source or a malformed override', () => {
    expect(() => loadConfig({ SOURCE_TOPICS: 'nginx_logs=x' })).toThrow(/unknown source "nginx_logs"/);
    expect(() => loadConfig({ SOURCE_TOPICS: 'edge_logs' })).toThrow(ConfigError);
  });
});

describe('demo events', () => {
  const from = new Date('2024-01-01T00:00:00Z');
  const to = new Date('2024-01-02T00:00:00Z');
  const events = [...demoEvents({ count: 3000, from, to, projects: ['default', 'other'] })];

  it('covers all nine sources, every event valid and inside the range', () => {
    expect(new Set(events.map((demo) => demo.source))).toEqual(new Set(SOURCE_NAMES));
    for (const { event } of events) {
      const [decoded] = decodeMessage({ topic: 't', partition: 0, offset: '0', timestamp: '0', value: Buffer.from(JSON.stringify(event)) }, 1 << 20);
      expect(decoded?.ok).toBe(true);
      const at = Date.parse(event.timestamp as string);
      expect(at).toBeGreaterThanOrEqual(from.getTime());
      expect(at).toBeLessThanOrEqual(to.getTime());
    }
    expect(events.filter((demo) => Date.parse(demo.event.timestamp as string) >= to.getTime() - 3_600_000).length).toBeGreaterThan(3000 * 0.08);
  });

  it('ties each event to its project the way its source is filtered, with edge requests shaped like the samples', () => {
    const edge = events.find((demo) => demo.source === 'edge_logs')!.event as {
      project: string;
      metadata: { request: { url: string; path: string }; response: { status_code: number } };
    };
    expect(['default', 'other']).toContain(edge.project);
    expect(edge.metadata.request.url).toMatch(new RegExp(`^https://${edge.project}\\.supabase\\.co/(rest|auth|storage|realtime|functions)/v1/`));
    expect(edge.metadata.request.url).toContain(edge.metadata.request.path);
    expect(typeof edge.metadata.response.status_code).toBe('number');
    const functionEvent = events.find((demo) => demo.source === 'function_logs')!.event as { metadata: { project_ref: string } };
    expect(['default', 'other']).toContain(functionEvent.metadata.project_ref);
    const storage = events.find((demo) => demo.source === 'storage_logs')!.event as { metadata: { project: string } };
    expect(['default', 'other']).toContain(storage.metadata.project);
    const text = JSON.stringify(events.map((demo) => demo.event));
    expect(text).toMatch(/\b\d{1,3}(\.\d{1,3}){3}\b/);
    expect(text).toMatch(/2a02:[0-9a-f]{4}:/);
  });
});
