import { hash } from 'node:crypto';

/** Elasticsearch refuses `_id`s longer than 512 bytes. */
export const MAX_ID_BYTES = 512;

/**
 * The id of an event that arrived without one: a UUID-shaped hash of where it sits in Kafka, so a
 * redelivered or replayed message is written over itself instead of being stored twice.
 */
export function deterministicEventId(topic: string, partition: number, offset: string, element?: number): string {
  const position = element === undefined ? `${topic}/${partition}/${offset}` : `${topic}/${partition}/${offset}/${element}`;
  // one-shot: no Hash object per event
  const hex = hash('sha256', position, 'hex');
  // version 5 and RFC 4122 variant bits, so the id reads as a name-based UUID
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
