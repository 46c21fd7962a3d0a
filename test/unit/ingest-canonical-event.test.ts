import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { KafkaMessage } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { decodeChunk } from '../../ingest/batch.ts';
import { bulkEntry, canonicalBulkEntry } from '../../ingest/bulk.ts';
import { canonicalEvent, decodeMessage, type KafkaRecord } from '../../ingest/event.ts';
import { DEFAULT_EVENT_FIELD_NAMES, eventFieldNames, type EventFieldNames } from '../../ingest/event-fields.ts';
import { eventPartitioning } from '../../ingest/event-partition.ts';
import { createIngestMetrics } from '../../ingest/metrics.ts';
import { demoEvents, seeded } from '../../scripts/demo-events.ts';

/**
 * The fast path (a message in canonical form copied into its stored document, ingest/canonical-event.ts)
 * must give byte for byte the bulk lines the usual decoding gives, or decline the message.
 */
const samples = path.resolve(import.meta.dirname, '../fixtures/logflare-samples');
const MAX_BYTES = 1024 * 1024;

function record(value: Buffer | string, extra: Partial<KafkaRecord> = {}): KafkaRecord {
  return {
    topic: 'edge_logs',
    partition: 2,
    offset: '41',
    timestamp: String(Date.UTC(2026, 10, 20, 12)),
    value: typeof value === 'string' ? Buffer.from(value) : value,
    key: null,
    headers: {},
    ...extra,
  };
}

/** The bulk lines of both paths: `fast` undefined when the fast path declined, `slow` undefined when the message is not one stored event. */
function bothPaths(input: KafkaRecord, names: EventFieldNames = DEFAULT_EVENT_FIELD_NAMES): { fast?: string; slow?: string } {
  const decoded = decodeMessage(input, MAX_BYTES, names);
  const only = decoded.length === 1 ? decoded[0]! : undefined;
  const slow = only?.ok ? bulkEntry('logs-edge', only.event).lines.toString('latin1') : undefined;
  const canonical = canonicalEvent(input, MAX_BYTES, names);
  const fast = canonical === undefined ? undefined : canonicalBulkEntry('logs-edge', canonical).lines.toString('latin1');
  return { fast, slow };
}

/** The fast path's lines are the slow path's, or it declined; returns whether it took the message. */
function expectSameOrDeclined(input: KafkaRecord, names?: EventFieldNames): boolean {
  const { fast, slow } = bothPaths(input, names);
  if (fast !== undefined) expect({ input: input.value!.toString('latin1'), lines: fast }).toEqual({ input: input.value!.toString('latin1'), lines: slow });
  return fast !== undefined;
}

const canonical = (event: unknown) => JSON.stringify(event);
const withMetadata = (metadata: string) => `{"event_message":"m","timestamp":"2026-11-20T10:00:00.000001Z","metadata":${metadata}}`;
const withMessage = (message: string) => `{"event_message":${message},"project":"p"}`;

