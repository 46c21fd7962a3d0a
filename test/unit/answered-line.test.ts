import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../shared/logger.ts';
import { AnsweredLine } from '../../src/http/request-log.ts';

/** Two loggers writing to their own line lists, made alike; their clock stopped so both lines carry the same time. */
function twins(make: (destination: { write(line: string): void }) => pino.Logger) {
  const pinoLines: string[] = [];
  const ourLines: string[] = [];
  return { viaPino: make({ write: (line) => void pinoLines.push(line) }), viaLine: make({ write: (line) => void ourLines.push(line) }), pinoLines, ourLines };
}

const FIELDS = { reqId: '7d3c6a0e-2b1f-4c5e-9a8d-0f1e2d3c4b5a', method: 'GET', path: '/api/endpoints/query/usage.api-counts', status: 200, ms: 3 };

describe('the answered line of the cached lane', () => {
  it("is byte for byte the line pino writes for the same fields, with the logger's name, pid and level", () => {
    vi.useFakeTimers({ now: Date.UTC(2024, 0, 1, 12, 30, 0, 123), toFake: ['Date'] });
    try {
      const { viaPino, viaLine, pinoLines, ourLines } = twins((destination) => createLogger('query-service', 'info', { redact: false, destination }));
      viaPino.info(FIELDS, 'request answered');
      new AnsweredLine(viaLine).write(FIELDS.reqId, FIELDS.method, FIELDS.path, FIELDS.status, FIELDS.ms);
      expect(ourLines).toEqual(pinoLines);
      expect(JSON.parse(ourLines[0]!)).toMatchObject({ ...FIELDS, level: 30, name: 'query-service', pid: process.pid, time: Date.now() });
    } finally {
      vi.useRealTimers();
    }
  });

  it('writes nothing when the logger is above info', () => {
    const { viaLine, ourLines } = twins((destination) => createLogger('query-service', 'warn', { redact: false, destination }));
    new AnsweredLine(viaLine).write(FIELDS.reqId, FIELDS.method, FIELDS.path, FIELDS.status, FIELDS.ms);
    expect(ourLines).toEqual([]);
  });

  it('leaves the line to pino for a logger that adds its own parts (redaction, a mixin, a custom time)', () => {
    vi.useFakeTimers({ now: Date.UTC(2024, 0, 1), toFake: ['Date'] });
    try {
      const makers = [
        (destination: { write(line: string): void }) => createLogger('query-service', 'info', { destination }),
        (destination: { write(line: string): void }) => pino({ mixin: () => ({ zone: 'eu' }) }, destination),
        (destination: { write(line: string): void }) => pino({ timestamp: pino.stdTimeFunctions.isoTime, base: null }, destination),
      ];
      for (const make of makers) {
        const { viaPino, viaLine, pinoLines, ourLines } = twins(make);
        viaPino.info(FIELDS, 'request answered');
        new AnsweredLine(viaLine).write(FIELDS.reqId, FIELDS.method, FIELDS.path, FIELDS.status, FIELDS.ms);
        expect(ourLines).toEqual(pinoLines);
      }
    } finally {
      vi.useRealTimers();
    }
  });

  it("gathers one turn's lines into one write to pino.destination's stream, the same bytes as pino's lines", async () => {
    vi.useFakeTimers({ now: Date.UTC(2024, 0, 1, 12, 30), toFake: ['Date'] });
    const folder = mkdtempSync(path.join(tmpdir(), 'answered-line-'));
    try {
      const expected: string[] = [];
      const viaPino = createLogger('query-service', 'info', { redact: false, destination: { write: (line) => void expected.push(line) } });
      const destination = pino.destination({ dest: path.join(folder, 'access.log'), sync: true });
      const writes = vi.spyOn(destination, 'write');
      const line = new AnsweredLine(createLogger('query-service', 'info', { redact: false, destination }));
      for (const status of [200, 200, 200]) {
        viaPino.info({ ...FIELDS, status }, 'request answered');
        line.write(FIELDS.reqId, FIELDS.method, FIELDS.path, status, FIELDS.ms);
      }
      expect(writes).not.toHaveBeenCalled();
      await new Promise((resolve) => setImmediate(resolve));
      expect(writes).toHaveBeenCalledTimes(1);
      line.write(FIELDS.reqId, FIELDS.method, FIELDS.path, 200, FIELDS.ms);
      viaPino.info(FIELDS, 'request answered');
      line.flush();
      expect(readFileSync(path.join(folder, 'access.log'), 'utf8')).toBe(expected.join(''));
    } finally {
      vi.useRealTimers();
    }
  });
});
