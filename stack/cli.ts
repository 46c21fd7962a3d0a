import { parseArgs } from 'node:util';
import { loadConfig } from '../shared/config.ts';
import { answerHelp } from '../shared/command-help.ts';
import { CLUSTER_INDEX_REPLICAS, CLUSTER_TOPIC_REPLICATION_FACTOR, startLocalStack, StackError } from './index.ts';

const USAGE = `Usage: npm run stack [-- --secure | --cluster]
Runs Kafka and Elasticsearch on loopback until Ctrl-C (STACK_* variables set their ports and heaps).
  --secure   TLS and authentication on both; prints the variables that point the platform at them
  --cluster  three nodes of each; prints the variables that give topics and indices their copies`;

/**
 * `npm run stack [-- --secure | --cluster]`: Kafka and Elasticsearch on loopback until Ctrl-C. With
 * --secure, prints the variables that point the platform at them (passwords of this run included);
 * with --cluster, three nodes of each and the variables that give the platform's topics and indices
 * their copies.
 */
async function main(): Promise<void> {
  answerHelp(USAGE);
  const config = loadConfig(process.env);
  let values;
  try {
    ({ values } = parseArgs({ options: { secure: { type: 'boolean', default: false }, cluster: { type: 'boolean', default: false } } }));
  } catch (error) {
    console.error(`stack: ${(error as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  const started = Date.now();
  const stack = await startLocalStack(config, (line) => console.error(`stack: ${line}`), { secure: values.secure, cluster: values.cluster });
  console.log(`kafka: ${stack.kafkaBrokers.join(',')}`);
  console.log(`elasticsearch: ${stack.elasticsearchUrl}`);
  if (values.cluster) {
    console.log(
      `# cluster: ${stack.servers.kafka.length} kafka nodes (KRaft, each broker and controller), ${stack.servers.elasticsearch.length} elasticsearch nodes; for the worker, the query service and the scripts`,
    );
    console.log(`export KAFKA_BROKERS=${stack.kafkaBrokers.join(',')} ELASTICSEARCH_URL=${stack.elasticsearchUrl}`);
    console.log(`export INGEST_TOPIC_REPLICATION_FACTOR=${CLUSTER_TOPIC_REPLICATION_FACTOR} ELASTICSEARCH_INDEX_REPLICAS=${CLUSTER_INDEX_REPLICAS}`);
  }
  if (stack.security) {
    const { caFile, elasticsearch, kafka } = stack.security;
    console.log('# secured: for the worker, the query service and the scripts');
    console.log(`export KAFKA_BROKERS=${stack.kafkaBrokers.join(',')} KAFKA_SECURITY_PROTOCOL=SASL_SSL KAFKA_SASL_MECHANISM=SCRAM-SHA-512`);
    console.log(`export KAFKA_SASL_USERNAME=${kafka.scramSha512.username} KAFKA_SASL_PASSWORD=${kafka.scramSha512.password} KAFKA_CA_FILE=${caFile}`);
    console.log(
      `export ELASTICSEARCH_URL=${stack.elasticsearchUrl} ELASTICSEARCH_USERNAME=${elasticsearch.username} ELASTICSEARCH_PASSWORD=${elasticsearch.password} ELASTICSEARCH_CA_FILE=${caFile}`,
    );
    console.log(`# also: PLAIN ${kafka.plain.username} / ${kafka.plain.password}; SCRAM-SHA-256 ${kafka.scramSha256.username} / ${kafka.scramSha256.password}`);
    console.log(
      `# SSL with a client certificate: KAFKA_BROKERS=${kafka.sslBrokers.join(',')} KAFKA_SECURITY_PROTOCOL=SSL KAFKA_CLIENT_CERT_FILE=${kafka.clientCertFile} KAFKA_CLIENT_KEY_FILE=${kafka.clientKeyFile}`,
    );
  }
  console.error(`stack: ready in ${((Date.now() - started) / 1000).toFixed(1)} s; Ctrl-C stops ${values.cluster ? 'every node' : 'both'}`);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.error(`stack: ${signal}, stopping`);
    await stack.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGHUP', () => void stop('SIGHUP'));
}

main().catch((error: unknown) => {
  console.error(error instanceof StackError || error instanceof Error ? `stack: ${error.message}` : error);
  process.exit(1);
});
