import { parseArgs } from 'node:util';
import { loadConfig } from '../shared/config.ts';
import { answerHelp } from '../shared/command-help.ts';
import { kafkaConnection } from '../shared/kafka-connection.ts';
import { createLogger } from '../shared/logger.ts';
import { environmentWithStartState } from './start-state.ts';
import { publishDemoData } from './publish-demo-data.ts';

answerHelp(`Usage: npm run demo-data [-- --events N] [--hours H] [--project <project> ...]
Publishes generated events of every source to Kafka, spread over the last H hours.
  --events N            how many (default 20000)
  --hours H             how far back they reach (default 24)
  --project <project>   whose events they are (default default; repeat for several)
Uses the servers of a running npm start, else KAFKA_BROKERS.`);

/** `npm run demo-data -- --events N --hours H --project default [--project other]` */
function parseOptions() {
  try {
    return parseArgs({
      options: {
        events: { type: 'string', default: '20000' },
        hours: { type: 'string', default: '24' },
        project: { type: 'string', multiple: true, default: ['default'] },
      },
    }).values;
  } catch (error) {
    return usageError(`${(error as Error).message}; see npm run demo-data -- --help`);
  }
}

const values = parseOptions();
const events = Number(values.events);
const hours = Number(values.hours);
if (!Number.isInteger(events) || events < 1) usageError(`--events must be a positive integer, got ${values.events}`);
if (!(hours > 0)) usageError(`--hours must be a positive number, got ${values.hours}`);
const { env, source: serversSource } = environmentWithStartState(process.env);
const config = loadConfig(env);
if (!config.KAFKA_BROKERS) {
  usageError('no Kafka to publish to: run npm start in another terminal, or set KAFKA_BROKERS (e.g. KAFKA_BROKERS=127.0.0.1:39092)');
}
if (serversSource) console.error(`using ${serversSource}`);
const to = new Date();
const { published } = await publishDemoData({
  kafka: kafkaConnection(config),
  topics: config,
  events,
  from: new Date(to.getTime() - hours * 3_600_000),
  to,
  projects: values.project,
  logger: createLogger('demo-data', config.LOG_LEVEL),
});
console.log(`published ${published} demo events over the last ${hours} h for ${values.project.join(', ')}`);

function usageError(message: string): never {
  console.error(message);
  process.exit(2);
}
