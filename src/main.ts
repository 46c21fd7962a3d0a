import { ConfigError, loadConfig } from '../shared/config.ts';
import { answerHelp } from '../shared/command-help.ts';
import { createElasticsearchClient, elasticsearchConnection } from '../shared/elasticsearch.ts';
import { kafkaConnection } from '../shared/kafka-connection.ts';
import { logFatalErrors } from '../shared/fatal-errors.ts';
import { createLogger } from '../shared/logger.ts';
import { checkElasticsearch, checkKafka } from '../shared/startup-checks.ts';
import { buildServer } from './server.ts';

answerHelp(`Usage: npm run serve
Runs the query service alone (npm start runs it with everything it needs). It reads its servers from
ELASTICSEARCH_URL and KAFKA_BROKERS and listens on HOST:PORT; prints "query: <url>" once listening.`);

/** The query service process. */
async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger('query-service', config.LOG_LEVEL);
  logFatalErrors(logger);
  if (!config.ELASTICSEARCH_URL || !config.KAFKA_BROKERS) {
    throw new Error('the query service needs ELASTICSEARCH_URL and KAFKA_BROKERS (npm start sets both when it runs the local stack)');
  }
  const store = elasticsearchConnection(config);
  const kafka = kafkaConnection(config);
  const elasticsearch = createElasticsearchClient(store);
  // wrong credentials or an untrusted certificate stop the service here; a server that is merely down
  // does not (it answers 503 until the server is back, and /health says which is down)
  const [storeDown, kafkaDown] = await Promise.all([
    checkElasticsearch(elasticsearch, store, { waitMs: 0, required: false }),
    checkKafka(kafka, { waitMs: 0, required: false }),
  ]);
  for (const reason of [storeDown, kafkaDown]) if (reason) logger.warn({ reason }, 'starting without a server; requests needing it fail until it answers');
  const accessLogger = createLogger('query-service', config.LOG_LEVEL, { redact: false, buffered: true });
  const app = await buildServer({ config, logger, accessLogger, elasticsearch, kafkaBrokers: kafka.brokers, kafkaTls: kafka.tls });
  const address = await app.listen({ host: config.HOST, port: config.PORT });
  // npm start reads this line to learn the bound port (PORT=0 picks a free one)
  console.log(`query: ${address}`);

  const shutdown = async (signal: string) => {
    logger.info({ signal }, 'shutting down');
    await app.close();
    await elasticsearch.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(error instanceof ConfigError ? 2 : 1);
});
