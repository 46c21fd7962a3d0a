import { Kafka, logLevel, type LogEntry } from 'kafkajs';
import { kafkajsConnectionOptions, type KafkaConnection } from '../shared/kafka-connection.ts';
import type { Logger } from '../shared/logger.ts';

const LEVELS: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/** A kafkajs client whose own logs go through our structured logger. */
export function createKafka(connection: KafkaConnection, clientId: string, logger: Logger): Kafka {
  return new Kafka({
    clientId,
    ...kafkajsConnectionOptions(connection),
    logLevel: logLevel.WARN,
    logCreator: () => (entry: LogEntry) => {
      const { message, ...fields } = entry.log;
      logger[LEVELS[entry.level] ?? 'info']({ kafka: entry.namespace, ...fields }, message);
    },
  });
}
