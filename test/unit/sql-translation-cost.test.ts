/**
 * Issue 18, findings 1 and 2: translating a sandboxed query into the engine's SQL does work, and
 * writes text, bounded by the query's size: no format multiplies the formats tried, no function
 * repeats its arguments' text, and the whole translation has a budget (SANDBOX_MAX_TRANSLATED_CHARS)
 * checked while it is built.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.ts';
import { BadParameter, QueryTooExpensive, SandboxViolation } from '../../src/errors.ts';
import { translateToDuckDb } from '../../src/executor/duckdb-sql/index.ts';
import { parseTimestampFormats } from '../../src/executor/duckdb-sql/time-format.ts';
import { DEFAULT_SANDBOX_LIMITS, initSqlParser, parseSandboxQuery } from '../../src/sql/index.ts';
import type { SqlType, TableSchema } from '../../src/sql/types.ts';

const BUDGET = loadConfig({}).SANDBOX_MAX_TRANSLATED_CHARS;

const S: SqlType = { kind: 'string' };
const record = (fields: Record<string, SqlType>): SqlType => ({ kind: 'struct', fields: Object.entries(fields).map(([name, type]) => ({ name, type })) });
const TABLES: TableSchema[] = [
  {
    name: 'edge_logs',
    columns: [
      { name: 'id', type: S },
      { name: 'timestamp', type: { kind: 'timestamp' } },
      { name: 'event_message', type: S },
      { name: 'metadata', type: { kind: 'array', element: record({ request: { kind: 'array', element: record({ method: S, path: S }) } }) } },
    ],
  },
];

beforeAll(() => initSqlParser());

function translate(text: string, maxChars = BUDGET) {
  const query = parseSandboxQuery(text, { allowedTables: ['edge_logs'], parameterNames: ['project'] });
  return translateToDuckDb(query, { tables: TABLES, parameters: { project: 'p' }, now: Date.UTC(2024, 0, 1), maxChars, maxValueBytes: 16 * 1024 * 1024 });
}

function refusal(run: () => unknown): Error {
  try {
    run();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the query to be refused');
}

const nestedSubstr = (depth: number): string => (depth === 0 ? 'event_message' : `substr(${nestedSubstr(depth - 1)},1)`);
/** The issue's query: 256 columns of SUBSTR nested 8 deep (195.6 MB of engine SQL when SUBSTR repeated its argument). */
const NESTED_SUBSTR = `select ${Array(256).fill(nestedSubstr(8)).join(', ')} from edge_logs`;
/** Each ORDER BY reference to the alias `a` stands for the whole 255-argument CONCAT. */
const ALIAS_COPIES = `select concat(${Array(255).fill('event_message').join(', ')}) as a from edge_logs order by ${Array(400)
  .fill(`concat(${Array(10).fill('a').join(', ')})`)
  .join(', ')}`;

describe('format elements', () => {
  it('PARSE_TIMESTAMP tries the fraction and no fraction for each of at most two %E*S', () => {
    expect(parseTimestampFormats('%H:%M:%E*S')).toEqual(['%H:%M:%S.%f', '%H:%M:%S']);
    expect(parseTimestampFormats('%E*S|%E*S')).toHaveLength(4);
  });

  it('refuses a third %E*S before building any format, naming the limit', () => {
    for (const count of [3, 24, 16_000]) {
      const error = refusal(() => parseTimestampFormats('%E*S'.repeat(count)));
      expect(error).toBeInstanceOf(SandboxViolation);
      expect(error.message).toContain(`${count} %E*S elements`);
      expect(error.message).toContain('at most 2');
    }
  });

  it.each(['parse_timestamp', 'parse_date', 'parse_datetime'])('%s shares the bound', (name) => {
    const error = refusal(() => translate(`select ${name}('%Y %E*S %E*S %E*S', event_message) as t from edge_logs`));
    expect(error).toBeInstanceOf(SandboxViolation);
    expect(error.message).toMatch(/3 %E\*S elements.*\(line 1, column 8\)/);
  });

  it('FORMAT_TIMESTAMP writes its timestamp argument once, however many elements need it', () => {
    const timestamp = `timestamp_add(timestamp, interval length(concat(event_message, id)) second)`;
    const once = translate(`select format_timestamp('%e', ${timestamp}) as t from edge_logs`).sql;
    const many = translate(`select format_timestamp('${'%e%s%E*S'.repeat(200)}', ${timestamp}) as t from edge_logs`).sql;
    const occurrences = (sql: string) => sql.split('"edge_logs"."event_message"').length - 1;
    // the argument's own text may name the column more than once (CONCAT's size guard reads it too), but 200 elements add none
    expect(occurrences(once)).toBeGreaterThan(0);
    expect(occurrences(many)).toBe(occurrences(once));
  });
});

