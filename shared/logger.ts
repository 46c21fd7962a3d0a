import { pino, type DestinationStream, type Logger } from 'pino';
import { humanLogLine } from './log-format.ts';

export type { Logger };

export interface LoggerOptions {
  /** Lines for a person at a terminal instead of JSON (npm start in a terminal). */
  human?: boolean;
}

/** Logs on stderr, so stdout stays free for the lines people and scripts read (ready:, addresses). */
export function createLogger(name: string, level: string, options: LoggerOptions = {}): Logger {
  return pino({ name, level, base: { pid: process.pid } }, options.human ? humanDestination() : pino.destination(2));
}

function humanDestination(): DestinationStream {
  const colour = process.stderr.isTTY === true;
  return { write: (line: string) => void process.stderr.write(`${humanLogLine(line.trimEnd(), colour)}\n`) };
}
