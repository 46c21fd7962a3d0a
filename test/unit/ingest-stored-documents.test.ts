import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { KafkaMessage } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { decodeChunk, type SourceRoute } from '../../ingest/batch.ts';
import { demoEvents } from '../../scripts/demo-events.ts';
import { DEFAULT_EVENT_FIELD_NAMES } from '../../ingest/event-fields.ts';
import { eventPartitioning } from '../../ingest/event-partition.ts';
import { createIngestMetrics } from '../../ingest/metrics.ts';

/**
 * A guard for work on the decoding path's speed: the bulk entries (action and document lines) of
 * a fixed corpus are byte for byte what they were when the digests below were taken (main at
 * 8512805). A change that alters any stored document, its id or its index fails here.
 */
const samples = path.resolve(import.meta.dirname, '../fixtures/logflare-samples');
const route: SourceRoute = {
  source: 'edge_logs',
  partitioning: eventPartitioning('guard-', 'edge_logs', 'daily', 100_000),
  deadLetterTopic: 'edge_logs.dead',
  fieldNames: DEFAULT_EVENT_FIELD_NAMES,
};
const dependencies = {
  metrics: createIngestMetrics(),
  settings: { maxMessageBytes: 1024 * 1024, bulkMaxBytes: 1 << 30, bulkMaxEvents: 500, retryInitialMs: 1, retryMaxMs: 1 },
  expiredEvents: 'keep' as const,
  now: () => Date.UTC(2026, 10, 26),
};

const message = (offset: number, value: string, extra: Partial<KafkaMessage> = {}): KafkaMessage =>
  ({
    offset: String(offset),
    timestamp: String(Date.UTC(2026, 10, 20, 12) + offset),
    value: Buffer.from(value),
    key: null,
    headers: {},
    attributes: 0,
    ...extra,
  }) as KafkaMessage;

/** Unusual producer objects: aliases, folded fields, keys, header ids, arrays, NDJSON, escapes, numbers, timestamps in other forms. */
const UNUSUAL: { value: string; extra?: Partial<KafkaMessage> }[] = [
  { value: '{"message":"m","@timestamp":"2026-11-20T10:00:00Z","level":"info","metadata":{"level":"x"}}' },
  { value: '{"msg":"m","time":1763632800123,"top_level_fields":1,"metadata":{"top_level_fields":{"a":1}}}' },
  { value: '{"log":"m","ts":"2026-11-20T10:00:00.5+02:00","id":42,"project":"p"}' },
  { value: '{"event_message":"m","timestamp":null,"message":"second","id":""}', extra: { headers: { id: Buffer.from('header-id') } } },
  { value: '[{"event_message":"a"},{"event_message":"b","metadata":[{"x":[1,2]},{"y":{"z":[]}}]}]', extra: { key: Buffer.from('k1') } },
  {
    value: '{"event_message":"a","n":1}\n{"event_message":"b","metadata":{"1":"one","a":"é\\u00e9\\/\\u0001","0":0}}\n',
    extra: { key: Buffer.from([0xff, 0x00]) },
  },
  { value: '{ "event_message" : "spaced", "metadata" : { "n" : 1.50, "e" : 1e3, "big" : 12345678901234567890, "neg" : -0 } }' },
  { value: '{"event_message":"dup","metadata":{"a":1,"a":2,"__proto__":{"p":1}}}' },
  { value: '{"event_message":"m","timestamp":"2026-11-20T10:00:59.999999Z","metadata":{"deep":{"er":{"est":[[{"x":1}],[]]}}}}' },
  { value: '{"event_message":"m","timestamp":"2026-11-20 10:00:00","kafka_key":"clash"}', extra: { key: Buffer.from('k2') } },
  { value: '{"event_message":"\\ud800 lone","timestamp":1763632800}' },
];

function corpus(): KafkaMessage[] {
  const messages: KafkaMessage[] = [];
  for (const demo of demoEvents({
    count: 3000,
    from: new Date('2026-11-20T00:00:00Z'),
    to: new Date('2026-11-21T00:00:00Z'),
    projects: ['default', 'other'],
    seed: 11,
  })) {
    messages.push(message(messages.length, JSON.stringify(demo.event)));
  }
  for (const file of readdirSync(samples).sort()) messages.push(message(messages.length, readFileSync(path.join(samples, file), 'utf8')));
  for (const { value, extra } of UNUSUAL) messages.push(message(messages.length, value, extra));
  return messages;
}

function digest(messages: KafkaMessage[]): { events: number; letters: number; sha256: string } {
  const hash = createHash('sha256');
  let events = 0;
  let letters = 0;
  for (let start = 0; start < messages.length; start += 500) {
    const decoded = decodeChunk(messages.slice(start, start + 500), 'edge_logs', 3, route, dependencies);
    for (const { entry } of decoded.events) hash.update(entry.lines);
    events += decoded.events.length;
    letters += decoded.letters.length;
  }
  return { events, letters, sha256: hash.digest('hex') };
}

describe('stored documents', () => {
  it('are byte for byte those of the guarded corpus', () => {
    expect(digest(corpus())).toEqual({ events: 3022, letters: 0, sha256: '17232c22740462155959ba2551426e6f4c97b0ee4ca52300d7777ce2d9aaa513' });
  });
});
