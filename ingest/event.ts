import type { IHeaders } from 'kafkajs';
import type { MappableEventField } from '../shared/config.ts';
import type { StoredEvent } from '../shared/event-index.ts';
import { eventShape } from '../shared/event-shape.ts';
import { scanCanonicalEvent, type ScannedEvent } from './canonical-event.ts';
import { deterministicEventId, MAX_ID_BYTES } from './event-id.ts';
import { eventTimestamp } from '../shared/event-timestamp.ts';
import { DEFAULT_EVENT_FIELD_NAMES, type EventFieldNames } from './event-fields.ts';
import { formatMicros, isStoredForm, parseTimestamp } from '../shared/stored-timestamp.ts';

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
  | 'invalid_metadata';

export interface KafkaRecord {
  topic: string;
  partition: number;
  offset: string;
  /** Kafka's own timestamp (ms since the epoch, as kafkajs gives it), used when the event has none. */
  timestamp: string;
  value: Buffer | null;
  key?: Buffer | null;
  headers?: IHeaders;
}

export type DecodedEvent = { ok: true; event: StoredEvent } | { ok: false; reason: PoisonReason; detail: string; value: Buffer; element?: number };

/** The Kafka header whose value becomes the id of the message's events (when they carry none). */
export const ID_HEADER = 'id';
/** The name the Kafka message key is kept under in metadata. */
export const KEY_FIELD = 'kafka_key';
/** Where a folded field goes when metadata already has its name. */
export const CLASH_CONTAINER = 'top_level_fields';

/**
 * Turns one Kafka message into the events it carries (one object, a JSON array of them, or NDJSON:
 * one object per line), each either ready to store or poison with a reason. Pure: the caller
 * decides where each one goes.
 */
export function decodeMessage(record: KafkaRecord, maxMessageBytes: number, fieldNames: EventFieldNames = DEFAULT_EVENT_FIELD_NAMES): DecodedEvent[] {
  const value = record.value;
  if (value === null || value.length === 0) {
    return [{ ok: false, reason: 'empty_message', detail: 'the message has no value', value: value ?? Buffer.alloc(0) }];
  }
  if (value.length > maxMessageBytes) {
    return [
      { ok: false, reason: 'too_large', detail: `the message is ${value.length} bytes, the limit is ${maxMessageBytes} (INGEST_MAX_MESSAGE_BYTES)`, value },
    ];
  }
  const idHeader = headerText(record.headers, ID_HEADER);
  const context: EventContext = { record, fieldNames, idHeader, key: record.key ?? null };
  const text = value.toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    const lines = ndjsonLines(text);
    if (lines === undefined) return [{ ok: false, reason: 'invalid_json', detail: `the message is not JSON: ${(error as Error).message}`, value }];
    return lines.map((line, index) => {
      let element: unknown;
      try {
        element = JSON.parse(line);
      } catch (lineError) {
        return {
          ok: false,
          reason: 'invalid_json',
          detail: `line ${index + 1} of the NDJSON message is not JSON: ${(lineError as Error).message}`,
          value: Buffer.from(line),
          element: index,
        };
      }
      return withElement(normaliseEvent(element, context, index), element, index);
    });
  }
  if (Array.isArray(parsed)) {
    return parsed.map((element, index) => withElement(normaliseEvent(element, context, index), element, index));
  }
  const decoded = normaliseEvent(parsed, context, undefined);
  return [decoded.ok ? decoded : { ...decoded, value }];
}

/** A message in canonical form (ingest/canonical-event.ts) with its id and stored timestamp worked out: its document is copied from its bytes. */
export interface CanonicalEvent {
  id: string;
  timestamp: string;
  value: Buffer;
  scanned: ScannedEvent;
}

/**
 * The event of a message whose stored document can be written from its own bytes: one object in
 * canonical form, only event fields under their own names, no key, no id header, a valid
 * timestamp. Undefined for anything else, which decodeMessage then decodes, as it would anyway.
 */
export function canonicalEvent(record: KafkaRecord, maxMessageBytes: number, fieldNames: EventFieldNames): CanonicalEvent | undefined {
  const value = record.value;
  if (value === null || value.length > maxMessageBytes || (record.key ?? null) !== null || record.headers?.[ID_HEADER] !== undefined) return undefined;
  const scanned = scanCanonicalEvent(value, fieldNames);
  if (scanned === undefined) return undefined;
  const timestamp = storedTimestampOf(scanned.timestamp, record.timestamp);
  if (!timestamp.ok) return undefined;
  const id = scanned.id ?? deterministicEventId(record.topic, record.partition, record.offset, undefined);
  return { id, timestamp: timestamp.stored, value, scanned };
}

