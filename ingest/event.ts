import type { StoredEvent } from '../shared/event-index.ts';
import { deterministicEventId } from './event-id.ts';
import { formatMicros, parseTimestamp } from './timestamp.ts';

/** Why a message could not become an event; the dead-letter topic carries it in a header. */
export type PoisonReason =
  | 'empty_message'
  | 'too_large'
  | 'invalid_json'
  | 'not_an_object'
  | 'missing_event_message'
  | 'event_message_not_string'
  | 'invalid_timestamp'
  | 'invalid_id'
  | 'invalid_project'
  | 'invalid_metadata'
  | 'unexpected_field';

export interface KafkaRecord {
  topic: string;
  partition: number;
  offset: string;
  /** Kafka's own timestamp (ms since the epoch, as kafkajs gives it), used when the event has none. */
  timestamp: string;
  value: Buffer | null;
}

export type DecodedEvent =
  | { ok: true; event: StoredEvent }
  | { ok: false; reason: PoisonReason; detail: string; value: Buffer; element?: number };

const EVENT_FIELDS = new Set(['id', 'timestamp', 'event_message', 'project', 'metadata']);
/** Elasticsearch refuses `_id`s longer than 512 bytes. */
const MAX_ID_BYTES = 512;

/**
 * Turns one Kafka message into the events it carries (one object, or a JSON array of them), each
 * either ready to store or poison with a reason. Pure: the caller decides where each one goes.
 */
export function decodeMessage(record: KafkaRecord, maxMessageBytes: number): DecodedEvent[] {
  const value = record.value;
  if (value === null || value.length === 0) {
    return [{ ok: false, reason: 'empty_message', detail: 'the message has no value', value: value ?? Buffer.alloc(0) }];
  }
  if (value.length > maxMessageBytes) {
    return [{ ok: false, reason: 'too_large', detail: `the message is ${value.length} bytes, the limit is ${maxMessageBytes} (INGEST_MAX_MESSAGE_BYTES)`, value }];
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString('utf8'));
  } catch (error) {
    return [{ ok: false, reason: 'invalid_json', detail: `the message is not JSON: ${(error as Error).message}`, value }];
  }
  if (Array.isArray(parsed)) {
    return parsed.map((element, index) => {
      const decoded = normaliseEvent(element, record, index);
      return decoded.ok ? decoded : { ...decoded, value: Buffer.from(JSON.stringify(element) ?? 'null'), element: index };
    });
  }
  const decoded = normaliseEvent(parsed, record);
  return [decoded.ok ? decoded : { ...decoded, value }];
}

type Normalised = { ok: true; event: StoredEvent } | { ok: false; reason: PoisonReason; detail: string };

export function normaliseEvent(input: unknown, record: Omit<KafkaRecord, 'value'>, element?: number): Normalised {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    return { ok: false, reason: 'not_an_object', detail: `an event must be a JSON object, got ${input === null ? 'null' : Array.isArray(input) ? 'an array' : typeof input}` };
  }
  const fields = input as Record<string, unknown>;
  const unexpected = Object.keys(fields).filter((key) => !EVENT_FIELDS.has(key));
  if (unexpected.length > 0) {
    return { ok: false, reason: 'unexpected_field', detail: `unexpected top-level field(s) ${unexpected.map((key) => `"${key}"`).join(', ')}; put them under metadata` };
  }
  if (fields.event_message === undefined || fields.event_message === null) {
    return { ok: false, reason: 'missing_event_message', detail: 'the event has no event_message' };
  }
  if (typeof fields.event_message !== 'string') {
    return { ok: false, reason: 'event_message_not_string', detail: `event_message must be a string, got ${typeof fields.event_message}` };
  }
  const timestamp = fields.timestamp === undefined || fields.timestamp === null ? parseTimestamp(Number(record.timestamp)) : parseTimestamp(fields.timestamp);
  if (!timestamp.ok) return { ok: false, reason: 'invalid_timestamp', detail: timestamp.reason };

  let id: string;
  if (fields.id === undefined || fields.id === null || fields.id === '') {
    id = deterministicEventId(record.topic, record.partition, record.offset, element);
  } else if (typeof fields.id === 'string' || (typeof fields.id === 'number' && Number.isFinite(fields.id))) {
    id = String(fields.id);
    if (Buffer.byteLength(id) > MAX_ID_BYTES) return { ok: false, reason: 'invalid_id', detail: `id is longer than ${MAX_ID_BYTES} bytes` };
  } else {
    return { ok: false, reason: 'invalid_id', detail: `id must be a string, got ${typeof fields.id}` };
  }

  if (fields.project !== undefined && fields.project !== null && typeof fields.project !== 'string') {
    return { ok: false, reason: 'invalid_project', detail: `project must be a string, got ${typeof fields.project}` };
  }
  const metadata = fields.metadata;
  if (metadata !== undefined && metadata !== null && !isRecord(metadata) && !(Array.isArray(metadata) && metadata.every(isRecord))) {
    return { ok: false, reason: 'invalid_metadata', detail: 'metadata must be an object or an array of objects' };
  }

  const event: StoredEvent = { id, timestamp: formatMicros(timestamp.micros), event_message: fields.event_message };
  if (typeof fields.project === 'string') event.project = fields.project;
  if (metadata !== undefined && metadata !== null) event.metadata = metadata as StoredEvent['metadata'];
  return { ok: true, event };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
