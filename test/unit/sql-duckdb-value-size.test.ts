/**
 * The size guards of the translation (src/executor/duckdb-sql/value-size.ts), run on a real in-memory DuckDB
 * with a value limit of 1000 bytes: a function refuses to build a larger string or array, and keeps
 * BigQuery's results (NULLs, negative counts, empty ranges) for ordinary sizes.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.ts';
import { translateToDuckDb } from '../../src/executor/duckdb-sql/index.ts';
import { valueTooLargeMessage } from '../../src/executor/duckdb-sql/value-size.ts';
import { initSqlParser, parseSandboxQuery } from '../../src/sql/index.ts';
import type { TableSchema } from '../../src/sql/types.ts';
import { testDuckDb } from '../support/duckdb.ts';

const LIMIT = 1000;
const TABLES: TableSchema[] = [
  {
    name: 'events',
    columns: [
      { name: 'id', type: { kind: 'string' } },
      { name: 'event_message', type: { kind: 'string' } },
    ],
  },
];

let connection: DuckDBConnection;
beforeAll(async () => {
  await initSqlParser();
  // one message longer than the limit, as a stored event may be
  connection = await testDuckDb(TABLES, () => [`('short', 'abc')`, `('long', repeat('z', 2000))`]);
});
afterAll(() => connection?.closeSync());

function translate(sql: string): string {
  const tree = parseSandboxQuery(sql, { allowedTables: ['events'], parameterNames: [] });
  return translateToDuckDb(tree, { tables: TABLES, parameters: {}, now: 0, maxChars: loadConfig({}).SANDBOX_MAX_TRANSLATED_CHARS, maxValueBytes: LIMIT }).sql;
}

async function rows(sql: string): Promise<Record<string, unknown>[]> {
  return (await connection.runAndReadAll(translate(sql))).getRowObjectsJson() as Record<string, unknown>[];
}

/** The single value of `select <expr> as v`. */
async function value(expr: string): Promise<unknown> {
  return (await rows(`select ${expr} as v`))[0]!.v;
}

/** The guard's message for the expression (what the engine passes to the client), or DuckDB's error if another. */
async function refusal(expr: string): Promise<string> {
  try {
    await value(expr);
  } catch (error) {
    const message = (error as Error).message;
    return valueTooLargeMessage(message) ?? message;
  }
  throw new Error(`${expr} was not refused`);
}

const stringRefusal = (name: string) => `${name} would build a string of more than ${LIMIT} bytes, the most a result may hold (SANDBOX_MAX_RESULT_BYTES)`;

describe('a string larger than the limit in bytes is refused before it is built', () => {
  const refused: [string, string][] = [
    [`repeat('ab', 501)`, 'REPEAT'],
    [`repeat('é', 501)`, 'REPEAT'],
    [`repeat('x', 9223372036854775807)`, 'REPEAT'],
    [`lpad('x', 1001, 'y')`, 'LPAD'],
    [`rpad('x', 1001)`, 'RPAD'],
    [`lpad('x', 2000000000, 'y')`, 'LPAD'],
    [`lpad('x', 9223372036854775807)`, 'LPAD'],
    [`rpad('x', 600, 'é')`, 'RPAD'],
    [`concat(repeat('x', 600), repeat('y', 600))`, 'CONCAT'],
    [`repeat('x', 400) || 'a' || repeat('y', 600)`, 'CONCAT'],
    [`replace(repeat('x', 600), 'x', 'yy')`, 'REPLACE'],
    [`regexp_replace(repeat('x', 600), 'x', 'yy')`, 'REGEXP_REPLACE'],
    [`regexp_replace(repeat('x', 400), '(x)', '\\\\1\\\\1\\\\1')`, 'REGEXP_REPLACE'],
    [`array_to_string(split(repeat('a', 300), ''), '-----')`, 'ARRAY_TO_STRING'],
  ];
  for (const [expr, name] of refused) {
    it(expr, async () => expect(await refusal(expr)).toBe(stringRefusal(name)));
  }
});

