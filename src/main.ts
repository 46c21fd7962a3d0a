import { loadConfig } from '../shared/config.ts';
import { createElasticsearchClient } from '../shared/elasticsearch.ts';
import { createLogger } from '../shared/logger.ts';
import { buildServer } from './server.ts';

/** The query service process. */
async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger('query-service', config.LOG_LEVEL);
  if (!config.ELASTICSEARCH_URL || !config.KAFKA_BROKERS) {
    throw new Error('the query service needs ELASTICSEARCH_URL and KAFKA_BROKERS (npm start sets both when it runs the local stack)');
  }
  const elasticsearch = createElasticsearchClient({ url: config.ELASTICSEARCH_URL });
  const app = await buildServer({ config, logger, elasticsearch, kafkaBrokers: config.KAFKA_BROKERS });
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
  process.exit(1);
});