/** The lines of an NDJSON message, when it has several and the first is a JSON object; else undefined. */
function ndjsonLines(text: string): string[] | undefined {
  const lines = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  if (lines.length < 2) return undefined;
  try {
    const first: unknown = JSON.parse(lines[0]!);
    return isRecord(first) ? lines : undefined;
  } catch {
    return undefined;
  }
}

/** A failed element of a several-event message carries its own JSON and position, not the whole message. */
function withElement(decoded: Normalised, element: unknown, index: number): DecodedEvent {
  if (decoded.ok) return decoded;
  return { ...decoded, value: Buffer.from(JSON.stringify(element) ?? 'null'), element: index };
}

interface EventContext {
  record: Omit<KafkaRecord, 'value'>;
  fieldNames: EventFieldNames;
  idHeader: string | string[] | undefined;
  key: Buffer | null;
}

type Normalised = { ok: true; event: StoredEvent } | { ok: false; reason: PoisonReason; detail: string };

const EVENT_FIELD_ORDER: readonly MappableEventField[] = ['event_message', 'timestamp', 'id', 'project', 'metadata'];

/**
 * One producer object to the stored event: each event field is read from the first of its names
 * present (and not null), every other top-level field is folded into metadata (foldIntoMetadata),
 * the message key is kept in metadata, and `shape` is computed from the result.
 */
export function normaliseEvent(input: unknown, context: EventContext, element: number | undefined): Normalised {
  if (!isRecord(input)) {
    return {
      ok: false,
      reason: 'not_an_object',
      detail: `an event must be a JSON object, got ${input === null ? 'null' : Array.isArray(input) ? 'an array' : typeof input}`,
    };
  }
  const claimed = new Set<string>();
  const chosen = {} as Record<MappableEventField, { name: string; value: unknown } | undefined>;
  for (const field of EVENT_FIELD_ORDER) {
    // the first name present, not null and not another field's; an alias holding null counts as absent, and is not folded
    let pick: { name: string; value: unknown } | undefined;
    for (const candidate of context.fieldNames[field]) {
      if (!Object.hasOwn(input, candidate)) continue;
      const value = input[candidate];
      if (value === null) claimed.add(candidate);
      else if (pick === undefined && !claimed.has(candidate)) {
        pick = { name: candidate, value };
        claimed.add(candidate);
      }
    }
    chosen[field] = pick;
  }

  const message = chosen.event_message;
  if (message === undefined) {
    return { ok: false, reason: 'missing_event_message', detail: `the event has none of the message fields ${context.fieldNames.event_message.join(', ')}` };
  }
  if (typeof message.value !== 'string') {
    return { ok: false, reason: 'event_message_not_string', detail: `the message field "${message.name}" must be a string, got ${describe(message.value)}` };
  }
  const timestamp = storedTimestampOf(chosen.timestamp?.value, context.record.timestamp);
  if (!timestamp.ok)
    return { ok: false, reason: 'invalid_timestamp', detail: chosen.timestamp ? `"${chosen.timestamp.name}": ${timestamp.reason}` : timestamp.reason };

  const id = eventId(chosen.id, context, element);
  if (!id.ok) return id;

  const project = chosen.project;
  if (project !== undefined && typeof project.value !== 'string') {
    return { ok: false, reason: 'invalid_project', detail: `"${project.name}" must be a string, got ${describe(project.value)}` };
  }
  const metadata = chosen.metadata?.value;
  if (metadata !== undefined && !isRecord(metadata) && !(Array.isArray(metadata) && metadata.every(isRecord))) {
    return { ok: false, reason: 'invalid_metadata', detail: `"${chosen.metadata!.name}" must be an object or an array of objects, got ${describe(metadata)}` };
  }

  // most events have no other fields: no [name, value] pair is made for the claimed ones
  const others: [string, unknown][] = [];
  for (const name of Object.keys(input)) if (!claimed.has(name)) others.push([name, input[name]]);
  const key = context.key === null ? undefined : keyValue(context.key);
  const folded = foldIntoMetadata(metadata as StoredEvent['metadata'], others, key);
  const event: StoredEvent = { id: id.id, timestamp: timestamp.stored, event_message: message.value };
  if (project !== undefined) event.project = project.value as string;
  if (folded.metadata !== undefined) event.metadata = folded.metadata;
  if (folded.foldedFields.length > 0) event.folded_fields = folded.foldedFields;
  if (folded.keyField !== undefined) event.key_field = folded.keyField;
  event.shape = eventShape(event.metadata);
  return { ok: true, event };
}

/**
 * The event's stored timestamp: from its own field when it has one (kept as given when already in the
 * stored form), else from Kafka's timestamp of the message. Both decoding paths store events by this rule.
 */