describe("values up to the limit keep BigQuery's results", () => {
  const cases: [string, unknown][] = [
    [`length(repeat('ab', 500))`, '1000'],
    [`repeat('ab', 0)`, ''],
    [`repeat(cast(null as string), 5)`, null],
    [`repeat('x', cast(null as int64))`, null],
    [`lpad('x', 1000, 'y') = concat(repeat('y', 999), 'x')`, true],
    [`rpad('ab', 5, 'xy')`, 'abxyx'],
    [`lpad('abc', 2)`, 'ab'],
    [`lpad('x', 3)`, '  x'],
    [`lpad(cast(null as string), 5)`, null],
    [`rpad('x', cast(null as int64))`, null],
    [`length(concat(repeat('x', 500), repeat('y', 500)))`, '1000'],
    [`concat('a', null)`, null],
    [`'a' || 'b' || 'c'`, 'abc'],
    [`'a' || null`, null],
    [`replace('a-b-c', '-', '+')`, 'a+b+c'],
    [`replace('abc', '', 'x')`, 'abc'],
    [`replace(cast(null as string), 'a', 'b')`, null],
    // the most each match could add passes the limit, the one match there is does not
    [`length(replace(concat(repeat('a', 900), 'x'), 'x', repeat('y', 50)))`, '950'],
    [`length(regexp_replace(concat(repeat('a', 900), 'x'), 'x', repeat('y', 50)))`, '950'],
    [`regexp_replace('abc', '(b)', '\\\\1\\\\1')`, 'abbc'],
    [`regexp_replace('aaa', 'a', 'b')`, 'bbb'],
    [`array_to_string(['a', null, 'b'], '-')`, 'a-b'],
    [`array_to_string(['a', null, 'b'], '-', 'N')`, 'a-N-b'],
    [`array_to_string(split('a,b'), '')`, 'ab'],
    [`array_to_string(['a'], cast(null as string))`, null],
    [`array_length(generate_array(1, 125))`, '125'],
    [`array_length(generate_array(125, 1, -1))`, '125'],
    [`array_length(generate_array(1, 250, 2))`, '125'],
    [`generate_array(5, 1)`, []],
    [`generate_array(1, cast(null as int64))`, null],
  ];
  for (const [expr, expected] of cases) {
    it(expr, async () => expect(await value(expr)).toEqual(expected));
  }

  it("a negative count or length is still BigQuery's error, and a zero step too", async () => {
    expect(await refusal(`repeat('x', -1)`)).toMatch(/REPEAT: count must not be negative/);
    expect(await refusal(`lpad('x', -1)`)).toMatch(/LPAD: length must not be negative/);
    expect(await refusal(`generate_array(1, 5, 0)`)).toMatch(/GENERATE_ARRAY: step cannot be 0/);
  });

  it('a stored value longer than the limit is read, cut and searched as before: only what would be built is refused', async () => {
    expect(await rows(`select id, lpad(event_message, 3) as p, length(replace(event_message, 'z', 'y')) as n from events order by id`)).toEqual([
      { id: 'long', p: 'zzz', n: '2000' },
      { id: 'short', p: 'abc', n: '3' },
    ]);
    await expect(rows(`select repeat(event_message, 2) as r from events`)).rejects.toThrow(/REPEAT would build a string of more than 1000 bytes/);
  });
});

describe('arrays are counted in elements of 8 bytes', () => {
  const arrayRefusal = `GENERATE_ARRAY would build an array of more than 125 elements, 8 bytes each, more than the ${LIMIT} bytes a result may hold (SANDBOX_MAX_RESULT_BYTES)`;
  for (const expr of [
    'generate_array(1, 126)',
    'generate_array(126, 1, -1)',
    'generate_array(1, 251, 2)',
    'generate_array(-9223372036854775807, 9223372036854775807)',
  ]) {
    it(expr, async () => expect(await refusal(expr)).toBe(arrayRefusal));
  }
});

describe('a guard reads each argument once', () => {
  // upper(...) is more than a column or a literal, so a guard that needs it twice binds it instead of printing it again
  const calls = [
    'repeat(upper(event_message), 2)',
    'lpad(upper(event_message), 10, upper(id))',
    'rpad(upper(event_message), 10)',
    'concat(upper(event_message), upper(id))',
    'upper(event_message) || upper(id) || upper(id)',
    'replace(upper(event_message), upper(id), upper(id))',
    'regexp_replace(upper(event_message), upper(id), upper(id))',
    "array_to_string(split(upper(event_message)), '-', upper(id))",
    'generate_array(length(upper(event_message)), length(upper(id)))',
  ];
  for (const call of calls) {
    it(call, () => {
      const sql = translate(`select ${call} as v from events`);
      const written = call.split('upper(').length - 1;
      expect(sql.split('upper(').length - 1).toBe(written);
    });
  }

  it('and the bound values give the same rows', async () => {
    expect(await rows(`select repeat(upper(event_message), 2) as r, upper(id) || '-' || lower(id) as c from events where id = 'short'`)).toEqual([
      { r: 'ABCABC', c: 'SHORT-short' },
    ]);
  });
});

describe("the engine tells a guard's refusal from other errors", () => {
  it('by its message from the start: other errors, even quoting such a text, are not taken for one', () => {
    const message = `REPEAT would build a string of more than 5 bytes, the most a result may hold (SANDBOX_MAX_RESULT_BYTES)`;
    expect(valueTooLargeMessage(`Invalid Input Error: ${message}`)).toBe(message);
    expect(valueTooLargeMessage('Invalid Input Error: REPEAT: count must not be negative')).toBeUndefined();
    expect(valueTooLargeMessage(`Conversion Error: Could not convert string '${message}' to INT64`)).toBeUndefined();
  });
});
