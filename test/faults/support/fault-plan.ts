import type { PoisonReason } from '../../../ingest/event.ts';
import type { SourceName } from '../../../shared/sources.ts';

export interface PlannedMessage {
  topic: string;
  partition: number;
  key: string | null;
  /** null: a message with no value. */
  value: string | null;
}

export interface PlannedPoison extends PlannedMessage {
  key: string;
  /** The dead-letter reason the worker must give it. */
  reason: PoisonReason;
}

export interface FaultPlan {
  /** In send order: events with poison messages mixed in. */
  messages: PlannedMessage[];
  eventSeqs: number[];
  seqSource: Map<number, SourceName>;
  poison: PlannedPoison[];
}

/** One poison message per kind the worker dead-letters for a single-object message; `n` makes each unique. */
const POISON_KINDS: { reason: PoisonReason; value: (n: number, maxMessageBytes: number) => string | null }[] = [
  { reason: 'invalid_json', value: (n) => `{"event_message": "poison ${n}", ` },
  { reason: 'not_an_object', value: (n) => String(n) },
  { reason: 'too_large', value: (n, max) => JSON.stringify({ event_message: `poison ${n} ${'x'.repeat(max)}` }) },
  { reason: 'empty_message', value: () => null },
  { reason: 'missing_event_message', value: (n) => JSON.stringify({ poison: n }) },
  { reason: 'event_message_not_string', value: (n) => JSON.stringify({ event_message: n }) },
  { reason: 'invalid_timestamp', value: (n) => JSON.stringify({ event_message: `poison ${n}`, timestamp: `not a time ${n}` }) },
];

/**
 * `events` events, each with a unique `metadata.seq` and no id (the worker derives ids from Kafka
 * positions), spread over the sources and partitions, with one poison message (keyed `poison-<n>`)
 * every 200 events, cycling through the kinds. Partitions are assigned here, not by a partitioner.
 */
export function faultPlan(options: {
  events: number;
  sources: { source: SourceName; topic: string }[];
  partitions: number;
  maxMessageBytes: number;
}): FaultPlan {
  const messages: PlannedMessage[] = [];
  const eventSeqs: number[] = [];
  const seqSource = new Map<number, SourceName>();
  const poison: PlannedPoison[] = [];
  for (let seq = 0; seq < options.events; seq += 1) {
    const { source, topic } = options.sources[seq % options.sources.length]!;
    const partition = Math.floor(seq / options.sources.length) % options.partitions;
    messages.push({
      topic,
      partition,
      key: null,
      value: JSON.stringify({ event_message: `fault suite event ${seq}`, project: 'faults', metadata: { seq, source } }),
    });
    eventSeqs.push(seq);
    seqSource.set(seq, source);
    if (seq % 200 === 100) {
      const n = poison.length;
      const kind = POISON_KINDS[n % POISON_KINDS.length]!;
      const letter: PlannedPoison = { topic, partition, key: `poison-${n}`, value: kind.value(n, options.maxMessageBytes), reason: kind.reason };
      messages.push(letter);
      poison.push(letter);
    }
  }
  return { messages, eventSeqs, seqSource, poison };
}
