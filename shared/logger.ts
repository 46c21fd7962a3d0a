import { pino, type DestinationStream, type Logger } from 'pino';
import { humanLogLine } from './log-format.ts';

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

export interface LoggerOptions {
  /** Lines for a person at a terminal instead of JSON (npm start in a terminal). */
  human?: boolean;
  /** Where the lines go instead of stderr (tests). */
  destination?: DestinationStream;
  /**
   * False for a logger whose lines are built from known fields only (the per-request access line):
   * censoring costs a walk of every logged object, a sixth of a cached answer's CPU in the profile.
   */
  redact?: boolean;
  /**
   * Lines gathered and written together, at least once a second (flushed on exit), instead of one
   * write each: for the access line, whose writes were 5% of a cached answer's CPU in the profile.
   */
  buffered?: boolean;
}

/**
 * Lines gathered up to 12 KiB per write, and written at least once a second: one write per answered
 * request cost about 90 µs of the main thread on an uncached logs.all answer in the profile. Each
 * write wakes a thread of libuv's pool (3-4 us of CPU on a cached answer's line with 4 KiB writes),
 * but keeps the event loop from waiting on the disk.
 */
const BUFFERED = { dest: 2, sync: false, minLength: 12_288, periodicFlush: 1000 };

/** Logs on stderr, so stdout stays free for the lines people and scripts read (ready:, addresses). */
export function createLogger(name: string, level: string, options: LoggerOptions = {}): Logger {
  const destination = options.destination ?? (options.human ? humanDestination() : pino.destination(options.buffered ? BUFFERED : 2));
  const redact = options.redact === false ? undefined : { paths: SERVER_SECRET_LOG_PATHS, censor: '[redacted]' };
  return pino({ name, level, base: { pid: process.pid }, ...(redact ? { redact } : {}) }, destination);
}

function humanDestination(): DestinationStream {
  const colour = process.stderr.isTTY === true;
  return { write: (line: string) => void process.stderr.write(`${humanLogLine(line.trimEnd(), colour)}\n`) };
}
