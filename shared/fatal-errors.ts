import type { Logger } from './logger.ts';

/**
 * A defect (an exception nothing caught, a promise nobody awaited) still ends the process, as Node
 * would, but with a structured fatal line in our log first instead of a bare stack on stderr.
 */
export function logFatalErrors(logger: Logger): void {
  process.on('uncaughtException', (error) => {
    logger.fatal({ err: error }, 'uncaught exception, exiting');
    process.exit(1);
  });
  process.on('unhandledRejection', (reason) => {
    logger.fatal({ err: reason }, 'unhandled promise rejection, exiting');
    process.exit(1);
  });
}
