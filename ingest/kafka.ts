import { createRequire } from 'node:module';
import { Kafka, logLevel, type LogEntry, type RetryOptions } from 'kafkajs';
import { kafkajsConnectionOptions, type KafkaConnection } from '../shared/kafka-connection.ts';
import type { Logger } from '../shared/logger.ts';

const LEVELS: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/**
 * Broker answers that describe a cluster settling (a group coordinator loading its offsets after a
 * start, a leader election, a new topic not yet in metadata, a rebalance) rather than a fault:
 * kafkajs logs each at error level, then retries or rejoins by itself, and surfaces an error to us
 * only if that fails for good.
 */
const SETTLING_ERROR_TYPES = new Set([
  'GROUP_LOAD_IN_PROGRESS',
  'GROUP_COORDINATOR_NOT_AVAILABLE',
  'NOT_COORDINATOR_FOR_GROUP',
  'LEADER_NOT_AVAILABLE',
  'NOT_LEADER_FOR_PARTITION',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'REBALANCE_IN_PROGRESS',
]);

// kafkajs's own table of protocol errors: its log entries carry only the message
const protocolErrors = (createRequire(import.meta.url)('kafkajs/src/protocol/error.js') as { errorCodes: { type: string; message: string }[] }).errorCodes;
const SETTLING_MESSAGES = new Set(protocolErrors.filter((error) => SETTLING_ERROR_TYPES.has(error.type)).map((error) => error.message));

/** The level a kafkajs log entry is written at: its own, except cluster-settling answers, which are debug. */
export function kafkaLogLevel(level: number, log: { readonly [field: string]: unknown }): 'error' | 'warn' | 'info' | 'debug' {
  if (typeof log.error === 'string' && SETTLING_MESSAGES.has(log.error)) return 'debug';
  return LEVELS[level] ?? 'info';
}

/**
 * The worker's retry budget for broker requests: kafkajs's default (5 retries, about 10 s in all)
 * ends the consumer for good when a broker restart takes longer than that, and the worker with it;
 * this one waits up to about three minutes (delays doubling from 300 ms to 30 s) before giving up.
 */
export const BROKER_OUTAGE_RETRY: RetryOptions = { initialRetryTime: 300, maxRetryTime: 30_000, retries: 12 };

/** A kafkajs client whose own logs go through our structured logger; `retry` replaces kafkajs's default budget. */
export function createKafka(connection: KafkaConnection, clientId: string, logger: Logger, retry?: RetryOptions): Kafka {
  return new Kafka({
    clientId,
    ...kafkajsConnectionOptions(connection),
    ...(retry ? { retry } : {}),
    logLevel: logLevel.WARN,
    logCreator: () => (entry: LogEntry) => {
      const { message, ...fields } = entry.log;
      logger[kafkaLogLevel(entry.level, entry.log)]({ kafka: entry.namespace, ...fields }, message);
    },
  });
}
