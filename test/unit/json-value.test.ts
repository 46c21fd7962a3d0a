import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { translateToDuckDb } from '../../src/executor/duckdb-sql/index.ts';
import { EmbeddedEngine } from '../../src/executor/engine/embedded-engine.ts';
import { jsonValue } from '../../src/executor/json-value.ts';
import { initSqlParser, parseSandboxQuery } from '../../src/sql/index.ts';
import type { TableSchema } from '../../src/sql/types.ts';

/**
 * The service's JSON_VALUE against the engine's, on the engine itself: for every text the service
 * reads, its value is the engine's; the texts it declines are exactly those listed.
 */
const READ: [string, string | null][] = [
  ['{"a":{"b":"x"}}', 'x'],
  ['{"a" : { "b" : "x" } }\r\n', 'x'],
  ['{"a":{"b":1}}', '1'],
  ['{"a":{"b":-0}}', '0'],
  ['{"a":{"b":12345678901234567890}}', '12345678901234567890'],
  ['{"a":{"b":-9223372036854775808}}', '-9223372036854775808'],
  ['{"a":{"b":true}}', 'true'],
  ['{"a":{"b":false}}', 'false'],
  ['{"a":{"b":null}}', null],
  ['{"a":{"b":[1]}}', null],
  ['{"a":{"b":{"c":"x"}}}', null],
  ['{"a":{"c":"x"}}', null],
  ['{"a":"b"}', null],
  ['{"a":[{"b":"x"}]}', null],
  ['{"A":{"b":"x"}}', null],
  ['{"a":{"b":"x\\"y\\\\z\\u00e4\\n\\/\\t\\b\\f\\r\\u2028"}}', 'x"y\\zä\n/\t\b\f\r\u2028'],
  ['{"\\u0061":{"b":"x"}}', 'x'],
  ['{"a":{"b":"\u{1F600} ä"}}', '\u{1F600} ä'],
  ['{"x":[1,2.5e3,{"b":"no"},[]],"a":{"b":"x"},"z":{}}', 'x'],
  ['{"b":"x","a":{"b":"y"},"c":{"a":{"b":"z"}}}', 'y'],
  ['{"a":{"b":"x"},"x":{"a":1},"y":{"a":2}}', 'x'],
  ['{}', null],
  ['not json', null],
  ['', null],
  ['   ', null],
  ['"a"', null],
  ['[{"a":{"b":"x"}}]', null],
  ['true', null],
  ['nan', null],
  ['x{"a":{"b":"x"}}', null],
  ['\u00a0{"a":{"b":"x"}}', null],
  ['\ufeff{"a":{"b":"x"}}', null],
];
const DECLINES = [
  '{"a":{"b":1.5}}',
  '{"a":{"b":1e2}}',
  '{"a":{"b":-0.0}}',
  '{"a":{"b":123456789012345678901234567890}}',
  '{"a":{"b":"x","b":"y"}}',
  '{"a":{"b":"x"},"a":{"b":"y"}}',
  '{"a":{"b":"x",}}',
  '{"a":{"b":"x"},"c":[1,]}',
  '{"a":{"b":NaN}}',
  '{"a":{"b":"x"}} trailing',
  '{"a":{"b":"x"}}{}',
  '{"a":{"b":"\\ud83d\\ude00"}}',
  '{"a":{"b":"\\ud83d"}}',
  '{"a":{"b":"\\u0000"}}',
  '{"a":{"b":"tab\there"}}',
  '{"a":{"b":"\\x"}}',
  '{"a":{"b":01}}',
  '{"a":{"b":"x"}',
  '{"a":1,,}',
  "{'a':1}",
];

const SCHEMA: TableSchema = {
  name: 't',
  columns: [
    { name: 'n', type: { kind: 'int64' } },
    { name: 'm', type: { kind: 'string' } },
  ],
};

let engine: EmbeddedEngine;
beforeAll(async () => {
  await initSqlParser();
  engine = await EmbeddedEngine.start({ memoryLimit: '256MB', threads: 1, logger: pino({ level: 'silent' }) });
});
afterAll(async () => {
  await engine?.close();
});

/** The engine's JSON_VALUE(m, '$.a.b') of each text, as the printer prints it, over a table as the engine loads one. */
async function engineValues(texts: string[]): Promise<unknown[]> {
  const query = parseSandboxQuery("select n, json_value(m, '$.a.b') as v from t order by n", { allowedTables: ['t'] });
  const { sql } = translateToDuckDb(query, { tables: [SCHEMA], parameters: {}, now: Date.now() * 1000, maxChars: 100_000, maxValueBytes: 1_000_000 });
  const rows = texts.map((m, n) => ({ n, m }));
  const result = await engine.run({ tables: [{ schema: SCHEMA, rows }], sql, timeoutMs: 10_000 });
  return result.rows.map((row) => (row as { v: unknown }).v);
}

describe("JSON_VALUE read by the service as the engine's printed SQL reads it", () => {
  it('answers the value the engine answers for each text it reads', async () => {
    const texts = READ.map(([text]) => text);
    const expected = READ.map(([, value]) => value);
    expect(await engineValues(texts)).toEqual(expected);
    expect(texts.map((text) => jsonValue(text, ['a', 'b']))).toEqual(expected);
  });

  it('declines the texts the engine reads its own way (DuckDB prints doubles, reads the first duplicate key, accepts more than RFC 8259)', async () => {
    expect(DECLINES.filter((text) => jsonValue(text, ['a', 'b']) !== undefined)).toEqual([]);
    // the engine answers each of them (no error), so declining costs only the engine's turn
    expect(await engineValues(DECLINES)).toHaveLength(DECLINES.length);
  });

  it('reads alike whether JSON.parse or the scanner reads the text (an escape elsewhere sends it to the scanner)', () => {
    const objects = READ.filter(([text]) => /^\{.+\}\s*$/s.test(text));
    for (const [text, value] of objects) {
      const escaped = text.replace(/\}\s*$/, ',"z":"\\n"}');
      expect(jsonValue(escaped, ['a', 'b']), escaped).toBe(value);
    }
    expect(objects.length).toBeGreaterThan(15);
  });

  it('reads a path of one step and of three', () => {
    expect(jsonValue('{"a":"x","b":{"c":{"d":7}}}', ['a'])).toBe('x');
    expect(jsonValue('{"a":"x","b":{"c":{"d":7}}}', ['b', 'c', 'd'])).toBe('7');
    expect(jsonValue('{"a":"x","b":{"c":{"d":7}}}', ['b', 'c'])).toBeNull();
  });

  it('reads a deep document natively, and leaves one with an escape, which the scanner would recurse through, to the engine', () => {
    expect(jsonValue(`{"a":${'['.repeat(600)}${']'.repeat(600)}}`, ['a', 'b'])).toBeNull();
    expect(jsonValue(`{"a":${'['.repeat(600)}"\\n"${']'.repeat(600)}}`, ['a', 'b'])).toBeUndefined();
  });
});
