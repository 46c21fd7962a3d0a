import { randomBytes } from 'node:crypto';
import type { TestProject } from 'vitest/node';
import { loadConfig } from '../shared/config.ts';
import { createElasticsearchClient } from '../shared/elasticsearch.ts';
import { createLogger } from '../shared/logger.ts';
import { createKafka } from '../ingest/kafka.ts';
import { startLocalStack, type LocalStack } from '../stack/index.ts';
import { kafkaConnection } from '../shared/kafka-connection.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string[];
    elasticsearchUrl: string;
    /** Four hex digits every name this run creates starts with, after `t` (test/support/stack.ts). */
    testRunId: string;
  }
}

let stack: LocalStack | undefined;
let external: { brokers: string[]; elasticsearchUrl: string } | undefined;
const runId = randomBytes(2).toString('hex');

/**
 * Starts Kafka and Elasticsearch once for the whole run (on free ports, so a running `npm start`
 * is not disturbed), or uses the servers named by KAFKA_BROKERS / ELASTICSEARCH_URL.
 */
export async function setup(project: TestProject): Promise<void> {
  const config = loadConfig(process.env);
  project.provide('testRunId', runId);
  if (config.KAFKA_BROKERS && config.ELASTICSEARCH_URL) {
    external = { brokers: config.KAFKA_BROKERS, elasticsearchUrl: config.ELASTICSEARCH_URL };
    project.provide('kafkaBrokers', config.KAFKA_BROKERS);
    project.provide('elasticsearchUrl', config.ELASTICSEARCH_URL);
    return;
  }
  const started = Date.now();
  stack = await startLocalStack(
    {
      ...config,
      STACK_KAFKA_PORT: 0,
      STACK_KAFKA_CONTROLLER_PORT: 0,
      STACK_ELASTICSEARCH_PORT: 0,
      STACK_ELASTICSEARCH_TRANSPORT_PORT: 0,
    },
    (line) => console.error(`stack: ${line}`),
  );
  console.error(
    `stack: kafka ${stack.kafkaBrokers.join(',')}, elasticsearch ${stack.elasticsearchUrl} ready in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  project.provide('kafkaBrokers', stack.kafkaBrokers);
  project.provide('elasticsearchUrl', stack.elasticsearchUrl);
}

export async function teardown(): Promise<void> {
  // a private stack goes with everything on it; on servers someone else runs, remove what this run made
  if (external) await removeRunLeftovers(external.brokers, external.elasticsearchUrl, `t${runId}`);
  await stack?.stop();
}

/** Deletes the indices, index templates, topics and consumer groups whose names start with this run's prefix. */
async function removeRunLeftovers(brokers: string[], elasticsearchUrl: string, prefix: string): Promise<void> {
  const client = createElasticsearchClient({ url: elasticsearchUrl });
  try {
    // wildcard deletes are refused by default (action.destructive_requires_name): name each one
    const indices = Object.keys(await client.indices.get({ index: `${prefix}*`, allow_no_indices: true, expand_wildcards: 'all' }));
    if (indices.length > 0) await client.indices.delete({ index: indices });
    const templates = await client.indices.getIndexTemplate({ name: `${prefix}*` }, { ignore: [404] });
    for (const { name } of templates.index_templates ?? []) await client.indices.deleteIndexTemplate({ name });
  } finally {
    await client.close();
  }
  const admin = createKafka(kafkaConnection(loadConfig(process.env), brokers), 'logplatform-test-cleanup', createLogger('test-cleanup', 'silent')).admin();
  await admin.connect();
  try {
    const topics = (await admin.listTopics()).filter((topic) => topic.startsWith(prefix));
    if (topics.length > 0) await admin.deleteTopics({ topics });
    const groups = (await admin.listGroups()).groups.map((group) => group.groupId).filter((group) => group.startsWith(prefix));
    if (groups.length > 0) await admin.deleteGroups(groups);
  } finally {
    await admin.disconnect();
  }
  console.error(`test clean-up: removed what this run (${prefix}*) left on the external servers`);
}