function storedTimestampOf(given: unknown, kafkaTimestamp: string): { ok: true; stored: string } | { ok: false; reason: string } {
  const timestamp = given === undefined ? parseTimestamp(Number(kafkaTimestamp)) : eventTimestamp(given);
  if (!timestamp.ok) return { ok: false, reason: timestamp.reason };
  return { ok: true, stored: typeof given === 'string' && isStoredForm(given) ? given : formatMicros(timestamp.micros) };
}

function eventId(
  chosen: { name: string; value: unknown } | undefined,
  context: EventContext,
  element: number | undefined,
): { ok: true; id: string } | { ok: false; reason: 'invalid_id'; detail: string } {
  let id: string;
  if (chosen !== undefined && chosen.value !== '') {
    if (typeof chosen.value !== 'string' && !(typeof chosen.value === 'number' && Number.isFinite(chosen.value))) {
      return { ok: false, reason: 'invalid_id', detail: `"${chosen.name}" must be a string, got ${describe(chosen.value)}` };
    }
    id = String(chosen.value);
  } else if (context.idHeader !== undefined) {
    if (Array.isArray(context.idHeader))
      return { ok: false, reason: 'invalid_id', detail: `the message has ${context.idHeader.length} "${ID_HEADER}" headers; give one` };
    if (context.idHeader === '') return { ok: false, reason: 'invalid_id', detail: `the "${ID_HEADER}" header is empty` };
    // the events of a several-event message each need their own id
    id = element === undefined ? context.idHeader : `${context.idHeader}/${element}`;
  } else {
    return { ok: true, id: deterministicEventId(context.record.topic, context.record.partition, context.record.offset, element) };
  }
  if (Buffer.byteLength(id) > MAX_ID_BYTES) return { ok: false, reason: 'invalid_id', detail: `the id is longer than ${MAX_ID_BYTES} bytes` };
  return { ok: true, id };
}

export interface Folded {
  metadata: StoredEvent['metadata'];
  /** Paths (inside the first metadata record) of the folded top-level fields, in their order. */
  foldedFields: string[];
  keyField?: string;
}

/**
 * Keeps top-level fields that are not event fields, and the message key, in metadata: in the
 * first metadata record under their own names; a name the record already has goes under
 * `top_level_fields` instead (`top_level_fields_2`, ... when the producer uses that name too). The
 * paths are returned so the event can be rebuilt as produced (folded_fields, key_field).
 */
export function foldIntoMetadata(metadata: StoredEvent['metadata'], fields: [string, unknown][], key: unknown): Folded {
  if (fields.length === 0 && key === undefined) return { metadata, foldedFields: [] };
  const records = metadata === undefined ? [] : Array.isArray(metadata) ? [...metadata] : [metadata];
  const original = records[0] ?? {};
  const record: Record<string, unknown> = { ...original };
  let container: Record<string, unknown> | undefined;
  let containerName = CLASH_CONTAINER;
  for (let suffix = 2; Object.hasOwn(original, containerName); suffix += 1) containerName = `${CLASH_CONTAINER}_${suffix}`;
  const place = (name: string, value: unknown): string => {
    if (!Object.hasOwn(record, name)) {
      defineField(record, name, value);
      return name;
    }
    if (container === undefined) defineField(record, containerName, (container = {}));
    let slot = name;
    for (let suffix = 2; Object.hasOwn(container, slot); suffix += 1) slot = `${name}_${suffix}`;
    defineField(container, slot, value);
    return `${containerName}.${slot}`;
  };
  const foldedFields = fields.map(([name, value]) => place(name, value));
  const keyField = key === undefined ? undefined : place(KEY_FIELD, key);
  records[0] = record;
  return { metadata: Array.isArray(metadata) ? records : record, foldedFields, ...(keyField === undefined ? {} : { keyField }) };
}

/** A plain own property even for a name like `__proto__` (JSON.parse makes those own properties too). */
function defineField(record: Record<string, unknown>, name: string, value: unknown): void {
  Object.defineProperty(record, name, { value, enumerable: true, writable: true, configurable: true });
}

/** The key as text when it is UTF-8, else `base64:<bytes>`. */
function keyValue(key: Buffer): string {
  const text = key.toString('utf8');
  return Buffer.from(text, 'utf8').equals(key) ? text : `base64:${key.toString('base64')}`;
}

function headerText(headers: IHeaders | undefined, name: string): string | string[] | undefined {
  const value = headers?.[name];
  if (value === undefined) return undefined;
  if (Array.isArray(value)) return value.length === 1 ? String(value[0]) : value.map(String);
  return String(value);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}
