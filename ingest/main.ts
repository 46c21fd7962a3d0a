import { ConfigError, loadConfig } from '../shared/config.ts';
import { answerHelp } from '../shared/command-help.ts';
import { logFatalErrors } from '../shared/fatal-errors.ts';
import { createLogger } from '../shared/logger.ts';
import { ServerAccessError } from '../shared/startup-checks.ts';
import { startIngestWorker } from './worker.ts';

answerHelp(`Usage: npm run ingest
Runs the ingest worker alone (npm start runs it with everything it needs): consumes the source topics
of KAFKA_BROKERS and writes the events to ELASTICSEARCH_URL; prints "ingest: <health url>" once consuming.`);

/** The ingest worker process: `npm run ingest`. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger('ingest', config.LOG_LEVEL);
  logFatalErrors(logger);
  const worker = await startIngestWorker(config, logger).catch((error: unknown) => {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(2);
    }
    if (error instanceof ServerAccessError) {
      logger.fatal({ reason: error.message }, 'ingest worker could not start');
      console.error(error.message);
      process.exit(1);
    }
    logger.fatal({ err: error }, 'ingest worker could not start');
    process.exit(1);
  });
  console.log(`ingest: http://${config.INGEST_HOST}:${worker.port}/health`);

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    worker.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'unclean shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  worker.failed.then((error) => {
    logger.fatal({ err: error }, 'consumer failed for good, exiting');
    worker.stop().finally(() => process.exit(1));
  });
}

await main();