describe('the translation budget', () => {
  it('translates the nested-SUBSTR query of the issue to a size linear in it', () => {
    const { sql } = translate(NESTED_SUBSTR);
    expect(sql.length).toBeLessThan(40 * NESTED_SUBSTR.length);
    // one more level of nesting adds about as much as the last one did, rather than tripling the text
    const column = (depth: number) => translate(`select ${nestedSubstr(depth)} as c from edge_logs`).sql.length;
    expect(column(8) - column(7)).toBe(column(7) - column(6));
  });

  it('refuses a query within the input limits whose translation passes the budget, naming the limit and its variable', () => {
    expect(Buffer.byteLength(ALIAS_COPIES)).toBeLessThan(DEFAULT_SANDBOX_LIMITS.maxQueryBytes);
    for (const text of [ALIAS_COPIES, `(${ALIAS_COPIES}) union all (${ALIAS_COPIES})`]) {
      const error = refusal(() => translate(text));
      expect(error).toBeInstanceOf(QueryTooExpensive);
      expect((error as QueryTooExpensive).code).toBe('query_too_expensive');
      expect(error.message).toContain(`more than ${BUDGET} characters`);
      expect(error.message).toContain('SANDBOX_MAX_TRANSLATED_CHARS');
    }
  });

  it('counts the whole query: columns and union branches each within the budget are refused together', () => {
    const column = `concat(${Array(50).fill('event_message').join(', ')})`;
    const single = translate(`select ${column} as c from edge_logs`).sql.length;
    const columns = `select ${Array.from({ length: 4 }, (_, i) => `${column} as c${i}`).join(', ')} from edge_logs`;
    expect(() => translate(columns, 5 * single)).not.toThrow();
    expect(refusal(() => translate(columns, Math.floor(2.5 * single)))).toBeInstanceOf(QueryTooExpensive);
    const union = `select ${column} as c from edge_logs union all select ${column} as c from edge_logs`;
    expect(() => translate(union, 3 * single)).not.toThrow();
    expect(refusal(() => translate(union, Math.floor(1.5 * single)))).toBeInstanceOf(QueryTooExpensive);
  });

  it('stops where the running total passes the budget, not after the whole query is built', () => {
    const column = `concat(${Array(50).fill('event_message').join(', ')})`;
    const single = translate(`select ${column} as c from edge_logs`).sql.length;
    const columns = Array.from({ length: 6 }, (_, i) => `${column} as c${i}`);
    const text = `select ${columns.join(',\n')} from edge_logs`;
    // the third column takes the total past 2.5 columns' worth: the error points at it
    const error = refusal(() => translate(text, Math.floor(2.5 * single)));
    expect(error).toBeInstanceOf(QueryTooExpensive);
    expect(error.message).toContain('(line 3, column 1)');
  });
});

