import { pino, type Logger } from 'pino';

export type { Logger };

/** Structured JSON logs on stderr, so stdout stays free for the lines people read (ready:, addresses). */
export function createLogger(name: string, level: string): Logger {
  return pino({ name, level, base: { pid: process.pid } }, pino.destination(2));
}