/** Written by JSON.stringify: the fast path takes each, with the slow path's lines. */
const CANONICAL: string[] = [
  canonical({ event_message: 'tab\there "quoted" back\\slash \u0001 \u001f \b\f\n\r', metadata: { a: '\u007f' } }),
  canonical({ event_message: 'é ü 中文 😀 \u2028 \u2029 \ufffe', project: 'projé' }),
  canonical({
    event_message: 'numbers',
    metadata: { n: [0, -1, 0.1, 1.5, 1e21, 1e-7, -1e-7, 5e-324, 1.7976931348623157e308, 123456789012345, 2 ** 53, 12345678901234567000, 1e300] },
  }),
  canonical({ event_message: 'literals', metadata: { t: true, f: false, z: null, s: '' } }),
  canonical({
    event_message: 'arrays',
    metadata: { e: [], ee: [[]], ne: [[], [1]], o: { b: [] }, m: [{ b: [1, 2] }, { b: [3], c: { d: 1 } }], x: [[[{ y: 1 }]]] },
  }),
  canonical({ event_message: 'records', metadata: [{ a: 1 }, { b: [1, 2], c: { d: [{ e: 1 }, { e: 2 }] } }] }),
  canonical({ event_message: 'one record', metadata: [{ a: { b: 1 } }] }),
  canonical({ event_message: 'no records', metadata: [] }),
  canonical({ event_message: 'empty', metadata: {} }),
  canonical({ event_message: 'keys', metadata: { '': 1, 'a.b': { c: 1 }, é: 2, 'x-1': [1, 2], 'key "q"': 3, 'tab\t': 4 } }),
  canonical({ metadata: { a: 1 }, project: 'p', event_message: 'reordered', timestamp: '2026-11-20T10:00:00.123456Z', id: 'my-id' }),
  canonical({ event_message: 'ms', timestamp: 1763632800123 }),
  canonical({ event_message: 's', timestamp: 1763632800 }),
  canonical({ event_message: 'iso', timestamp: '2026-11-20T10:00:00+02:00' }),
  canonical({ event_message: 'iso', timestamp: '2026-11-20 10:00:00.5' }),
  canonical({ event_message: 'µs text', timestamp: '1763632800123456' }),
  canonical({ event_message: 'no timestamp' }),
  canonical({ event_message: '' }),
  // keys telling apart: same length, first and last byte; a near `__proto__`; a path written two ways
  canonical({ event_message: 'fingerprints', metadata: { abc: 1, axc: { abc: 2, aYc: [1, 2] }, _________: 3, __proto_x: 4, 'a"c': 5, 'a\\c': 6 } }),
  canonical({ event_message: 'one path two ways', metadata: { a: { b: {} }, 'a.b': {}, c: { d: [1, 2] }, 'c.d': [3, 4] } }),
  // strings with escapes or non-ASCII bytes before and after plain ones, in keys and values
  canonical({ event_message: 'é\n', project: 'p"q', metadata: { 'k\\': 'plain', plain: 'v\u0001', 'é😀': 'ü', x: { y: 'é' }, last: '\\' } }),
  // an id at the edges of plain ASCII (the scanner declines escaped and non-ASCII ids)
  canonical({ event_message: 'id edges', id: ' ~\u007f!' }),
  canonical({ event_message: 'larger than a slab', metadata: { text: 'x'.repeat(300_000), more: ['é'.repeat(50_000)] } }),
];

/** Not what JSON.stringify would write for what JSON.parse reads: the fast path must decline each. */
const NOT_CANONICAL: string[] = [
  '{"event_message": "spaced"}',
  '{ "event_message":"spaced"}',
  '{"event_message":"trailing"}\n',
  ' {"event_message":"leading"}',
  withMetadata('{"a": 1}'),
  withMetadata('{"a":1 }'),
  withMetadata('[{"a":1}, {"b":2}]'),
  withMessage('"\\/"'),
  withMessage('"\\u0041"'),
  withMessage('"\\u001F"'),
  withMessage('"\\u000a"'),
  withMessage('"\\u0009"'),
  withMessage('"\\ud83d\\ude00"'),
  withMetadata('{"n":1.0}'),
  withMetadata('{"n":1e21}'),
  withMetadata('{"n":1E+21}'),
  withMetadata('{"n":-0}'),
  withMetadata('{"n":0.10}'),
  withMetadata('{"n":1e2}'),
  withMetadata('{"n":0.0000001}'),
  withMetadata('{"n":100000000000000000000000}'),
  withMetadata('{"n":12345678901234567890}'),
  withMetadata('{"n":9007199254740993}'),
  withMetadata('{"n":1e400}'),
  withMetadata('{"n":-1e400}'),
  withMetadata('{"a":1,"a":2}'),
  withMetadata('{"a":{"b":1,"c":2,"b":3}}'),
  '{"event_message":"a","event_message":"b"}',
  withMetadata('{"__proto__":{"x":1}}'),
  withMetadata('{"b":1,"1":2}'),
  withMetadata('{"b":1,"0":2}'),
  withMetadata(`{"deep":${'['.repeat(100)}${']'.repeat(100)}}`),
  // a non-canonical escape after strings with canonical ones, and a repeated key only told apart in full
  withMetadata('{"a":"\\n","b":"\\"","c":"\\/"}'),
  withMetadata('{"a\\"":"x","b":"\\u0041"}'),
  withMetadata('{"a\\"":1,"a\\"":2}'),
  withMetadata('{"abc":1,"axc":2,"abc":3}'),
  withMetadata('{"x":{"__proto__":1}}'),
  // a control byte, raw: in a value, in a key, after the last quote, before the first
  '{"event_message":"a\u0001b"}',
  withMetadata('{"a\tb":1}'),
  '{"event_message":"m"}\u001f',
  '\n{"event_message":"m"}',
  withMetadata('{"a":"x","b":"y\u0000"}'),
];

