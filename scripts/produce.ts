import { readFileSync } from 'node:fs';
import { CompressionTypes, Partitioners } from 'kafkajs';
import { answerHelp } from '../shared/command-help.ts';
import { loadConfig } from '../shared/config.ts';
import { kafkaConnection } from '../shared/kafka-connection.ts';
import { createLogger } from '../shared/logger.ts';
import { SOURCE_NAMES, sourceByName } from '../shared/sources.ts';
import '../ingest/codecs.ts';
import { createKafka } from '../ingest/kafka.ts';
import { eventsFromText, parseProduceArguments, PRODUCE_USAGE } from './produce-input.ts';
import { checkKafka } from '../shared/startup-checks.ts';
import { sourceTopic } from '../ingest/topics.ts';
import { environmentWithStartState } from './start-state.ts';

/** `npm run produce -- --source edge_logs [--compression lz4] [file.ndjson]`: publishes events from a file or stdin to a source's topic. */
answerHelp(`${PRODUCE_USAGE}
Publishes newline-delimited JSON events from the file, or standard input, to the source's topic.
Sources: ${SOURCE_NAMES.join(', ')}. Uses the Kafka of a running npm start, else KAFKA_BROKERS.`);
const { env, source: serversSource } = environmentWithStartState(process.env);
const config = loadConfig(env);
let options;
try {
  options = parseProduceArguments(process.argv.slice(2));
} catch (error) {
  console.error((error as Error).message);
  process.exit(2);
}
const source = sourceByName(options.source);
if (!source) {
  console.error(`unknown source "${options.source}"; sources are ${SOURCE_NAMES.join(', ')}`);
  process.exit(2);
}
if (!config.KAFKA_BROKERS) {
  console.error('no Kafka to publish to: run npm start in another terminal, or set KAFKA_BROKERS (e.g. KAFKA_BROKERS=127.0.0.1:39092)');
  process.exit(2);
}
if (serversSource) console.error(`using ${serversSource}`);
const text = options.file ? readFileSync(options.file, 'utf8') : readFileSync(0, 'utf8');
const events = eventsFromText(text);
const topic = sourceTopic(config, source.name);
const compression = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy, lz4: CompressionTypes.LZ4 }[
  options.compression
];
const connection = kafkaConnection(config);
try {
  // a refused credential or certificate is reported as such, before kafkajs retries it
  await checkKafka(connection, { waitMs: 0, required: true });
} catch (error) {
  console.error((error as Error).message);
  process.exit(1);
}
const producer = createKafka(connection, 'logplatform-produce', createLogger('produce', config.LOG_LEVEL)).producer({
  createPartitioner: Partitioners.DefaultPartitioner,
  // a send retried after a timeout must not store its events twice (events without an id get one from their offset)
  idempotent: true,
  maxInFlightRequests: 1,
});
await producer.connect();
try {
  const perRequest = 1000;
  for (let start = 0; start < events.length; start += perRequest) {
    await producer.send({ topic, acks: -1, compression, messages: events.slice(start, start + perRequest).map((value) => ({ value })) });
  }
} finally {
  await producer.disconnect();
}
console.log(`published ${events.length} event(s) to ${topic}${options.compression === 'none' ? '' : ` (${options.compression})`}`);
