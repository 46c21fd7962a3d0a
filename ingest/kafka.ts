import { Kafka, logLevel, type LogEntry } from 'kafkajs';
import type { Logger } from '../shared/logger.ts';

const LEVELS: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/** A kafkajs client whose own logs go through our structured logger. */
export function createKafka(brokers: string[], clientId: string, logger: Logger): Kafka {
  return new Kafka({
    clientId,
    brokers,
    logLevel: logLevel.WARN,
    logCreator: () => (entry: LogEntry) => {
      const { message, ...fields } = entry.log;
      logger[LEVELS[entry.level] ?? 'info']({ kafka: entry.namespace, ...fields }, message);
    },
  });
}