/** Invalid UTF-8 inside a string: the slow path stores U+FFFD, so the bytes cannot be copied. */
const INVALID_BYTES = [
  [0xff],
  [0xc0, 0x80],
  [0xc3],
  [0xe2, 0x82],
  [0xed, 0xa0, 0x80],
  [0xf5, 0x80, 0x80, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0x80],
  [0xf0, 0x9f, 0x98],
];
/** Each invalid sequence in event_message, in a key, in a value after valid non-ASCII and escapes, and alone at the end of a string. */
const INVALID_UTF8: Buffer[] = INVALID_BYTES.flatMap((bytes) =>
  [
    ['{"event_message":"a', 'b","metadata":{"c":1}}'],
    ['{"event_message":"a","metadata":{"k', '":1}}'],
    ['{"event_message":"é\\n😀","metadata":{"é":"\\"","c":"x', '"}}'],
    ['{"event_message":"m","project":"', '"}'],
  ].map(([before, after]) => Buffer.concat([Buffer.from(before!), Buffer.from(bytes), Buffer.from(after!)])),
);

/** Canonical, but outside what the fast path handles: folding, aliases, keys, header ids, several events, poison. */
const ELSEWHERE: { value: string; extra?: Partial<KafkaRecord> }[] = [
  { value: '{"event_message":"m","level":"info"}' },
  { value: '{"message":"m"}' },
  { value: '{"event_message":"m","msg":"other"}' },
  { value: '{"event_message":"m","metadata":null}' },
  { value: '{"event_message":"m","timestamp":null}' },
  { value: '{"event_message":"m"}', extra: { key: Buffer.from('k') } },
  { value: '{"event_message":"m"}', extra: { key: Buffer.alloc(0) } },
  { value: '{"event_message":"m"}', extra: { headers: { id: Buffer.from('header-id') } } },
  { value: '{"event_message":"m","id":42}' },
  { value: '{"event_message":"m","id":""}' },
  { value: `{"event_message":"m","id":"${'i'.repeat(513)}"}` },
  { value: '[{"event_message":"a"},{"event_message":"b"}]' },
  { value: '{"event_message":"a"}\n{"event_message":"b"}' },
  { value: '{"event_message":1}' },
  { value: '{"metadata":{}}' },
  { value: '{}' },
  { value: '{"event_message":"m","project":1}' },
  { value: '{"event_message":"m","metadata":[1]}' },
  { value: '{"event_message":"m","metadata":[{"a":1},null]}' },
  { value: '{"event_message":"m","metadata":"text"}' },
  { value: '{"event_message":"m","timestamp":"yesterday"}' },
  { value: '{"event_message":"m","timestamp":"1969-12-31T23:59:59.000000Z"}' },
  { value: '{"event_message":"m","timestamp":1e30}' },
  { value: '{"event_message":"m","timestamp":true}' },
  { value: '\ufeff{"event_message":"bom"}' },
];

function demoValues(count: number): string[] {
  const values: string[] = [];
  for (const demo of demoEvents({
    count,
    from: new Date('2026-11-20T00:00:00Z'),
    to: new Date('2026-11-21T00:00:00Z'),
    projects: ['default', 'other'],
    seed: 5,
  }))
    values.push(JSON.stringify(demo.event));
  return values;
}

