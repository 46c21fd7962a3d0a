import { Partitioners, type Message } from 'kafkajs';
import type { KafkaConnection } from '../shared/kafka-connection.ts';
import type { Config } from '../shared/config.ts';
import type { Logger } from '../shared/logger.ts';
import type { SourceName } from '../shared/sources.ts';
import { demoEvents } from './demo-events.ts';
import { createKafka } from '../ingest/kafka.ts';
import { sourceTopic } from '../ingest/topics.ts';

export interface DemoDataOptions {
  kafka: KafkaConnection;
  /** The worker's topic settings, so demo events land where the worker reads. */
  topics: Pick<Config, 'TOPIC_PREFIX' | 'SOURCE_TOPICS'>;
  events: number;
  from: Date;
  to: Date;
  projects: string[];
  logger: Logger;
}

const MESSAGES_PER_SEND = 1000;

/** Publishes realistic events for all nine sources, spread over [from, to], to the source topics. */
export async function publishDemoData(options: DemoDataOptions): Promise<{ published: number }> {
  const producer = createKafka(options.kafka, 'logplatform-demo-data', options.logger).producer({
    createPartitioner: Partitioners.DefaultPartitioner,
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await producer.connect();
  let published = 0;
  const pending = new Map<SourceName, Message[]>();
  const flush = async (source: SourceName) => {
    const messages = pending.get(source) ?? [];
    if (messages.length === 0) return;
    pending.set(source, []);
    await producer.send({ topic: sourceTopic(options.topics, source), acks: -1, messages });
    published += messages.length;
  };
  try {
    for (const { source, event } of demoEvents({ count: options.events, from: options.from, to: options.to, projects: options.projects })) {
      const messages = pending.get(source) ?? [];
      messages.push({ value: JSON.stringify(event) });
      pending.set(source, messages);
      if (messages.length >= MESSAGES_PER_SEND) await flush(source);
    }
    for (const source of pending.keys()) await flush(source);
  } finally {
    await producer.disconnect();
  }
  options.logger.info({ published, from: options.from.toISOString(), to: options.to.toISOString() }, 'demo data published');
  return { published };
}
