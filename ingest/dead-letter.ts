import type { IHeaders, Message } from 'kafkajs';

export interface DeadLetter {
  reason: string;
  detail: string;
  /** The original bytes (for an element of a JSON array message: that element's JSON). */
  value: Buffer;
  key: Buffer | null;
  source: { topic: string; partition: number; offset: string; element?: number; lastOffset?: string };
  /** Events the letter stands for when more than one (an undecodable batch: one letter, several offsets). */
  records?: number;
}

/** Header names a dead-letter consumer can rely on. */
export const DEAD_LETTER_HEADERS = {
  reason: 'dead-letter-reason',
  detail: 'dead-letter-detail',
  topic: 'source-topic',
  partition: 'source-partition',
  offset: 'source-offset',
  element: 'source-element',
  lastOffset: 'source-last-offset',
} as const;

export function deadLetterMessage(letter: DeadLetter): Message {
  const headers: IHeaders = {
    [DEAD_LETTER_HEADERS.reason]: letter.reason,
    [DEAD_LETTER_HEADERS.detail]: letter.detail.slice(0, 2000),
    [DEAD_LETTER_HEADERS.topic]: letter.source.topic,
    [DEAD_LETTER_HEADERS.partition]: String(letter.source.partition),
    [DEAD_LETTER_HEADERS.offset]: letter.source.offset,
  };
  if (letter.source.element !== undefined) headers[DEAD_LETTER_HEADERS.element] = String(letter.source.element);
  if (letter.source.lastOffset !== undefined) headers[DEAD_LETTER_HEADERS.lastOffset] = letter.source.lastOffset;
  return { key: letter.key, value: letter.value, headers };
}
