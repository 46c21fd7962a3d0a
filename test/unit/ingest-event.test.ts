import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeMessage } from '../../ingest/event.ts';
import { deterministicEventId } from '../../ingest/event-id.ts';

const record = (value: string | null, offset = '7') => ({
  topic: 'edge_logs',
  partition: 1,
  offset,
  timestamp: String(Date.UTC(2024, 0, 2, 3, 4, 5, 678)),
  value: value === null ? null : Buffer.from(value),
});

describe('decoding a message into events', () => {
  it('fills a missing id from the Kafka position and a missing timestamp from the message', () => {
    const [decoded] = decodeMessage(record('{"event_message":"hello","project":"default","metadata":{"a":[1,{"b":2}]}}'), 1024);
    expect(decoded).toEqual({
      ok: true,
      event: {
        id: deterministicEventId('edge_logs', 1, '7'),
        timestamp: '2024-01-02T03:04:05.678000Z',
        event_message: 'hello',
        project: 'default',
        metadata: { a: [1, { b: 2 }] },
        shape: { version: 1, arrays: ['metadata', 'metadata.a'], multi: ['metadata.a'] },
      },
    });
  });

  it('derives the same id for the same position and a different one elsewhere', () => {
    const id = deterministicEventId('edge_logs', 1, '7');
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(deterministicEventId('edge_logs', 1, '7')).toBe(id);
    expect(deterministicEventId('edge_logs', 1, '8')).not.toBe(id);
    expect(deterministicEventId('edge_logs', 1, '7', 0)).not.toBe(id);
  });

  it('keeps the ids it gave before: stored events written again must overwrite themselves', () => {
    // the ids of the worker as it was through 2026-11-27 (the hex digest's slices joined)
    expect(deterministicEventId('edge_logs', 1, '7')).toBe('b11f910a-78fe-5a84-a45b-92e13da2e4f9');
    expect(deterministicEventId('logs.postgres_logs', 2, '123456789012', 3)).toBe('6a50deb0-58df-5fde-a714-540c9c706e81');
    const fromHex = (position: string) => {
      const hex = createHash('sha256').update(position).digest('hex');
      const variant = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
    };
    for (let offset = 0; offset < 2000; offset += 1) {
      expect(deterministicEventId(`topic-${offset % 7}`, offset % 5, String(offset * 7919))).toBe(
        fromHex(`topic-${offset % 7}/${offset % 5}/${offset * 7919}`),
      );
    }
  });

  it('keeps a given id and splits an array message into its events', () => {
    const decoded = decodeMessage(record('[{"id":"a","event_message":"one","timestamp":1700000000},{"event_message":"two"},3]'), 1024);
    expect(decoded).toHaveLength(3);
    expect(decoded[0]).toMatchObject({ ok: true, event: { id: 'a', timestamp: '2023-11-14T22:13:20.000000Z' } });
    expect(decoded[1]).toMatchObject({ ok: true, event: { id: deterministicEventId('edge_logs', 1, '7', 1) } });
    expect(decoded[2]).toMatchObject({ ok: false, reason: 'not_an_object', element: 2, value: Buffer.from('3') });
  });

  it.each([
    [null, 'empty_message'],
    ['{"event_message": "x"', 'invalid_json'],
    ['"just a string"', 'not_an_object'],
    ['{"metadata":{}}', 'missing_event_message'],
    ['{"event_message":42}', 'event_message_not_string'],
    ['{"event_message":"x","timestamp":"last tuesday"}', 'invalid_timestamp'],
    ['{"event_message":"x","id":{"a":1}}', 'invalid_id'],
    ['{"event_message":"x","project":7}', 'invalid_project'],
    ['{"event_message":"x","metadata":"flat"}', 'invalid_metadata'],
    ['{"msg":{"text":"x"}}', 'event_message_not_string'],
    ['{"message":"x","@timestamp":"soon"}', 'invalid_timestamp'],
    [`{"event_message":"${'x'.repeat(2000)}"}`, 'too_large'],
  ])('sends %s to the dead-letter topic as %s, with the original bytes', (value, reason) => {
    const [decoded] = decodeMessage(record(value), 1024);
    expect(decoded).toMatchObject({ ok: false, reason });
    if (decoded?.ok === false) {
      expect(decoded.detail.length).toBeGreaterThan(5);
      expect(decoded.value.toString()).toBe(value ?? '');
    }
  });
});
