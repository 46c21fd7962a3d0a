import type { Admin } from 'kafkajs';
import type { Config } from '../shared/config.ts';
import { SOURCES, deadLetterTopicName, topicName, type SourceName } from '../shared/sources.ts';

/** The topic a source is read from: SOURCE_TOPICS override, else TOPIC_PREFIX + source name. */
export function sourceTopic(config: Pick<Config, 'TOPIC_PREFIX' | 'SOURCE_TOPICS'>, source: SourceName): string {
  return config.SOURCE_TOPICS[source] ?? topicName({ topicPrefix: config.TOPIC_PREFIX }, source);
}

export interface SourceRoute {
  source: SourceName;
  topic: string;
  deadLetterTopic: string;
}

export function sourceRoutes(config: Pick<Config, 'TOPIC_PREFIX' | 'SOURCE_TOPICS'>): SourceRoute[] {
  return SOURCES.map(({ name }) => ({
    source: name,
    topic: sourceTopic(config, name),
    deadLetterTopic: deadLetterTopicName({ topicPrefix: config.TOPIC_PREFIX }, name),
  }));
}

/** Creates the topics that do not exist yet, `replicationFactor` copies of each partition; safe when several workers start at once. */
export async function ensureTopics(admin: Admin, topics: string[], partitions: number, replicationFactor: number): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = [...new Set(topics)].filter((topic) => !existing.has(topic));
  if (missing.length === 0) return [];
  try {
    await admin.createTopics({ waitForLeaders: true, topics: missing.map((topic) => ({ topic, numPartitions: partitions, replicationFactor })) });
  } catch (error) {
    const errors = (error as { errors?: { type?: string }[] }).errors;
    // another worker created them between our list and our create
    if (errors?.every((entry) => entry.type === 'TOPIC_ALREADY_EXISTS')) return missing;
    // created, but a KRaft broker may leave a new topic out of metadata for a moment, and kafkajs
    // waits for leaders only on LEADER_NOT_AVAILABLE
    if ((error as { type?: string }).type === 'UNKNOWN_TOPIC_OR_PARTITION') await waitForLeaders(admin, missing);
    else throw error;
  }
  return missing;
}

const TOPIC_NOT_READY = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'LEADER_NOT_AVAILABLE']);

async function waitForLeaders(admin: Admin, topics: string[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const { topics: metadata } = await admin.fetchTopicMetadata({ topics });
      if (metadata.every((topic) => topic.partitions.length > 0 && topic.partitions.every((partition) => partition.leader >= 0))) return;
    } catch (error) {
      // kafkajs's own retries may end in an error whose cause carries the broker's answer
      const { type, cause } = error as { type?: string; cause?: { type?: string } };
      if (!TOPIC_NOT_READY.has(type ?? cause?.type ?? '') || Date.now() > deadline) throw error;
    }
    if (Date.now() > deadline) throw new Error(`topics ${topics.join(', ')} have no leader after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
