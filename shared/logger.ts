import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/**
 * Where a server credential could surface if a configuration, connection or client option object
 * were logged: censored whatever the call site. (API keys of our own clients: src/auth/log-secrets.ts.)
 */
export const SERVER_SECRET_LOG_PATHS = [
  'ELASTICSEARCH_PASSWORD',
  'ELASTICSEARCH_API_KEY',
  'KAFKA_SASL_PASSWORD',
  '*.ELASTICSEARCH_PASSWORD',
  '*.ELASTICSEARCH_API_KEY',
  '*.KAFKA_SASL_PASSWORD',
  'password',
  'apiKey',
  '*.password',
  '*.apiKey',
  '*.*.password',
  '*.*.apiKey',
  '*.headers.authorization',
  '*.*.headers.authorization',
];

/** Structured JSON logs on stderr, so stdout stays free for the lines people read (ready:, addresses). */
export function createLogger(name: string, level: string, destination: DestinationStream = pino.destination(2)): Logger {
  return pino({ name, level, base: { pid: process.pid }, redact: { paths: SERVER_SECRET_LOG_PATHS, censor: '[redacted]' } }, destination);
}
