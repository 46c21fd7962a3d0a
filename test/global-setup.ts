import type { TestProject } from 'vitest/node';
import { loadConfig } from '../shared/config.ts';
import { startLocalStack, type LocalStack } from '../stack/index.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string[];
    elasticsearchUrl: string;
  }
}

let stack: LocalStack | undefined;

/**
 * Starts Kafka and Elasticsearch once for the whole run (on free ports, so a running `npm start`
 * is not disturbed), or uses the servers named by KAFKA_BROKERS / ELASTICSEARCH_URL.
 */
export async function setup(project: TestProject): Promise<void> {
  const config = loadConfig(process.env);
  if (config.KAFKA_BROKERS && config.ELASTICSEARCH_URL) {
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
  console.error(`stack: kafka ${stack.kafkaBrokers.join(',')}, elasticsearch ${stack.elasticsearchUrl} ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  project.provide('kafkaBrokers', stack.kafkaBrokers);
  project.provide('elasticsearchUrl', stack.elasticsearchUrl);
}

export async function teardown(): Promise<void> {
  await stack?.stop();
}
