import { parseArgs } from 'node:util';
import { loadConfig } from '../shared/config.ts';
import { kafkaConnection } from '../shared/kafka-connection.ts';
import { createLogger } from '../shared/logger.ts';
import { publishDemoData } from './demo-data.ts';

/** `npm run demo-data -- --events N --hours H --project default [--project other]` */
const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '20000' },
    hours: { type: 'string', default: '24' },
    project: { type: 'string', multiple: true, default: ['default'] },
  },
});
const events = Number(values.events);
const hours = Number(values.hours);
if (!Number.isInteger(events) || events < 1) throw new Error(`--events must be a positive integer, got ${values.events}`);
if (!(hours > 0)) throw new Error(`--hours must be a positive number, got ${values.hours}`);
const config = loadConfig(process.env);
if (!config.KAFKA_BROKERS) {
  console.error('KAFKA_BROKERS is not set: name the Kafka brokers to publish to, e.g. KAFKA_BROKERS=127.0.0.1:39092');
  process.exit(2);
}
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
