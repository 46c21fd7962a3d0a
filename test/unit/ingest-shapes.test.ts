import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.ts';
import type { StoredEvent } from '../../shared/event-index.ts';
import { decodeMessage, type DecodedEvent, type KafkaRecord } from '../../ingest/event.ts';
import { deterministicEventId } from '../../ingest/event-id.ts';
import { DEFAULT_EVENT_FIELD_NAMES, eventFieldNames } from '../../ingest/event-fields.ts';

const record = (value: string, extra: Partial<KafkaRecord> = {}): KafkaRecord => ({
  topic: 'auth_logs',
  partition: 0,
  offset: '11',
  timestamp: String(Date.UTC(2024, 0, 2)),
  value: Buffer.from(value),
  ...extra,
});

function stored(decoded: DecodedEvent | undefined): StoredEvent {
  if (!decoded?.ok) throw new Error(`expected an event, got ${JSON.stringify(decoded)}`);
  return decoded.event;
}

/** The producer's object rebuilt from a stored event, the way docs/producing.md tells readers to. */
function unfold(event: StoredEvent): Record<string, unknown> {
  const metadata = structuredClone(event.metadata) as Record<string, unknown> | Record<string, unknown>[] | undefined;
  const first = (Array.isArray(metadata) ? metadata[0] : metadata) ?? {};
  const take = (path: string) => {
    const [head, ...rest] = path.split('.');
    const container = rest.length === 0 ? first : (first[head!] as Record<string, unknown>);
    const name = rest.length === 0 ? head! : rest.join('.');
    const value = container[name];
    delete container[name];
    if (rest.length > 0 && Object.keys(container).length === 0) delete first[head!];
    return value;
  };
  const top: Record<string, unknown> = {};
  for (const path of event.folded_fields ?? []) top[path.split('.').pop()!] = take(path);
  const key = event.key_field === undefined ? undefined : take(event.key_field);
  return { top, key, metadata };
}

