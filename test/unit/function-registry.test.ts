import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.ts';
import { translateToDuckDb } from '../../src/executor/duckdb-sql/index.ts';
import { InvalidQuery } from '../../src/errors.ts';
import {
  SANDBOX_FUNCTION_NAMES,
  sandboxFunction,
  signatureOf,
  type Parameter,
  type ResultRule,
  type SandboxFunctionName,
  type Signature,
} from '../../src/sql/functions.ts';
import type { Expr, Query } from '../../src/sql/syntax.ts';
import type { SqlType } from '../../src/sql/types.ts';

/**
 * Where the registry (src/sql/functions.ts) and the DuckDB translations must agree and the compiler
 * cannot check it: for every signature of every function, a call built from the registry's parameter
 * kinds translates, prints SQL DuckDB binds, has the registry's result type, and prints each value
 * argument exactly once.
 */

const config = loadConfig({});
const context = {
  tables: [],
  parameters: {},
  now: Date.parse('2024-01-01T01:00:00Z'),
  maxChars: config.SANDBOX_MAX_TRANSLATED_CHARS,
  maxValueBytes: config.SANDBOX_MAX_RESULT_BYTES,
};

const str = (value: string): Expr => ({ kind: 'string', value });
const num = (text: string): Expr => ({ kind: 'number', text });

/** A value of each kind (the first kind a parameter lists is the one used). */
const SAMPLES: Partial<Record<SqlType['kind'], Expr>> = {
  string: str('a'),
  int64: num('2'),
  float64: num('1.5'),
  numeric: { kind: 'typed_literal', type: 'NUMERIC', value: '1.5' },
  bool: { kind: 'boolean', value: true },
  bytes: { kind: 'call', name: 'md5', args: [str('a')], star: false, distinct: false },
  timestamp: { kind: 'typed_literal', type: 'TIMESTAMP', value: '2024-01-01 00:00:00+00' },
  datetime: { kind: 'typed_literal', type: 'DATETIME', value: '2024-01-01 00:00:00' },
  date: { kind: 'typed_literal', type: 'DATE', value: '2024-01-01' },
  json: { kind: 'typed_literal', type: 'JSON', value: '{"a":1}' },
  array: { kind: 'array', elements: [str('a'), str('b')] },
};

/** Arguments that must be literals of a particular form (formats, patterns, paths, zones, counts). */
const LITERALS: Partial<Record<SandboxFunctionName, Record<number, Expr>>> = {
  approx_quantiles: { 1: num('2') },
  round: { 0: { kind: 'typed_literal', type: 'NUMERIC', value: '2.5' }, 2: str('ROUND_HALF_EVEN') },
  format_timestamp: { 0: str('%Y'), 2: str('UTC') },
  format_datetime: { 0: str('%Y') },
  format_date: { 0: str('%Y') },
  parse_timestamp: { 0: str('%Y'), 2: str('UTC') },
  parse_datetime: { 0: str('%Y') },
  parse_date: { 0: str('%Y') },
  regexp_contains: { 1: str('a') },
  regexp_extract: { 1: str('(a)') },
  regexp_extract_all: { 1: str('a') },
  regexp_replace: { 1: str('a') },
  json_value: { 1: str('$.a') },
  json_query: { 1: str('$.a') },
  json_extract: { 1: str('$.a') },
  json_extract_scalar: { 1: str('$.a') },
  json_extract_array: { 1: str('$.a') },
  json_value_array: { 1: str('$.a') },
  timestamp_trunc: { 2: str('UTC') },
  current_datetime: { 0: str('UTC') },
  current_date: { 0: str('UTC') },
  timestamp: { 1: str('UTC') },
  datetime: { 1: str('UTC') },
  date: { 1: str('UTC') },
};

/** The literal an argument must be, where the parameter takes one of its kind (DATE(y, m, d) takes no zone). */
function literalFor(name: SandboxFunctionName, index: number, parameter: Parameter): Expr | undefined {
  const literal = LITERALS[name]?.[index];
  if (!literal || !Array.isArray(parameter)) return undefined;
  const kind = literal.kind === 'number' ? 'int64' : literal.kind === 'typed_literal' ? (literal.type.toLowerCase() as 'numeric') : 'string';
  return parameter.includes(kind) ? literal : undefined;
}

function sampleArgument(name: SandboxFunctionName, index: number, parameter: Parameter): Expr {
  const literal = literalFor(name, index, parameter);
  if (literal) return literal;
  if (parameter === 'date_part') return { kind: 'date_part', part: 'day' };
  if (parameter === 'interval') return { kind: 'interval', value: num('1'), unit: 'day' };
  if (parameter === 'any') return SAMPLES.int64!;
  return SAMPLES[parameter[0]!]!;
}

/** `expr` inside `depth` one-argument COALESCEs: the same value and type, a longer text that is not a literal. */
function grown(expr: Expr, depth: number): Expr {
  let result = expr;
  for (let i = 0; i < depth; i++) result = { kind: 'call', name: 'coalesce', args: [result], star: false, distinct: false };
  return result;
}

function callQuery(name: SandboxFunctionName, args: Expr[], limit = false): Query {
  const fn = sandboxFunction(name)!;
  const call: Expr = {
    kind: 'call',
    name,
    args,
    star: false,
    distinct: false,
    ...(fn.kind === 'window' ? { over: { partitionBy: [], orderBy: [] } } : {}),
    ...(limit ? { limit: num('2') } : {}),
  };
  return {
    kind: 'query',
    with: [],
    body: { kind: 'select', distinct: false, from: [], groupBy: [], items: [{ kind: 'expression', expr: call, alias: 'v' }] },
    orderBy: [],
  };
}

