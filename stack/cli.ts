import { loadConfig } from '../shared/config.ts';
import { startLocalStack, StackError } from './index.ts';

/** `npm run stack`: Kafka and Elasticsearch on loopback until Ctrl-C. */
async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const started = Date.now();
  const stack = await startLocalStack(config, (line) => console.error(`stack: ${line}`));
  console.log(`kafka: ${stack.kafkaBrokers.join(',')}`);
  console.log(`elasticsearch: ${stack.elasticsearchUrl}`);
  console.error(`stack: ready in ${((Date.now() - started) / 1000).toFixed(1)} s; Ctrl-C stops both`);
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
