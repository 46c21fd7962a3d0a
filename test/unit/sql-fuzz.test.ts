import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { InvalidQuery, SandboxViolation, SqlSyntax, UnknownTable } from '../../src/errors.ts';
import { loadConfig } from '../../shared/config.ts';
import { initSqlParser, parseSandboxQuery } from '../../src/sql/index.ts';

/** The service refuses a parse that runs longer: no input here may come near it (a blow-up would pass it by far). */
const PARSE_TIMEOUT_MS = loadConfig({}).SANDBOX_PARSE_TIMEOUT_MS;

const TYPED_ERRORS = [SqlSyntax, SandboxViolation, UnknownTable, InvalidQuery];
const TABLES = ['edge_logs', 'postgres_logs'];

beforeAll(() => initSqlParser());

/** Parses and reports how long it took; anything thrown that is not one of our four errors fails the property. */
function parseTimed(text: string): number {
  const started = performance.now();
  try {
    parseSandboxQuery(text, { allowedTables: TABLES, parameterNames: ['project'] });
  } catch (error) {
    if (!TYPED_ERRORS.some((type) => error instanceof type)) throw error;
  }
  return performance.now() - started;
}

const TOKENS = [
  'select',
  'from',
  'where',
  'with',
  'as',
  'union',
  'all',
  'distinct',
  'join',
  'cross',
  'left',
  'on',
  'unnest',
  'group',
  'by',
  'order',
  'limit',
  'offset',
  'case',
  'when',
  'then',
  'else',
  'end',
  'and',
  'or',
  'not',
  'in',
  'is',
  'null',
  'between',
  'like',
  'over',
  'partition',
  'interval',
  'hour',
  'cast',
  'safe_cast',
  'datetime',
  'extract',
  'struct',
  'array',
  'exists',
  'edge_logs',
  'postgres_logs',
  'secret',
  'metadata',
  'm',
  't',
  'id',
  'timestamp',
  'count',
  'countif',
  'timestamp_trunc',
  'regexp_contains',
  'read_csv',
  'getenv',
  '@project',
  '@other',
  '`edge_logs`',
  '`a.b`',
  "'x'",
  '"y"',
  "r'\\d'",
  '1',
  '0.5',
  '*',
  ',',
  '.',
  '(',
  ')',
  '[',
  ']',
  ';',
  '=',
  '<',
  '>=',
  '+',
  '-',
  '/',
  '||',
  '--',
  '\n',
  '/*',
  '*/',
  '#',
  '`',
  "'",
  '"',
  '\\',
  'offset(0)',
  'ordinal',
  'install',
  'attach',
  'pragma',
  'drop',
];

describe('the front end under random input', () => {
  it('throws only typed errors for random strings, quickly', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300, unit: 'binary' }), (text) => {
        expect(parseTimed(text)).toBeLessThan(PARSE_TIMEOUT_MS);
      }),
      { numRuns: 1500 },
    );
  });

  it('throws only typed errors for token soups, quickly', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...TOKENS), { maxLength: 60 }), (tokens) => {
        expect(parseTimed(tokens.join(' '))).toBeLessThan(PARSE_TIMEOUT_MS);
      }),
      { numRuns: 3000 },
    );
  });

  it('throws only typed errors for near-valid queries with one token changed', () => {
    const base =
      'select timestamp_trunc(t.timestamp, hour) as ts, count(*) from edge_logs t cross join unnest(metadata) as m where m.id = @project group by ts order by ts limit 10'.split(
        ' ',
      );
    fc.assert(
      fc.property(fc.nat(base.length - 1), fc.constantFrom(...TOKENS), (index, token) => {
        const text = base.map((word, at) => (at === index ? token : word)).join(' ');
        expect(parseTimed(text)).toBeLessThan(PARSE_TIMEOUT_MS);
      }),
      { numRuns: 2000 },
    );
  });

  it('stays bounded on long repetitive input near the limits', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('(', 'not ', '- ', 'a + ', 'a or ', 'case when 1 then ', 'cast(', 'interval ', 'position(', 'select ', '[', 'struct(', 'f('),
        fc.integer({ min: 1, max: 6000 }),
        (piece, count) => {
          expect(parseTimed(`select ${piece.repeat(count)}1`)).toBeLessThan(PARSE_TIMEOUT_MS);
        },
      ),
      { numRuns: 60 },
    );
  });
});
