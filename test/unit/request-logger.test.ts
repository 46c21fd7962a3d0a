import type { FastifyBaseLogger } from 'fastify';
import { pino, type Bindings, type ChildLoggerOptions } from 'pino';
import { describe, expect, it } from 'vitest';
import { RequestLogger } from '../../src/http/request-logger.ts';

/** A redacting service logger, and how many children were made of it (counted on a wrapper: pino's children inherit their parent's methods). */
function capturedLogger() {
  const lines: Record<string, unknown>[] = [];
  const service = pino(
    { level: 'info', redact: { paths: ['headers.authorization'], censor: '[redacted]' } },
    { write: (line: string) => void lines.push(JSON.parse(line)) },
  );
  let children = 0;
  const logger: FastifyBaseLogger = Object.assign(Object.create(service) as FastifyBaseLogger, {
    child: (bindings: Bindings, options?: ChildLoggerOptions) => {
      children += 1;
      return service.child(bindings, options);
    },
  });
  return { logger, lines, children: () => children };
}

describe('a request logger', () => {
  it('makes no child of the service logger while the request logs nothing', () => {
    const { logger, children } = capturedLogger();
    const log = new RequestLogger(logger, { reqId: 'r-1' }, {});
    expect(log.level).toBe('info');
    expect(children()).toBe(0);
  });

  it('writes its lines through one child carrying the bindings, redacted as the service logger redacts', () => {
    const { logger, lines, children } = capturedLogger();
    const log = new RequestLogger(logger, { reqId: 'r-2' }, {});
    log.error({ headers: { authorization: 'Bearer secret' } }, 'request failed');
    log.warn('slow');
    log.debug('below the level');
    expect(children()).toBe(1);
    expect(lines.map((line) => [line.reqId, line.msg, (line.headers as { authorization?: string } | undefined)?.authorization])).toEqual([
      ['r-2', 'request failed', '[redacted]'],
      ['r-2', 'slow', undefined],
    ]);
  });

  it('takes a level set on it, and makes children of its own child', () => {
    const { logger, lines } = capturedLogger();
    const log = new RequestLogger(logger, { reqId: 'r-3' }, {});
    log.level = 'debug';
    log.debug('now written');
    log.child({ step: 'plan' }).info('inner');
    expect(lines.map((line) => [line.reqId, line.step, line.msg])).toEqual([
      ['r-3', undefined, 'now written'],
      ['r-3', 'plan', 'inner'],
    ]);
  });
});