/** String expressions of one argument or two, as the sandbox's functions write them. */
const WRAPPERS: ((x: string, y: string) => string)[] = [
  (x) => `substr(${x}, 2)`,
  (x, y) => `substr(${x}, -2, length(${y}))`,
  (x) => `lower(${x})`,
  (x, y) => `concat(${x}, ${y})`,
  (x, y) => `replace(${x}, 'a', ${y})`,
  (x) => `regexp_extract(${x}, 'a(b)')`,
  (x) => `cast(cast(${x} as int64) as string)`,
  (x) => `safe_cast(safe_cast(${x} as float64) as string)`,
  (x) => `cast(cast(${x} as timestamp) as string)`,
  (x) => `json_value(${x}, '$.a')`,
  (x, y) => `lpad(${x}, 3, ${y})`,
  (x) => `repeat(${x}, 2)`,
  (x, y) => `if(${x} = 'a', ${x}, ${y})`,
  (x, y) => `coalesce(${x}, ${y})`,
  (x) => `split(${x})[safe_offset(0)]`,
  (x, y) => `greatest(${x}, ${y})`,
  (x, y) => `case when ${x} is null then ${y} else ${x} end`,
  (x, y) => `array_to_string([${x}, ${y}], ',')`,
  (x) => `to_json_string(struct(${x} as a))`,
  (x) => `format_timestamp('%Y %e %s %E*S', parse_timestamp('%Y-%m-%d %H:%M:%E*S', ${x}))`,
];
const LEAVES = ['event_message', 'id', "'ab'", 'r.path', 'r.method', '@project', 'cast(null as string)'];
/** Elements both PARSE_TIMESTAMP and FORMAT_TIMESTAMP take. */
const FORMAT_ELEMENTS = ['%Y', '%m', '%d', '%H', '%M', '%S', '%E*S', '%E6S', '%F', '%T', '%z', '-', ' ', '%%'];

const expression = fc.letrec<{ expr: string; call: string }>((tie) => ({
  expr: fc.oneof({ maxDepth: 6, depthSize: 'small' }, fc.constantFrom(...LEAVES), tie('call')),
  call: fc.tuple(fc.nat(WRAPPERS.length - 1), tie('expr'), tie('expr')).map(([i, x, y]) => WRAPPERS[i]!(x, y)),
})).expr;
const format = fc.array(fc.constantFrom(...FORMAT_ELEMENTS), { maxLength: 40 }).map((elements) => elements.join(''));

/** A SELECT over unnested records: columns cycling through a few expressions, and ORDER BY items repeating an alias. */
const select = fc
  .record({
    expressions: fc.array(
      fc.oneof(
        expression,
        format.map((f) => `format_timestamp('${f}', parse_timestamp('${f}', event_message))`),
      ),
      { minLength: 1, maxLength: 4 },
    ),
    columns: fc.integer({ min: 1, max: 256 }),
    orderBy: fc.integer({ min: 0, max: 300 }),
    aliasReferences: fc.integer({ min: 1, max: 12 }),
  })
  .map(({ expressions, columns, orderBy, aliasReferences }) => {
    const from = ' from edge_logs cross join unnest(metadata) as m cross join unnest(m.request) as r';
    const items: string[] = [];
    let length = 0;
    for (let i = 0; i < columns; i++) {
      const item = `${expressions[i % expressions.length]} as c${i}`;
      // stay within the input limit: the property is about what passes it
      if (length + item.length > DEFAULT_SANDBOX_LIMITS.maxQueryBytes / 8) break;
      items.push(item);
      length += item.length + 2;
    }
    const order = Array.from({ length: orderBy }, () => `concat(${Array(aliasReferences).fill('c0').join(', ')})`);
    return { body: `select ${items.join(', ')}${from}`, order: order.length ? ` order by ${order.join(', ')}` : '' };
  });

describe('random queries within the input limits', () => {
  it('translate within the budget, or are refused with a 4xx error', () => {
    let translated = 0;
    fc.assert(
      fc.property(select, fc.integer({ min: 1, max: 3 }), fc.constantFrom(BUDGET, 20_000), (query, branches, maxChars) => {
        const text = branches === 1 ? `${query.body}${query.order}` : Array(branches).fill(`(${query.body}${query.order})`).join(' union all ');
        let sql: string;
        try {
          sql = translate(text, maxChars).sql;
        } catch (error) {
          // refusals are the caller's (4xx) errors; anything else (RangeError: Invalid string length) fails the property
          if (!(error instanceof BadParameter)) throw error;
          return;
        }
        translated++;
        expect(sql.length).toBeLessThanOrEqual(maxChars);
      }),
      { numRuns: 40 },
    );
    expect(translated).toBeGreaterThan(0);
  });
});
