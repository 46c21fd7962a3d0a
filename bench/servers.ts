import type { Config } from '../shared/config.ts';
import { startLocalStack, type LocalStack } from '../stack/index.ts';

export interface BenchServers {
  brokers: string[];
  elasticsearchUrl: string;
  /** Set when the benchmark started its own stack, which it must stop. */
  stack?: LocalStack;
}

/** KAFKA_BROKERS and ELASTICSEARCH_URL when both are set, else a local stack started on free ports. */
export async function benchServers(config: Config, say: (line: string) => void): Promise<BenchServers> {
  if (config.KAFKA_BROKERS && config.ELASTICSEARCH_URL) return { brokers: config.KAFKA_BROKERS, elasticsearchUrl: config.ELASTICSEARCH_URL };
  say('starting a local stack (KAFKA_BROKERS / ELASTICSEARCH_URL not both set)');
  const stack = await startLocalStack(
    { ...config, STACK_KAFKA_PORT: 0, STACK_KAFKA_CONTROLLER_PORT: 0, STACK_ELASTICSEARCH_PORT: 0, STACK_ELASTICSEARCH_TRANSPORT_PORT: 0 },
    say,
  );
  return { brokers: stack.kafkaBrokers, elasticsearchUrl: stack.elasticsearchUrl, stack };
}