describe('common producer shapes', () => {
  it('reads the message and timestamp aliases in their order of precedence', () => {
    const cases: [object, string, string][] = [
      [{ message: 'from message', '@timestamp': '2024-05-01T10:00:00.5Z' }, 'from message', '2024-05-01T10:00:00.500000Z'],
      [{ msg: 'from msg', time: 1714557600 }, 'from msg', '2024-05-01T10:00:00.000000Z'],
      [{ log: 'from log', ts: 1714557600123 }, 'from log', '2024-05-01T10:00:00.123000Z'],
      [{ event_message: 'wins', message: 'folded', timestamp: '2024-05-01T10:00:00Z', time: 'folded too' }, 'wins', '2024-05-01T10:00:00.000000Z'],
    ];
    for (const [input, message, timestamp] of cases) {
      const event = stored(decodeMessage(record(JSON.stringify(input)), 1 << 20)[0]);
      expect(event.event_message).toBe(message);
      expect(event.timestamp).toBe(timestamp);
    }
    const both = stored(decodeMessage(record(JSON.stringify(cases[3]![0])), 1 << 20)[0]);
    expect(both.metadata).toEqual({ message: 'folded', time: 'folded too' });
    expect(both.folded_fields).toEqual(['message', 'time']);
  });

  it('takes an alias holding null as absent and names the field that is wrong', () => {
    expect(stored(decodeMessage(record('{"event_message":null,"msg":"second"}'), 1024)[0]).event_message).toBe('second');
    expect(decodeMessage(record('{"log":["a"]}'), 1024)[0]).toMatchObject({
      ok: false,
      reason: 'event_message_not_string',
      detail: expect.stringContaining('"log"'),
    });
    expect(decodeMessage(record('{"level":"info"}'), 1024)[0]).toMatchObject({
      ok: false,
      reason: 'missing_event_message',
      detail: expect.stringContaining('event_message, message, msg, log'),
    });
    expect(decodeMessage(record('{"message":"x","ts":"yesterday"}'), 1024)[0]).toMatchObject({
      ok: false,
      reason: 'invalid_timestamp',
      detail: expect.stringContaining('"ts"'),
    });
  });

  it('folds other top-level fields into metadata under their own names, clashes under top_level_fields, reversibly', () => {
    const input = { message: 'Request done', level: 'info', host: { name: 'web-1' }, '@version': '1', metadata: { level: 'debug', user: 'u1' } };
    const event = stored(decodeMessage(record(JSON.stringify(input)), 1 << 20)[0]);
    expect(event.metadata).toEqual({ level: 'debug', user: 'u1', host: { name: 'web-1' }, '@version': '1', top_level_fields: { level: 'info' } });
    expect(event.folded_fields).toEqual(['top_level_fields.level', 'host', '@version']);
    expect(unfold(event)).toEqual({
      top: { level: 'info', host: { name: 'web-1' }, '@version': '1' },
      key: undefined,
      metadata: { level: 'debug', user: 'u1' },
    });
  });

  it('folds into the first record of an array metadata, and steps around a producer field named top_level_fields', () => {
    const event = stored(
      decodeMessage(record(JSON.stringify({ msg: 'x', a: 1, top_level_fields: 2, metadata: [{ a: 0, top_level_fields: 'mine' }, { b: 1 }] })), 1024)[0],
    );
    expect(event.metadata).toEqual([{ a: 0, top_level_fields: 'mine', top_level_fields_2: { a: 1, top_level_fields: 2 } }, { b: 1 }]);
    expect(event.folded_fields).toEqual(['top_level_fields_2.a', 'top_level_fields_2.top_level_fields']);
    expect(unfold(event)).toEqual({ top: { a: 1, top_level_fields: 2 }, key: undefined, metadata: [{ a: 0, top_level_fields: 'mine' }, { b: 1 }] });
  });

  it('keeps a field named __proto__ as data', () => {
    const event = stored(decodeMessage(record('{"msg":"x","__proto__":{"polluted":true}}'), 1024)[0]);
    expect(Object.getOwnPropertyNames(event.metadata)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('keeps the Kafka key in metadata.kafka_key and takes the id header as the id of events without one', () => {
    const headers = { id: Buffer.from('retry-safe-1') };
    const one = stored(decodeMessage(record('{"msg":"x"}', { key: Buffer.from('user-42'), headers }), 1024)[0]);
    expect(one).toMatchObject({ id: 'retry-safe-1', metadata: { kafka_key: 'user-42' }, key_field: 'kafka_key' });
    expect(one.folded_fields).toBeUndefined();

    const binary = stored(decodeMessage(record('{"msg":"x","metadata":{"kafka_key":"theirs"}}', { key: Buffer.from([0xff, 0x00]) }), 1024)[0]);
    expect(binary.metadata).toEqual({ kafka_key: 'theirs', top_level_fields: { kafka_key: 'base64:/wA=' } });
    expect(unfold(binary).key).toBe('base64:/wA=');

    const several = decodeMessage(record('[{"msg":"a"},{"msg":"b","id":"own"}]', { headers }), 1024).map(stored);
    expect(several.map((event) => event.id)).toEqual(['retry-safe-1/0', 'own']);
    expect(decodeMessage(record('{"msg":"x"}', { headers: { id: [Buffer.from('a'), Buffer.from('b')] } }), 1024)[0]).toMatchObject({
      ok: false,
      reason: 'invalid_id',
    });
  });

  it('accepts NDJSON like an array, a bad line costing only itself', () => {
    const decoded = decodeMessage(record('{"msg":"one"}\n{"msg":"two"}\r\n\nnot json\n[1]\n'), 1024);
    expect(decoded).toHaveLength(4);
    expect(decoded.slice(0, 2).map((result) => stored(result).id)).toEqual([
      deterministicEventId('auth_logs', 0, '11', 0),
      deterministicEventId('auth_logs', 0, '11', 1),
    ]);
    expect(decoded[2]).toMatchObject({ ok: false, reason: 'invalid_json', element: 2, value: Buffer.from('not json') });
    expect(decoded[3]).toMatchObject({ ok: false, reason: 'not_an_object', element: 3 });
    // several lines that do not start with an object are one broken message, not many
    expect(decodeMessage(record('{"msg": \n "unterminated'), 1024)).toMatchObject([{ ok: false, reason: 'invalid_json' }]);
  });

  it('maps configured field names per source, ahead of the built-in aliases', () => {
    const config = loadConfig({ INGEST_FIELD_MAP: 'auth_logs:text=event_message, auth_logs:created=timestamp, *:uid=id, *:message=metadata' });
    expect(config.INGEST_FIELD_MAP).toEqual([
      { source: 'auth_logs', field: 'text', target: 'event_message' },
      { source: 'auth_logs', field: 'created', target: 'timestamp' },
      { source: '*', field: 'uid', target: 'id' },
      { source: '*', field: 'message', target: 'metadata' },
    ]);
    const names = eventFieldNames(config.INGEST_FIELD_MAP, 'auth_logs');
    expect(names.event_message).toEqual(['text', 'event_message', 'msg', 'log']);
    expect(eventFieldNames(config.INGEST_FIELD_MAP, 'edge_logs').timestamp).toEqual(DEFAULT_EVENT_FIELD_NAMES.timestamp);
    const event = stored(decodeMessage(record('{"text":"hi","created":"2024-03-04T05:06:07Z","uid":"u-1","message":{"k":"v"},"msg":"kept"}'), 1024, names)[0]);
    expect(event).toMatchObject({ id: 'u-1', event_message: 'hi', timestamp: '2024-03-04T05:06:07.000000Z', metadata: { k: 'v', msg: 'kept' } });
  });

  it.each([
    ['edge_logs:text', /not source:field=event_field/],
    ['nginx_logs:text=event_message', /unknown source "nginx_logs"/],
    ['edge_logs:text=severity', /"severity" .* is not an event field/],
  ])('refuses INGEST_FIELD_MAP=%s', (value, message) => {
    expect(() => loadConfig({ INGEST_FIELD_MAP: value })).toThrow(message);
  });
});