function expectedType(rule: ResultRule, args: string[]): string {
  switch (rule) {
    case 'argument':
      return args[0]!;
    case 'array_of_argument':
      return `array<${args[0]}>`;
    case 'common':
      return args.find((type) => type !== 'bool')!;
    case 'float64_or_numeric':
      return args[0] === 'numeric' ? 'numeric' : 'float64';
    default:
      return rule;
  }
}

const shape = (type: SqlType): string => (type.kind === 'array' ? `array<${type.element.kind}>` : type.kind);

/** Each signature at its fewest and its most arguments (a variadic one: at two). */
function forms(signature: Signature): Parameter[][] {
  const most = signature.variadic ? Math.max(signature.params.length, 2) : signature.params.length;
  const counts = [...new Set([signature.required, most])];
  return counts.map((count) => Array.from({ length: count }, (_, i) => (i < signature.params.length ? signature.params[i]! : signature.params.at(-1)!)));
}

/** Every form, and with LIMIT too where the function takes one. */
const CASES = SANDBOX_FUNCTION_NAMES.flatMap((name) => {
  const fn = sandboxFunction(name)!;
  const limits = fn.modifiers?.includes('limit') ? [false, true] : [false];
  return fn.signatures.flatMap(forms).flatMap((params) => limits.map((limit) => ({ name, params, limit })));
});
const title = (name: string, params: Parameter[], limit: boolean) =>
  `${name}(${params.map((p) => (Array.isArray(p) ? p[0] : p)).join(', ')}${limit ? ' LIMIT 2' : ''})`;

/**
 * How many times each value argument's text is printed: the argument is wrapped in ten and then
 * twenty COALESCE( ... ), and the call's text grows by that many times ten wrappers' text.
 */
function copiesOf(name: SandboxFunctionName, params: Parameter[], limit: boolean): number[] {
  const args = params.map((parameter, i) => sampleArgument(name, i, parameter));
  const printed = (query: Query) => translateToDuckDb(query, context).sql.length;
  return params.flatMap((parameter, i) => {
    if (literalFor(name, i, parameter) || !(Array.isArray(parameter) || parameter === 'any')) return [];
    const wrappers = printed(callQuery('coalesce', [grown(args[i]!, 10)])) - printed(callQuery('coalesce', [args[i]!]));
    const at = (depth: number) =>
      printed(
        callQuery(
          name,
          args.map((arg, j) => (j === i ? grown(arg, depth) : arg)),
          limit,
        ),
      );
    return [(at(20) - at(10)) / wrappers];
  });
}

let connection: DuckDBConnection;
beforeAll(async () => {
  connection = await (await DuckDBInstance.create(':memory:')).connect();
});
afterAll(() => connection?.closeSync());

describe('the function registry and the DuckDB translations agree', () => {
  it('every function is registered with a meaning and at least one signature', () => {
    for (const name of SANDBOX_FUNCTION_NAMES) {
      const fn = sandboxFunction(name)!;
      expect(fn.meaning.length, name).toBeGreaterThan(5);
      expect(fn.signatures.length, name).toBeGreaterThan(0);
      expect(fn.minArgs, name).toBeLessThanOrEqual(fn.maxArgs);
    }
  });

  it('refuses a wrong number of arguments in one place, naming the counts the function takes', () => {
    const refusal = (name: SandboxFunctionName, count: number) => {
      try {
        signatureOf(name, sandboxFunction(name)!, count);
      } catch (error) {
        return error instanceof InvalidQuery ? error.message : 'not InvalidQuery';
      }
      return 'accepted';
    };
    expect(refusal('lower', 2)).toBe('lower takes 1 argument, not 2');
    expect(refusal('substr', 4)).toBe('substr takes 2 to 3 arguments, not 4');
    expect(refusal('concat', 0)).toBe('concat takes at least 1 argument, not 0');
    expect(refusal('datetime', 4)).toBe('datetime takes 1, 2 or 6 arguments, not 4');
    expect(refusal('datetime', 6)).toBe('accepted');
  });

  it.each(CASES.map(({ name, params, limit }) => [title(name, params, limit), name, params, limit] as const))(
    "%s translates to SQL DuckDB binds, with the registry's result type",
    async (_, name, params, limit) => {
      const args = params.map((parameter, i) => sampleArgument(name, i, parameter));
      const { sql, columns } = translateToDuckDb(callQuery(name, args, limit), context);
      const argTypes = args
        .filter((_, i) => Array.isArray(params[i]) || params[i] === 'any')
        .map((arg) => shape(translateToDuckDb(callQuery('coalesce', [arg]), context).columns[0]!.type));
      expect(shape(columns[0]!.type)).toBe(expectedType(sandboxFunction(name)!.result, argTypes));
      // runtime errors of the sample values are fine; a parser, binder or catalog error is a broken translation
      const error = await connection.run(sql).then(
        () => undefined,
        (e: Error) => e.message,
      );
      expect(error ?? '').not.toMatch(/^(Parser|Binder|Catalog) Error/);
    },
  );

  it.each(CASES.map(({ name, params, limit }) => [title(name, params, limit), name, params, limit] as const))(
    '%s prints each value argument at least once and at most as often as the registry bounds',
    (_, name, params, limit) => {
      for (const count of copiesOf(name, params, limit)) {
        expect(count, name).toBeGreaterThanOrEqual(1);
        expect(count, name).toBeLessThanOrEqual(sandboxFunction(name)!.cost.copies);
      }
    },
  );

  it('each bound on copies is reached by some form, so none is looser than the translation', () => {
    for (const name of SANDBOX_FUNCTION_NAMES) {
      const most = Math.max(1, ...CASES.filter((c) => c.name === name).flatMap(({ params, limit }) => copiesOf(name, params, limit)));
      expect(most, name).toBe(sandboxFunction(name)!.cost.copies);
    }
  });
});
