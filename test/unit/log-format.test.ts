import { describe, expect, it } from 'vitest';
import { humanLogLine } from '../../shared/log-format.ts';

const at = Date.UTC(2024, 0, 1, 16, 8, 0, 250);

describe('human log lines', () => {
  it('puts time, level, process and message first, then the other fields as key=value', () => {
    const line = JSON.stringify({ level: 30, time: at, pid: 7, name: 'ingest', group: 'logplatform-ingest', port: 4001, msg: 'ingest worker started' });
    expect(humanLogLine(line)).toBe('16:08:00 INFO  ingest ingest worker started  group=logplatform-ingest port=4001');
  });

  it('shows errors by their message, short arrays joined, quotes text with spaces', () => {
    const line = JSON.stringify({
      level: 50,
      time: at,
      name: 'query-service',
      err: { type: 'Error', message: 'connect ECONNREFUSED', stack: 'Error: ...' },
      topics: ['a', 'b'],
      reason: 'two words',
      msg: 'failed',
    });
    expect(humanLogLine(line)).toBe('16:08:00 ERROR query-service failed  err="connect ECONNREFUSED" topics=a,b reason="two words"');
  });

  it('cuts long lines and colours the level only when asked', () => {
    const line = JSON.stringify({ level: 40, time: at, name: 'start', msg: 'x', assignment: { edge_logs: Array.from({ length: 100 }, (_, n) => n) } });
    const plain = humanLogLine(line);
    expect(plain.length).toBeLessThanOrEqual(215);
    expect(plain.endsWith('…')).toBe(true);
    expect(humanLogLine(line, true)).toContain('\u001b[33mWARN \u001b[0m');
    expect(plain).not.toContain('\u001b');
  });

  it('leaves lines that are not pino JSON as they are', () => {
    expect(humanLogLine('invalid configuration:\n  PORT: too big')).toBe('invalid configuration:\n  PORT: too big');
    expect(humanLogLine('{"not":"a log line"}')).toBe('{"not":"a log line"}');
    expect(humanLogLine('42')).toBe('42');
  });
});