/** Bytes that matter to the scanner: structure, escapes, digits, whitespace, UTF-8 leads and continuations. */
const MUTATION_BYTES = Buffer.from(
  '{}[]",:\\/ \t\n0123456789-+.eEtrufalsn_u'
    .split('')
    .map((char) => char.charCodeAt(0))
    .concat([0x00, 0x1f, 0x7f, 0x80, 0xbf, 0xc3, 0xed, 0xf0, 0xff]),
);

describe('the canonical fast path', () => {
  it('takes every demo event, with the lines of the usual decoding', () => {
    const values = demoValues(3000);
    const taken = values.filter((value, offset) => expectSameOrDeclined(record(value, { offset: String(offset) })));
    expect(taken.length).toBe(values.length);
  });

  it('takes the Logflare samples once written compactly, and declines them as written (indented)', () => {
    for (const file of readdirSync(samples).sort()) {
      const text = readFileSync(path.join(samples, file), 'utf8');
      expect({ file, taken: expectSameOrDeclined(record(text)) }).toEqual({ file, taken: false });
      expect({ file, taken: expectSameOrDeclined(record(JSON.stringify(JSON.parse(text)))) }).toEqual({ file, taken: true });
    }
  });

  it('takes what JSON.stringify writes (escapes, unicode, numbers, arrays, shapes, timestamps), with the same lines', () => {
    for (const value of CANONICAL) expect({ value, taken: expectSameOrDeclined(record(value)) }).toEqual({ value, taken: true });
  });

  it('keeps shapes apart past the number of paths it remembers', () => {
    const keys = Array.from({ length: 80 }, (_, index) => `k${index}`);
    const wide = canonical({
      event_message: 'wide',
      metadata: Object.fromEntries(keys.map((key) => [key, Object.fromEntries(keys.map((inner) => [inner, {}]))])),
    });
    for (const value of [wide, ...CANONICAL, wide, ...demoValues(50), wide, ...CANONICAL])
      expect({ value: value.slice(0, 80), taken: expectSameOrDeclined(record(value)) }).toEqual({ value: value.slice(0, 80), taken: true });
  });

  it('writes any id as JSON, as the usual decoding does: escaped, in UTF-8, or byte for byte', () => {
    const input = record('{"event_message":"m","timestamp":"2026-11-20T10:00:00.000001Z","id":"plain","metadata":{"a":1}}');
    const scanned = canonicalEvent(input, MAX_BYTES, DEFAULT_EVENT_FIELD_NAMES)!;
    const [decoded] = decodeMessage(input, MAX_BYTES, DEFAULT_EVENT_FIELD_NAMES);
    if (!decoded?.ok) throw new Error('the usual decoding refused the message');
    // the scanner takes only plain ids; ids from other producers reach the same writer through other paths in the future
    for (const id of ['plain', 'q"uote\\back', 'tab\there\u0001', 'é-中-😀', ' ~\u007f!', '\ud800 lone', '']) {
      const fast = canonicalBulkEntry('logs-edge', { ...scanned, id }).lines.toString('utf8');
      const slow = bulkEntry('logs-edge', { ...decoded.event, id }).lines.toString('utf8');
      expect({ id, lines: fast }).toEqual({ id, lines: slow });
    }
  });

  it('declines every message not in canonical form', () => {
    for (const value of NOT_CANONICAL) {
      expect({ value, taken: expectSameOrDeclined(record(value)) }).toEqual({ value, taken: false });
      expect(canonicalEvent(record(value), MAX_BYTES, DEFAULT_EVENT_FIELD_NAMES)).toBeUndefined();
    }
    for (const value of INVALID_UTF8)
      expect({ value: value.toString('hex'), taken: expectSameOrDeclined(record(value)) }).toEqual({ value: value.toString('hex'), taken: false });
  });

  it('leaves folding, aliases, keys, header ids, several events and poison to the usual decoding', () => {
    for (const { value, extra } of ELSEWHERE) expect({ value, taken: expectSameOrDeclined(record(value, extra)) }).toEqual({ value, taken: false });
    expect(canonicalEvent(record('{"event_message":"m"}'), 10, DEFAULT_EVENT_FIELD_NAMES)).toBeUndefined();
  });

  it('declines when a source maps an event field name to another field, and not when it only adds names', () => {
    const value = '{"event_message":"m","project":"p","metadata":{"a":1}}';
    const moved = eventFieldNames([{ source: '*', field: 'project', target: 'metadata' }], 'edge_logs');
    expect(expectSameOrDeclined(record(value), moved)).toBe(false);
    const added = eventFieldNames([{ source: '*', field: 'body', target: 'event_message' }], 'edge_logs');
    expect(expectSameOrDeclined(record(value), added)).toBe(true);
  });

  it('dead-letters an event past retention as the usual decoding does, whichever path decoded it, and counts the canonical message', async () => {
    const route = {
      source: 'edge_logs',
      partitioning: eventPartitioning('t-', 'edge_logs', 'daily', 7),
      deadLetterTopic: 'edge_logs.dead',
      fieldNames: DEFAULT_EVENT_FIELD_NAMES,
    };
    const dependencies = {
      metrics: createIngestMetrics(),
      settings: { maxMessageBytes: MAX_BYTES, bulkMaxBytes: 1 << 30, bulkMaxEvents: 500, retryInitialMs: 1, retryMaxMs: 1 },
      expiredEvents: 'dead_letter' as const,
      now: () => Date.UTC(2026, 10, 27),
    };
    const values = ['{"event_message":"old","timestamp":"2026-11-01T00:00:00.000000Z"}', '{"event_message": "old","timestamp":"2026-11-01T00:00:00.000000Z"}'];
    expect(canonicalEvent(record(values[0]!), MAX_BYTES, DEFAULT_EVENT_FIELD_NAMES)).toBeDefined();
    expect(canonicalEvent(record(values[1]!), MAX_BYTES, DEFAULT_EVENT_FIELD_NAMES)).toBeUndefined();
    const messages = values.map(
      (value, offset) => ({ offset: String(offset), timestamp: '0', value: Buffer.from(value), key: null, headers: {}, attributes: 0 }) as KafkaMessage,
    );
    const decoded = decodeChunk(messages, 'edge_logs', 0, route, dependencies);
    expect(await dependencies.metrics.registry.metrics()).toMatch(/\ningest_messages_canonical_total\{source="edge_logs"\} 1\n/);
    expect(decoded.events).toEqual([]);
    expect(decoded.letters.map(({ reason, detail, value, source }) => ({ reason, detail, value: value.toString(), source }))).toEqual(
      values.map((value, offset) => ({
        reason: 'expired',
        detail: 'timestamp 2026-11-01T00:00:00.000000Z is older than the retention of edge_logs',
        value,
        source: { topic: 'edge_logs', partition: 0, offset: String(offset) },
      })),
    );
  });

  it('gives the slow path lines or declines for every mutation of canonical messages', () => {
    const random = seeded(21);
    const bases = [...demoValues(40), ...CANONICAL];
    let taken = 0;
    for (let round = 0; round < 20_000; round += 1) {
      const base = Buffer.from(bases[Math.floor(random() * bases.length)]!);
      const at = Math.floor(random() * base.length);
      const byte = MUTATION_BYTES[Math.floor(random() * MUTATION_BYTES.length)]!;
      const roll = random();
      const mutated =
        roll < 0.4
          ? Buffer.concat([base.subarray(0, at), Buffer.from([byte]), base.subarray(at + 1)])
          : roll < 0.7
            ? Buffer.concat([base.subarray(0, at), Buffer.from([byte]), base.subarray(at)])
            : Buffer.concat([base.subarray(0, at), base.subarray(at + 1)]);
      if (expectSameOrDeclined(record(mutated))) taken += 1;
    }
    // many mutations keep the message canonical (a changed letter or digit): the comparison is not empty
    expect(taken).toBeGreaterThan(1000);
  });
});
