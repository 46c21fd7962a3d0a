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

/** Creates the topics that do not exist yet; safe when several workers start at once. */
export async function ensureTopics(admin: Admin, topics: string[], partitions: number): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = [...new Set(topics)].filter((topic) => !existing.has(topic));
  if (missing.length === 0) return [];
  try {
    await admin.createTopics({ waitForLeaders: true, topics: missing.map((topic) => ({ topic, numPartitions: partitions })) });
  } catch (error) {
    // another worker created them between our list and our create
    const errors = (error as { errors?: { type?: string }[] }).errors;
    if (!errors || !errors.every((entry) => entry.type === 'TOPIC_ALREADY_EXISTS')) throw error;
  }
  return missing;
}
