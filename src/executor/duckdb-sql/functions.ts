/**
 * BigQuery functions, each printed as DuckDB that gives BigQuery's result: NULL handling, 0- or
 * 1-based positions, partial regex matches, units and rounding follow BigQuery, not DuckDB.
 */
import { InvalidQuery, SandboxViolation } from '../../errors.ts';
import type { Expr, OrderItem, WindowSpec } from '../../sql/syntax.ts';
import type { SqlType } from '../../sql/types.ts';
import { bindOnce } from './bind.ts';
import type { ExprContext } from './expression-context.ts';
import { LAMBDA_PARAMETER, MICROS_PER, float64Literal, quoteString, timestampLiteral } from './literals.ts';
import { formatTimestampSql, parseTimestampFormats } from './time-format.ts';
import { BOOL, DATE, DATETIME, FLOAT64, INT64, STRING, TIMESTAMP, commonType, expect, isOrderable, typeName, unifyTypes, type Typed } from './types.ts';
import { bytes, concatenation, listGuard, stringGuard } from './value-size.ts';

type CallExpr = Extract<Expr, { kind: 'call' }>;

/**
 * The expression printer's entry points a function translation calls back into (arguments in an
 * aggregate's ORDER BY, an OVER clause, INTERVAL arithmetic), handed in by expressions.ts.
 */
export interface ExpressionPrinter {
  translateExpr(expr: Expr, ctx: ExprContext): Typed;
  addInterval(value: Typed, interval: Extract<Expr, { kind: 'interval' }>, subtract: boolean, ctx: ExprContext): Typed;
  orderItemSql(sql: string, item: OrderItem): string;
  windowSql(spec: WindowSpec, ctx: ExprContext): string;
}

interface Call {
  expr: CallExpr;
  ctx: ExprContext;
  printer: ExpressionPrinter;
  /** Argument i translated where the call stands (inside an aggregate: where nested aggregates are refused). */
  arg(i: number): Typed;
  /** The call's window clause, `''` when it has none. */
  over: string;
}

interface FunctionTranslation {
  kind: 'scalar' | 'aggregate' | 'window';
  /** Argument counts allowed: [min, max]. */
  arity: [number, number];
  translate(call: Call): Typed;
}

const scalar = (arity: [number, number], translate: (call: Call) => Typed): FunctionTranslation => ({ kind: 'scalar', arity, translate });
const aggregate = (arity: [number, number], translate: (call: Call) => Typed): FunctionTranslation => ({ kind: 'aggregate', arity, translate });
const analytic = (arity: [number, number], translate: (call: Call) => Typed): FunctionTranslation => ({ kind: 'window', arity, translate });

function fail(call: Call, message: string): never {
  throw new InvalidQuery(`${call.expr.name.toUpperCase()}: ${message}`, call.expr.position);
}

function typed(call: Call, i: number, ...kinds: SqlType['kind'][]): Typed {
  return expect(call.arg(i), kinds, `${call.expr.name.toUpperCase()} argument ${i + 1}`, call.expr.position);
}

/** A string literal argument (a format, a JSON path, a regex that must be known in advance). */
function literalText(call: Call, i: number, what: string): string {
  const value = call.arg(i).stringLiteral;
  if (value === undefined) fail(call, `the ${what} must be a string literal`);
  return value;
}

function datePart(call: Call, i: number): string {
  const arg = call.expr.args[i];
  if (arg?.kind === 'date_part') return arg.part;
  if (arg?.kind === 'identifier' && arg.path.length === 1) return arg.path[0]!.toLowerCase();
  return fail(call, `argument ${i + 1} must be a date part such as MINUTE or HOUR`);
}

/** Scalar functions that return NULL when any argument is NULL in BigQuery but not in DuckDB; each argument printed once. */
function nullIfAnyNull(call: Call, args: Typed[], sql: (refs: string[]) => string): string {
  return bindOnce(call.ctx.budget, args.map((a) => a.sql), (refs) => `(CASE WHEN ${refs.map((ref) => `${ref} IS NULL`).join(' OR ')} THEN NULL ELSE ${sql(refs)} END)`);
}

/** `sql` over the arguments' texts, each printed once however often `sql` reads it. */
function once(call: Call, args: Typed[], sql: (refs: string[]) => string): string {
  return bindOnce(call.ctx.budget, args.map((a) => a.sql), sql);
}

/** The arguments' texts joined, within the query's budget. */
function joined(call: Call, args: readonly string[], separator: string): string {
  return call.ctx.budget.join(args, separator, call.expr.position);
}

function regexArgs(call: Call): [Typed, Typed] {
  return [typed(call, 0, 'string'), typed(call, 1, 'string')];
}

/** Capturing groups of an RE2 pattern: `(` not escaped, not in a class, not `(?:`, `(?i)` (but `(?P<n>` counts). */
function captureGroups(pattern: string): number {
  let groups = 0;
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i];
    if (char === '\\') i++;
    else if (inClass) inClass = char !== ']';
    else if (char === '[') inClass = true;
    else if (char === '(' && (pattern[i + 1] !== '?' || pattern.startsWith('?P<', i + 1))) groups++;
  }
  return groups;
}

const TRUNC_UNITS = new Set(['microsecond', 'millisecond', 'second', 'minute', 'hour', 'day', 'isoweek', 'month', 'quarter', 'year', 'isoyear']);

function truncate(call: Call, value: Typed, part: string): string {
  if (part === 'week' || part === 'week(sunday)') {
    // BigQuery's WEEK starts on Sunday; DuckDB's week is ISO (Monday): shift by a day either side
    return `(date_trunc('week', ${value.sql} + INTERVAL 1 DAY) - INTERVAL 1 DAY)`;
  }
  if (!TRUNC_UNITS.has(part)) fail(call, `unsupported date part ${part.toUpperCase()}`);
  const unit = part === 'isoweek' ? 'week' : part;
  return `date_trunc('${unit}', ${value.sql})`;
}

/**
 * `sql` over the JSON text (read several times, so printed once) and the JSONPath argument; only
 * `$`, `.name` and `[n]` steps, which both engines read alike.
 */
function withJson(call: Call, sql: (text: string, path: string) => string): string {
  const json = typed(call, 0, 'string', 'json');
  const path = call.expr.args.length > 1 ? literalText(call, 1, 'JSONPath') : '$';
  if (!/^\$(\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])*$/.test(path)) fail(call, `JSONPath ${JSON.stringify(path)} is not supported (use $.a.b or $.a[0])`);
  const text = json.type.kind === 'json' ? `CAST(${json.sql} AS VARCHAR)` : json.sql;
  return bindOnce(call.ctx.budget, [text], ([value]) => sql(value!, quoteString(path)));
}

/** JSON_QUERY / JSON_EXTRACT: the value's compact JSON text (strings keep their quotes); NULL for text that is not JSON. */
function jsonText(call: Call): Typed {
  return { sql: withJson(call, (text, path) => `(CASE WHEN json_valid(${text}) THEN CAST(json_extract(${text}, ${path}) AS VARCHAR) END)`), type: STRING };
}

/**
 * JSON_EXTRACT_ARRAY (elements as JSON text) and JSON_VALUE_ARRAY (unquoted scalars; NULL when an
 * element is an object or array); NULL when the value is not an array.
 */
function jsonArray(call: Call, scalars: boolean): Typed {
  const sql = withJson(call, (text, path) => {
    const elements = `CAST(json_extract(${text}, ${path}) AS JSON[])`;
    const e = LAMBDA_PARAMETER;
    const converted = scalars
      ? `(CASE WHEN list_bool_or(list_transform(${elements}, lambda ${e}: json_type(${e}) IN ('OBJECT', 'ARRAY'))) THEN NULL ELSE list_transform(${elements}, lambda ${e}: json_extract_string(${e}, '$')) END)`
      : `list_transform(${elements}, lambda ${e}: CAST(${e} AS VARCHAR))`;
    return `(CASE WHEN json_valid(${text}) AND json_type(${text}, ${path}) = 'ARRAY' THEN ${converted} END)`;
  });
  return { sql, type: { kind: 'array', element: STRING } };
}

function jsonScalar(call: Call): Typed {
  // BigQuery: the unquoted scalar; NULL for an object, an array or text that is not JSON
  const sql = withJson(call, (text, path) => `(CASE WHEN json_valid(${text}) AND json_type(${text}, ${path}) NOT IN ('OBJECT', 'ARRAY') THEN json_extract_string(${text}, ${path}) END)`);
  return { sql, type: STRING };
}

function minMax(call: Call, fn: 'min' | 'max'): Typed {
  const value = call.arg(0);
  if (!isOrderable(value.type)) fail(call, `cannot order values of type ${typeName(value.type)}`);
  return { sql: `${fn}(${value.sql})${call.over}`, type: value.type };
}

function greatestLeast(call: Call, fn: 'greatest' | 'least'): Typed {
  const args = call.expr.args.map((_, i) => call.arg(i));
  const type = unifyTypes(args, call.expr.name.toUpperCase(), call.expr.position);
  // DuckDB skips NULL arguments; BigQuery returns NULL
  return { sql: nullIfAnyNull(call, args, (refs) => `${fn}(${refs.join(', ')})`), type };
}

function timestampFromEpoch(call: Call, unit: 'second' | 'millisecond' | 'microsecond'): Typed {
  const value = typed(call, 0, 'int64');
  const micros = unit === 'microsecond' ? value.sql : `(${value.sql} * ${MICROS_PER[unit]})`;
  return { sql: `make_timestamptz(${micros})`, type: TIMESTAMP };
}

function epochOf(call: Call, unit: 'second' | 'millisecond' | 'microsecond'): Typed {
  const value = typed(call, 0, 'timestamp');
  // BigQuery truncates to the start of the unit (floor, also before 1970)
  const sql = unit === 'microsecond' ? `epoch_us(${value.sql})` : `CAST(floor(epoch_us(${value.sql}) / ${MICROS_PER[unit]}) AS BIGINT)`;
  return { sql, type: INT64 };
}

function rankFunction(name: string): FunctionTranslation {
  return analytic([0, 0], (call) => ({ sql: `${name}()${call.over}`, type: name === 'percent_rank' || name === 'cume_dist' ? FLOAT64 : INT64 }));
}

function offsetFunction(name: 'lag' | 'lead'): FunctionTranslation {
  return analytic([1, 3], (call) => {
    const value = call.arg(0);
    const args = [value.sql];
    if (call.expr.args.length > 1) args.push(typed(call, 1, 'int64').sql);
    if (call.expr.args.length > 2) {
      const fallback = call.arg(2);
      if (!commonType(value.type, fallback.type)) fail(call, `the default must have type ${typeName(value.type)}`);
      args.push(fallback.sql);
    }
    return { sql: `${name}(${joined(call, args, ', ')})${call.over}`, type: value.type };
  });
}

export const FUNCTIONS: Record<string, FunctionTranslation> = {
  // aggregates
  count: aggregate([0, 1], (call) => {
    if (call.expr.star) return { sql: `count(*)${call.over}`, type: INT64 };
    if (call.expr.args.length !== 1) fail(call, 'takes one argument or *');
    return { sql: `count(${call.expr.distinct ? 'DISTINCT ' : ''}${call.arg(0).sql})${call.over}`, type: INT64 };
  }),
  // count(CASE ...) is BIGINT already; DuckDB's count_if would be HUGEINT
  countif: aggregate([1, 1], (call) => ({ sql: `count(CASE WHEN ${typed(call, 0, 'bool').sql} THEN 1 END)${call.over}`, type: INT64 })),
  sum: aggregate([1, 1], (call) => {
    const value = typed(call, 0, 'int64', 'float64', 'numeric');
    const sql = `sum(${call.expr.distinct ? 'DISTINCT ' : ''}${value.sql})${call.over}`;
    // DuckDB sums BIGINT into HUGEINT; the cast back fails on overflow, as BigQuery does
    if (value.type.kind === 'int64' || value.type.kind === 'unknown') return { sql: `CAST(${sql} AS BIGINT)`, type: INT64 };
    return { sql: value.type.kind === 'numeric' ? `CAST(${sql} AS DECIMAL(38,9))` : sql, type: value.type };
  }),
  avg: aggregate([1, 1], (call) => {
    const value = typed(call, 0, 'int64', 'float64', 'numeric');
    return { sql: `avg(${call.expr.distinct ? 'DISTINCT ' : ''}CAST(${value.sql} AS DOUBLE))${call.over}`, type: FLOAT64 };
  }),
  min: aggregate([1, 1], (call) => minMax(call, 'min')),
  max: aggregate([1, 1], (call) => minMax(call, 'max')),
  any_value: aggregate([1, 1], (call) => {
    const value = call.arg(0);
    return { sql: `any_value(${value.sql})${call.over}`, type: value.type };
  }),
  logical_and: aggregate([1, 1], (call) => ({ sql: `bool_and(${typed(call, 0, 'bool').sql})${call.over}`, type: BOOL })),
  logical_or: aggregate([1, 1], (call) => ({ sql: `bool_or(${typed(call, 0, 'bool').sql})${call.over}`, type: BOOL })),
  // exact distinct count: a valid (perfect) approximation
  approx_count_distinct: aggregate([1, 1], (call) => ({ sql: `count(DISTINCT ${call.arg(0).sql})${call.over}`, type: INT64 })),
  string_agg: aggregate([1, 2], (call) => {
    const value = typed(call, 0, 'string');
    const separator = call.expr.args.length > 1 ? typed(call, 1, 'string').sql : `','`;
    const order = call.expr.orderBy?.length ? ` ORDER BY ${joined(call, call.expr.orderBy.map((o) => call.printer.orderItemSql(call.printer.translateExpr(o.expr, call.ctx).sql, o)), ', ')}` : '';
    return { sql: `string_agg(${call.expr.distinct ? 'DISTINCT ' : ''}${value.sql}, ${separator}${order})${call.over}`, type: STRING };
  }),
  array_agg: aggregate([1, 1], (call) => {
    const value = call.arg(0);
    if (value.type.kind === 'array') fail(call, 'BigQuery has no arrays of arrays');
    const order = call.expr.orderBy?.length ? ` ORDER BY ${joined(call, call.expr.orderBy.map((o) => call.printer.orderItemSql(call.printer.translateExpr(o.expr, call.ctx).sql, o)), ', ')}` : '';
    const distinct = call.expr.distinct ? 'DISTINCT ' : '';
    if (call.expr.ignoreNulls) return { sql: `list(${distinct}${value.sql}${order}) FILTER (WHERE ${value.sql} IS NOT NULL)${call.over}`, type: { kind: 'array', element: value.type } };
    // BigQuery refuses to build an array holding NULL; DuckDB would keep it
    const nulls = `count(*) FILTER (WHERE ${value.sql} IS NULL)${call.over}`;
    return {
      sql: `(CASE WHEN ${nulls} > 0 THEN error('ARRAY_AGG: Array cannot have a null element; use IGNORE NULLS') ELSE list(${distinct}${value.sql}${order})${call.over} END)`,
      type: { kind: 'array', element: value.type },
    };
  }),
  approx_quantiles: aggregate([2, 2], (call) => {
    const value = call.arg(0);
    if (!isOrderable(value.type)) fail(call, `cannot order values of type ${typeName(value.type)}`);
    const count = call.expr.args[1];
    const buckets = count?.kind === 'number' && /^\d+$/.test(count.text) ? Number(count.text) : NaN;
    if (!(buckets >= 1 && buckets <= 1000)) fail(call, 'the number of quantiles must be an integer literal from 1 to 1000');
    // N+1 values: the minimum, the N-1 inner quantiles, the maximum
    const fractions = Array.from({ length: buckets + 1 }, (_, i) => float64Literal(String(i / buckets)));
    return { sql: `quantile_disc(${value.sql}, [${fractions.join(', ')}])${call.over}`, type: { kind: 'array', element: value.type } };
  }),

  stddev: aggregate([1, 1], (call) => statistic(call, 'stddev_samp')),
  stddev_samp: aggregate([1, 1], (call) => statistic(call, 'stddev_samp')),
  stddev_pop: aggregate([1, 1], (call) => statistic(call, 'stddev_pop')),
  variance: aggregate([1, 1], (call) => statistic(call, 'var_samp')),
  var_samp: aggregate([1, 1], (call) => statistic(call, 'var_samp')),
  var_pop: aggregate([1, 1], (call) => statistic(call, 'var_pop')),

  // window-only functions
  row_number: rankFunction('row_number'),
  rank: rankFunction('rank'),
  dense_rank: rankFunction('dense_rank'),
  percent_rank: rankFunction('percent_rank'),
  cume_dist: rankFunction('cume_dist'),
  ntile: analytic([1, 1], (call) => ({ sql: `ntile(${typed(call, 0, 'int64').sql})${call.over}`, type: INT64 })),
  lag: offsetFunction('lag'),
  lead: offsetFunction('lead'),
  first_value: analytic([1, 1], (call) => {
    const value = call.arg(0);
    return { sql: `first_value(${value.sql}${call.expr.ignoreNulls ? ' IGNORE NULLS' : ''})${call.over}`, type: value.type };
  }),
  last_value: analytic([1, 1], (call) => {
    const value = call.arg(0);
    return { sql: `last_value(${value.sql}${call.expr.ignoreNulls ? ' IGNORE NULLS' : ''})${call.over}`, type: value.type };
  }),

  // conditionals
  if: scalar([3, 3], (call) => {
    const [condition, then, otherwise] = [typed(call, 0, 'bool'), call.arg(1), call.arg(2)];
    return { sql: `(CASE WHEN ${condition.sql} THEN ${then.sql} ELSE ${otherwise.sql} END)`, type: unifyTypes([then, otherwise], 'IF', call.expr.position) };
  }),
  ifnull: scalar([2, 2], (call) => {
    const args = [call.arg(0), call.arg(1)];
    return { sql: `coalesce(${args[0]!.sql}, ${args[1]!.sql})`, type: unifyTypes(args, 'IFNULL', call.expr.position) };
  }),
  coalesce: scalar([1, 255], (call) => {
    const args = call.expr.args.map((_, i) => call.arg(i));
    return { sql: `coalesce(${joined(call, args.map((a) => a.sql), ', ')})`, type: unifyTypes(args, 'COALESCE', call.expr.position) };
  }),
  nullif: scalar([2, 2], (call) => {
    const [value, other] = [call.arg(0), call.arg(1)];
    if (!commonType(value.type, other.type)) fail(call, `cannot compare ${typeName(value.type)} with ${typeName(other.type)}`);
    return { sql: `nullif(${value.sql}, ${other.sql})`, type: value.type };
  }),
  greatest: scalar([1, 255], (call) => greatestLeast(call, 'greatest')),
  least: scalar([1, 255], (call) => greatestLeast(call, 'least')),

  // strings
  concat: scalar([1, 255], (call) => {
    const args = call.expr.args.map((_, i) => typed(call, i, 'string'));
    // DuckDB's concat skips NULLs; BigQuery's (like ||) returns NULL
    return { sql: concatenation(args.map((a) => a.sql), call.ctx.budget, call.ctx.maxValueBytes), type: STRING };
  }),
  length: scalar([1, 1], (call) => {
    const value = typed(call, 0, 'string', 'bytes');
    return { sql: `CAST(${value.type.kind === 'bytes' ? 'octet_length' : 'length'}(${value.sql}) AS BIGINT)`, type: INT64 };
  }),
  char_length: scalar([1, 1], (call) => ({ sql: `CAST(length(${typed(call, 0, 'string').sql}) AS BIGINT)`, type: INT64 })),
  lower: scalar([1, 1], (call) => ({ sql: `lower(${typed(call, 0, 'string').sql})`, type: STRING })),
  upper: scalar([1, 1], (call) => ({ sql: `upper(${typed(call, 0, 'string').sql})`, type: STRING })),
  substr: scalar([2, 3], (call) => substring(call)),
  substring: scalar([2, 3], (call) => substring(call)),
  strpos: scalar([2, 2], (call) => ({ sql: `CAST(strpos(${typed(call, 0, 'string').sql}, ${typed(call, 1, 'string').sql}) AS BIGINT)`, type: INT64 })),
  starts_with: scalar([2, 2], (call) => ({ sql: `starts_with(${typed(call, 0, 'string').sql}, ${typed(call, 1, 'string').sql})`, type: BOOL })),
  ends_with: scalar([2, 2], (call) => ({ sql: `ends_with(${typed(call, 0, 'string').sql}, ${typed(call, 1, 'string').sql})`, type: BOOL })),
  trim: scalar([1, 2], (call) => trimFunction(call, 'trim')),
  ltrim: scalar([1, 2], (call) => trimFunction(call, 'ltrim')),
  rtrim: scalar([1, 2], (call) => trimFunction(call, 'rtrim')),
  replace: scalar([3, 3], (call) => {
    const args = [typed(call, 0, 'string'), typed(call, 1, 'string'), typed(call, 2, 'string')];
    // BigQuery leaves the string alone when the searched text is empty
    const sql = once(call, args, ([value, from, to]) => {
      const replaced = `replace(${value}, ${from}, ${to})`;
      // a longer text grows the string: by the most one match per length of the searched text could add, and
      // only past the limit are the matches counted
      const growth = `(${bytes(to!)} - ${bytes(from!)})`;
      const most = `${bytes(value!)} + ${bytes(value!)} / ${bytes(from!)} * ${growth}`;
      const exact = `${bytes(value!)} + (${bytes(value!)} - ${bytes(`replace(${value}, ${from}, '')`)}) / ${bytes(from!)} * ${growth}`;
      const limit = call.ctx.maxValueBytes;
      return `(CASE WHEN ${from} = '' THEN ${value} WHEN ${growth} > 0 AND ${most} > ${limit} THEN (CASE ${stringGuard('REPLACE', exact, limit)} ELSE ${replaced} END) ELSE ${replaced} END)`;
    });
    return { sql, type: STRING };
  }),
  split: scalar([1, 2], (call) => {
    const value = typed(call, 0, 'string');
    const separator = call.expr.args.length > 1 ? typed(call, 1, 'string').sql : `','`;
    return { sql: `string_split(${value.sql}, ${separator})`, type: { kind: 'array', element: STRING } };
  }),
  regexp_contains: scalar([2, 2], (call) => {
    const [value, pattern] = regexArgs(call);
    // a partial match, as BigQuery's (regexp_full_match would anchor it)
    return { sql: `regexp_matches(${value.sql}, ${pattern.sql})`, type: BOOL };
  }),
  regexp_extract: scalar([2, 2], (call) => {
    const [value, pattern] = regexArgs(call);
    const groups = captureGroups(literalText(call, 1, 'regular expression'));
    if (groups > 1) fail(call, 'the regular expression may have at most one capturing group');
    // the capture group if there is one, else the whole match; NULL (not '') when nothing matches
    const sql = once(call, [value, pattern], ([text, regex]) => `(CASE WHEN regexp_matches(${text}, ${regex}) THEN regexp_extract(${text}, ${regex}, ${groups}) END)`);
    return { sql, type: STRING };
  }),
  regexp_replace: scalar([3, 3], (call) => {
    const [value, pattern] = regexArgs(call);
    const replacement = typed(call, 2, 'string');
    // each \1 in the replacement copies a match, and the matches together are no longer than the value
    const copies = replacement.stringLiteral === undefined ? undefined : (replacement.stringLiteral.match(/\\[0-9]/g) ?? []).length;
    const sql = once(call, [value, pattern, replacement], ([text, regex, to]) => {
      // every match, as BigQuery; DuckDB replaces only the first without 'g'
      const replaced = `regexp_replace(${text}, ${regex}, ${to}, 'g')`;
      const copied = `${bytes(text!)} * (1 + ${copies ?? `len(regexp_extract_all(${to}, '\\\\[0-9]'))`})`;
      // at most one match per character and one more; only past the limit are the matches counted
      const most = `${copied} + (${bytes(text!)} + 1) * ${bytes(to!)}`;
      const exact = `${copied} + len(regexp_extract_all(${text}, ${regex})) * ${bytes(to!)}`;
      const limit = call.ctx.maxValueBytes;
      return `(CASE WHEN ${most} > ${limit} THEN (CASE ${stringGuard('REGEXP_REPLACE', exact, limit)} ELSE ${replaced} END) ELSE ${replaced} END)`;
    });
    return { sql, type: STRING };
  }),
  json_value: scalar([1, 2], jsonScalar),
  json_query: scalar([2, 2], jsonText),
  json_extract: scalar([2, 2], jsonText),
  json_extract_array: scalar([1, 2], (call) => jsonArray(call, false)),
  json_value_array: scalar([1, 2], (call) => jsonArray(call, true)),
  regexp_extract_all: scalar([2, 2], (call) => {
    const [value, pattern] = regexArgs(call);
    const groups = captureGroups(literalText(call, 1, 'regular expression'));
    if (groups > 1) fail(call, 'the regular expression may have at most one capturing group');
    return { sql: `regexp_extract_all(${value.sql}, ${pattern.sql}, ${groups})`, type: { kind: 'array', element: STRING } };
  }),
  json_extract_scalar: scalar([1, 2], jsonScalar),

  // DuckDB's md5 and sha256 give hex text; BigQuery's give BYTES, which TO_HEX turns into hex text
  md5: scalar([1, 1], (call) => ({ sql: `unhex(md5(${typed(call, 0, 'string').sql}))`, type: { kind: 'bytes' } })),
  sha256: scalar([1, 1], (call) => ({ sql: `unhex(sha256(${typed(call, 0, 'string').sql}))`, type: { kind: 'bytes' } })),
  to_hex: scalar([1, 1], (call) => ({ sql: `lower(hex(${typed(call, 0, 'bytes').sql}))`, type: STRING })),
  parse_json: scalar([1, 1], (call) => ({ sql: `CAST(${typed(call, 0, 'string').sql} AS JSON)`, type: { kind: 'json' } })),
  // DuckDB writes timestamps inside JSON as `2024-01-01 00:00:00+00` where BigQuery writes `2024-01-01T00:00:00Z`
  to_json_string: scalar([1, 1], (call) => ({ sql: `CAST(to_json(${call.arg(0).sql}) AS VARCHAR)`, type: STRING })),
  // on strings only: BigQuery also searches inside records and arrays
  contains_substr: scalar([2, 2], (call) => ({ sql: `contains(lower(${typed(call, 0, 'string').sql}), lower(${typed(call, 1, 'string').sql}))`, type: BOOL })),

  // numbers
  abs: scalar([1, 1], (call) => {
    const value = typed(call, 0, 'int64', 'float64', 'numeric');
    return { sql: `abs(${value.sql})`, type: value.type };
  }),
  round: scalar([1, 2], (call) => {
    const value = typed(call, 0, 'float64', 'int64', 'numeric');
    const digits = call.expr.args.length > 1 ? `CAST(${typed(call, 1, 'int64').sql} AS INTEGER)` : '0';
    // DuckDB's round of a DOUBLE rounds half away from zero, as BigQuery; INT64 input gives FLOAT64
    const type = value.type.kind === 'numeric' ? value.type : FLOAT64;
    return { sql: `round(CAST(${value.sql} AS ${type.kind === 'numeric' ? 'DECIMAL(38,9)' : 'DOUBLE'}), ${digits})`, type };
  }),
  floor: scalar([1, 1], (call) => ({ sql: `floor(CAST(${typed(call, 0, 'float64', 'int64').sql} AS DOUBLE))`, type: FLOAT64 })),
  ceil: scalar([1, 1], (call) => ({ sql: `ceil(CAST(${typed(call, 0, 'float64', 'int64').sql} AS DOUBLE))`, type: FLOAT64 })),
  ceiling: scalar([1, 1], (call) => ({ sql: `ceil(CAST(${typed(call, 0, 'float64', 'int64').sql} AS DOUBLE))`, type: FLOAT64 })),
  mod: scalar([2, 2], (call) => {
    const [a, b] = [typed(call, 0, 'int64'), typed(call, 1, 'int64')];
    // the sign of the dividend, as DuckDB's %; a zero divisor is an error in BigQuery
    return { sql: once(call, [a, b], ([x, y]) => `(CASE WHEN ${y} = 0 THEN error('division by zero: MOD(x, 0)') ELSE ${x} % ${y} END)`), type: INT64 };
  }),
  div: scalar([2, 2], (call) => {
    const [a, b] = [typed(call, 0, 'int64'), typed(call, 1, 'int64')];
    // DuckDB's // on BIGINT truncates toward zero, as BigQuery's DIV
    return { sql: once(call, [a, b], ([x, y]) => `(CASE WHEN ${y} = 0 THEN error('division by zero: DIV(x, 0)') ELSE ${x} // ${y} END)`), type: INT64 };
  }),
  safe_divide: scalar([2, 2], (call) => {
    const [a, b] = [typed(call, 0, 'int64', 'float64'), typed(call, 1, 'int64', 'float64')];
    return { sql: once(call, [a, b], ([x, y]) => `(CASE WHEN CAST(${y} AS DOUBLE) = 0 THEN NULL ELSE CAST(${x} AS DOUBLE) / CAST(${y} AS DOUBLE) END)`), type: FLOAT64 };
  }),
  ieee_divide: scalar([2, 2], (call) => ({ sql: `(CAST(${typed(call, 0, 'int64', 'float64').sql} AS DOUBLE) / CAST(${typed(call, 1, 'int64', 'float64').sql} AS DOUBLE))`, type: FLOAT64 })),

  sqrt: scalar([1, 1], (call) => mathFunction(call, 'sqrt', (x) => `${x} < 0`)),
  ln: scalar([1, 1], (call) => mathFunction(call, 'ln', (x) => `${x} <= 0`)),
  log10: scalar([1, 1], (call) => mathFunction(call, 'log10', (x) => `${x} <= 0`)),
  exp: scalar([1, 1], (call) => mathFunction(call, 'exp')),
  log: scalar([1, 2], (call) => {
    // BigQuery's LOG(x) is the natural logarithm (DuckDB's log is base 10)
    if (call.expr.args.length === 1) return mathFunction(call, 'ln', (x) => `${x} <= 0`);
    const [x, base] = [typed(call, 0, 'int64', 'float64'), typed(call, 1, 'int64', 'float64')];
    return { sql: `(ln(CAST(${x.sql} AS DOUBLE)) / ln(CAST(${base.sql} AS DOUBLE)))`, type: FLOAT64 };
  }),
  pow: scalar([2, 2], (call) => ({ sql: `pow(CAST(${typed(call, 0, 'int64', 'float64').sql} AS DOUBLE), CAST(${typed(call, 1, 'int64', 'float64').sql} AS DOUBLE))`, type: FLOAT64 })),
  power: scalar([2, 2], (call) => ({ sql: `pow(CAST(${typed(call, 0, 'int64', 'float64').sql} AS DOUBLE), CAST(${typed(call, 1, 'int64', 'float64').sql} AS DOUBLE))`, type: FLOAT64 })),
  sign: scalar([1, 1], (call) => {
    const value = typed(call, 0, 'int64', 'float64');
    return { sql: `CAST(sign(${value.sql}) AS ${value.type.kind === 'float64' ? 'DOUBLE' : 'BIGINT'})`, type: value.type.kind === 'float64' ? FLOAT64 : INT64 };
  }),
  trunc: scalar([1, 1], (call) => ({ sql: `trunc(CAST(${typed(call, 0, 'float64', 'int64').sql} AS DOUBLE))`, type: FLOAT64 })),
  reverse: scalar([1, 1], (call) => ({ sql: `reverse(${typed(call, 0, 'string').sql})`, type: STRING })),
  repeat: scalar([2, 2], (call) => {
    const [value, times] = [typed(call, 0, 'string'), typed(call, 1, 'int64')];
    const sql = once(call, [value, times], ([text, count]) =>
      `(CASE WHEN ${count} < 0 THEN error('REPEAT: count must not be negative') ${stringGuard('REPEAT', `${bytes(text!)} * ${count}`, call.ctx.maxValueBytes)} ELSE repeat(${text}, ${count}) END)`);
    return { sql, type: STRING };
  }),
  left: scalar([2, 2], (call) => ({ sql: `left(${typed(call, 0, 'string').sql}, ${typed(call, 1, 'int64').sql})`, type: STRING })),
  right: scalar([2, 2], (call) => ({ sql: `right(${typed(call, 0, 'string').sql}, ${typed(call, 1, 'int64').sql})`, type: STRING })),
  lpad: scalar([2, 3], (call) => pad(call, 'lpad')),
  rpad: scalar([2, 3], (call) => pad(call, 'rpad')),

  // arrays
  array_reverse: scalar([1, 1], (call) => {
    const value = call.arg(0);
    if (value.type.kind !== 'array') fail(call, `expects an array, got ${typeName(value.type)}`);
    return { sql: `list_reverse(${value.sql})`, type: value.type };
  }),
  array_concat: scalar([1, 255], (call) => {
    const arrays = call.expr.args.map((_, i) => call.arg(i));
    const type = unifyTypes(arrays, 'ARRAY_CONCAT', call.expr.position);
    if (type.kind !== 'array') fail(call, `expects arrays, got ${typeName(type)}`);
    // NULL if any array is NULL (DuckDB's list_concat would treat it as empty)
    return { sql: nullIfAnyNull(call, arrays, (refs) => `flatten([${refs.join(', ')}])`), type };
  }),
  generate_array: scalar([2, 3], (call) => {
    const [start, end] = [typed(call, 0, 'int64'), typed(call, 1, 'int64')];
    const step = call.expr.args.length > 2 ? typed(call, 2, 'int64') : { sql: 'CAST(1 AS BIGINT)', type: INT64 };
    // BigQuery refuses a zero step; an empty range is an empty array in both
    const sql = once(call, [start, end, step], ([from, to, by]) => {
      const elements = `floor((CAST(${to} AS DOUBLE) - CAST(${from} AS DOUBLE)) / ${by}) + 1`;
      return `(CASE WHEN ${by} = 0 THEN error('GENERATE_ARRAY: step cannot be 0') ${listGuard('GENERATE_ARRAY', elements, call.ctx.maxValueBytes)} ELSE generate_series(${from}, ${to}, ${by}) END)`;
    });
    return { sql, type: { kind: 'array', element: INT64 } };
  }),
  array_length: scalar([1, 1], (call) => {
    const value = call.arg(0);
    if (value.type.kind !== 'array' && value.type.kind !== 'unknown') fail(call, `expects an array, got ${typeName(value.type)}`);
    return { sql: `CAST(len(${value.sql}) AS BIGINT)`, type: INT64 };
  }),
  array_to_string: scalar([2, 3], (call) => {
    const value = call.arg(0);
    if (value.type.kind !== 'array' || value.type.element.kind !== 'string') fail(call, `expects ARRAY<STRING>, got ${typeName(value.type)}`);
    const separator = typed(call, 1, 'string');
    // NULL elements are skipped unless a replacement text is given
    const elements = call.expr.args.length > 2 ? `list_transform(${value.sql}, lambda ${LAMBDA_PARAMETER}: coalesce(${LAMBDA_PARAMETER}, ${typed(call, 2, 'string').sql}))` : value.sql;
    // the elements only are bound once: DuckDB takes only a constant separator, which a bound one is not
    const sql = bindOnce(call.ctx.budget, [elements], ([list]) => {
      const texts = `coalesce(list_sum(list_transform(${list}, lambda ${LAMBDA_PARAMETER}: strlen(${LAMBDA_PARAMETER}))), 0)`;
      const separators = `greatest(len(list_filter(${list}, lambda ${LAMBDA_PARAMETER}: ${LAMBDA_PARAMETER} IS NOT NULL)) - 1, 0)`;
      const size = `CAST(${texts} AS DOUBLE) + ${separators} * ${bytes(separator.sql)}`;
      return `(CASE WHEN ${separator.sql} IS NULL THEN NULL ${stringGuard('ARRAY_TO_STRING', size, call.ctx.maxValueBytes)} ELSE array_to_string(${list}, ${separator.sql}) END)`;
    });
    return { sql, type: STRING };
  }),

  // time
  current_timestamp: scalar([0, 0], (call) => ({ sql: timestampLiteral(BigInt(call.ctx.now) * 1000n), type: TIMESTAMP })),
  timestamp_trunc: scalar([2, 3], (call) => {
    const value = typed(call, 0, 'timestamp', 'datetime');
    utcOnly(call, 2);
    return { sql: truncate(call, value, datePart(call, 1)), type: value.type.kind === 'unknown' ? TIMESTAMP : value.type };
  }),
  datetime_trunc: scalar([2, 2], (call) => {
    const value = typed(call, 0, 'datetime');
    return { sql: truncate(call, value, datePart(call, 1)), type: value.type };
  }),
  date_trunc: scalar([2, 2], (call) => {
    const value = typed(call, 0, 'date');
    return { sql: `CAST(${truncate(call, value, datePart(call, 1))} AS DATE)`, type: DATE };
  }),
  timestamp_add: scalar([2, 2], (call) => intervalArithmetic(call, false)),
  timestamp_sub: scalar([2, 2], (call) => intervalArithmetic(call, true)),
  datetime_add: scalar([2, 2], (call) => intervalArithmetic(call, false)),
  datetime_sub: scalar([2, 2], (call) => intervalArithmetic(call, true)),
  date_add: scalar([2, 2], (call) => intervalArithmetic(call, false)),
  date_sub: scalar([2, 2], (call) => intervalArithmetic(call, true)),
  date_diff: scalar([3, 3], (call) => {
    const [a, b] = [typed(call, 0, 'date'), typed(call, 1, 'date')];
    const part = datePart(call, 2);
    // BigQuery counts part boundaries crossed. DuckDB's date_diff does so for day, month, quarter and
    // year, but counts whole 7-day spans for week: count Sunday (WEEK) or Monday (ISOWEEK) starts instead
    if (part === 'week' || part === 'isoweek') {
      const shift = part === 'week' ? ' + 1' : '';
      return { sql: `(date_diff('day', date_trunc('week', ${b.sql}${shift}), date_trunc('week', ${a.sql}${shift})) // 7)`, type: INT64 };
    }
    if (!['day', 'month', 'quarter', 'year'].includes(part)) fail(call, `unsupported date part ${part.toUpperCase()}`);
    return { sql: `date_diff('${part}', ${b.sql}, ${a.sql})`, type: INT64 };
  }),
  current_date: scalar([0, 1], (call) => {
    utcOnly(call, 0);
    return { sql: `CAST(${timestampLiteral(BigInt(call.ctx.now) * 1000n)} AS DATE)`, type: DATE };
  }),
  current_datetime: scalar([0, 1], (call) => {
    utcOnly(call, 0);
    return { sql: `CAST(${timestampLiteral(BigInt(call.ctx.now) * 1000n)} AS TIMESTAMP)`, type: DATETIME };
  }),
  datetime: scalar([1, 6], (call) => {
    const count = call.expr.args.length;
    if (count === 6) {
      const parts = call.expr.args.map((_, i) => typed(call, i, 'int64').sql);
      return { sql: `make_timestamp(${joined(call, parts, ', ')})`, type: DATETIME };
    }
    if (count > 2) fail(call, 'takes a timestamp or date (and a time zone), or year, month, day, hour, minute, second');
    const value = typed(call, 0, 'timestamp', 'date', 'datetime');
    utcOnly(call, 1);
    return { sql: `CAST(${value.sql} AS TIMESTAMP)`, type: DATETIME };
  }),
  format_date: scalar([2, 2], (call) => formatCivil(call, 'date')),
  format_datetime: scalar([2, 2], (call) => formatCivil(call, 'datetime')),
  parse_date: scalar([2, 2], (call) => parseCivil(call, 'DATE', DATE)),
  parse_datetime: scalar([2, 2], (call) => parseCivil(call, 'TIMESTAMP', DATETIME)),
  timestamp_diff: scalar([3, 3], (call) => {
    const [a, b] = [typed(call, 0, 'timestamp'), typed(call, 1, 'timestamp')];
    const part = datePart(call, 2);
    const unit = Object.hasOwn(MICROS_PER, part) ? MICROS_PER[part as keyof typeof MICROS_PER] : undefined;
    if (!unit) fail(call, `unsupported date part ${part.toUpperCase()} (MICROSECOND to DAY)`);
    // whole units, truncated toward zero (DuckDB's // on BIGINT truncates)
    return { sql: `((epoch_us(${a.sql}) - epoch_us(${b.sql})) // ${unit})`, type: INT64 };
  }),
  unix_micros: scalar([1, 1], (call) => epochOf(call, 'microsecond')),
  unix_millis: scalar([1, 1], (call) => epochOf(call, 'millisecond')),
  unix_seconds: scalar([1, 1], (call) => epochOf(call, 'second')),
  timestamp_micros: scalar([1, 1], (call) => timestampFromEpoch(call, 'microsecond')),
  timestamp_millis: scalar([1, 1], (call) => timestampFromEpoch(call, 'millisecond')),
  timestamp_seconds: scalar([1, 1], (call) => timestampFromEpoch(call, 'second')),
  timestamp: scalar([1, 2], (call) => {
    const value = typed(call, 0, 'string', 'datetime', 'date', 'timestamp');
    utcOnly(call, 1);
    return { sql: value.type.kind === 'timestamp' ? value.sql : `CAST(${value.sql} AS TIMESTAMPTZ)`, type: TIMESTAMP };
  }),
  date: scalar([1, 3], (call) => {
    if (call.expr.args.length === 3) return { sql: `make_date(${joined(call, [0, 1, 2].map((i) => typed(call, i, 'int64').sql), ', ')})`, type: DATE };
    const value = typed(call, 0, 'timestamp', 'datetime', 'date', 'string');
    utcOnly(call, 1);
    return { sql: `CAST(${value.sql} AS DATE)`, type: DATE };
  }),
  format_timestamp: scalar([2, 3], (call) => {
    const format = literalText(call, 0, 'format');
    const value = typed(call, 1, 'timestamp');
    utcOnly(call, 2);
    return { sql: once(call, [value], ([timestamp]) => formatTimestampSql(format, timestamp!, call.ctx.budget, call.expr.position)), type: STRING };
  }),
  parse_timestamp: scalar([2, 3], (call) => {
    const formats = parseTimestampFormats(literalText(call, 0, 'format'), call.expr.position);
    const text = typed(call, 1, 'string');
    utcOnly(call, 2);
    const list = formats.length === 1 ? quoteString(formats[0]!) : `[${formats.map((f) => quoteString(f)).join(', ')}]`;
    return { sql: `CAST(strptime(${text.sql}, ${list}) AS TIMESTAMPTZ)`, type: TIMESTAMP };
  }),
};

/** FORMAT_DATE / FORMAT_DATETIME: the timestamp elements over a civil value (zone elements print UTC's). */
function formatCivil(call: Call, kind: 'date' | 'datetime'): Typed {
  const format = literalText(call, 0, 'format');
  const value = typed(call, 1, kind);
  return { sql: once(call, [value], ([civil]) => formatTimestampSql(format, `CAST(${civil} AS TIMESTAMP)`, call.ctx.budget, call.expr.position)), type: STRING };
}

function parseCivil(call: Call, duckDbType: 'DATE' | 'TIMESTAMP', type: SqlType): Typed {
  const formats = parseTimestampFormats(literalText(call, 0, 'format'), call.expr.position);
  if (formats.some((f) => f.includes('%z'))) fail(call, 'a civil date or time has no time zone element');
  const text = typed(call, 1, 'string');
  const list = formats.length === 1 ? quoteString(formats[0]!) : `[${formats.map((f) => quoteString(f)).join(', ')}]`;
  return { sql: `CAST(strptime(${text.sql}, ${list}) AS ${duckDbType})`, type };
}

function utcOnly(call: Call, i: number): void {
  if (call.expr.args.length <= i) return;
  const zone = literalText(call, i, 'time zone');
  if (!/^(UTC|Etc\/UTC|Z|[+-]00(:?00)?)$/i.test(zone)) fail(call, `only the UTC time zone is supported, not ${JSON.stringify(zone)}`);
}

function statistic(call: Call, fn: string): Typed {
  const value = typed(call, 0, 'int64', 'float64');
  return { sql: `${fn}(${call.expr.distinct ? 'DISTINCT ' : ''}CAST(${value.sql} AS DOUBLE))${call.over}`, type: FLOAT64 };
}

/** A DOUBLE function; `domain` (of x) is where BigQuery raises an error where DuckDB gives NaN or NULL. */
function mathFunction(call: Call, fn: string, domain?: (x: string) => string): Typed {
  const value = typed(call, 0, 'int64', 'float64');
  if (!domain) return { sql: `${fn}(CAST(${value.sql} AS DOUBLE))`, type: FLOAT64 };
  const sql = once(call, [value], ([v]) => {
    const x = `CAST(${v} AS DOUBLE)`;
    return `(CASE WHEN ${domain(x)} THEN error('${call.expr.name.toUpperCase()}: argument out of domain') ELSE ${fn}(${x}) END)`;
  });
  return { sql, type: FLOAT64 };
}

function pad(call: Call, fn: 'lpad' | 'rpad'): Typed {
  const [value, length] = [typed(call, 0, 'string'), typed(call, 1, 'int64')];
  const filler = call.expr.args.length > 2 ? typed(call, 2, 'string') : { sql: `' '`, type: STRING };
  const sql = once(call, [value, length, filler], ([text, size, fill]) => {
    // the characters added, at the filler's bytes per character; a shorter length cuts the text, which builds nothing
    const padded = `${bytes(text!)} + (CAST(${size} AS DOUBLE) - length(${text})) * ${bytes(fill!)} / greatest(length(${fill}), 1)`;
    const grown = `(CASE WHEN ${size} > length(${text}) THEN ${padded} ELSE 0 END)`;
    return `(CASE WHEN ${size} < 0 THEN error('${fn.toUpperCase()}: length must not be negative') ${stringGuard(fn.toUpperCase(), grown, call.ctx.maxValueBytes)} ` +
      `ELSE ${fn}(${text}, CAST(${size} AS INTEGER), ${fill}) END)`;
  });
  return { sql, type: STRING };
}

function intervalArithmetic(call: Call, subtract: boolean): Typed {
  const interval = call.expr.args[1];
  if (interval?.kind !== 'interval') fail(call, 'argument 2 must be an INTERVAL such as INTERVAL 1 HOUR');
  return call.printer.addInterval(call.arg(0), interval, subtract, call.ctx);
}

function substring(call: Call): Typed {
  const value = typed(call, 0, 'string');
  const start = typed(call, 1, 'int64');
  const length = call.expr.args.length > 2 ? typed(call, 2, 'int64') : undefined;
  // BigQuery: 1-based, 0 reads as 1, a negative start counts from the end (clamped to the first
  // character), a negative length is an error
  const from = (text: string, first: string) => `(CASE WHEN ${first} > 0 THEN ${first} WHEN ${first} = 0 THEN 1 ELSE greatest(length(${text}) + ${first} + 1, 1) END)`;
  if (!length) return { sql: nullIfAnyNull(call, [value, start], ([text, first]) => `substring(${text}, ${from(text!, first!)})`), type: STRING };
  const sql = nullIfAnyNull(call, [value, start, length], ([text, first, count]) => {
    const checked = `(CASE WHEN ${count} < 0 THEN error('SUBSTR: length must not be negative') ELSE ${count} END)`;
    return `substring(${text}, ${from(text!, first!)}, ${checked})`;
  });
  return { sql, type: STRING };
}

function trimFunction(call: Call, fn: 'trim' | 'ltrim' | 'rtrim'): Typed {
  const value = typed(call, 0, 'string');
  if (call.expr.args.length === 1) return { sql: `${fn}(${value.sql})`, type: STRING };
  return { sql: `${fn}(${value.sql}, ${typed(call, 1, 'string').sql})`, type: STRING };
}

export function translateCall(expr: CallExpr, ctx: ExprContext, printer: ExpressionPrinter): Typed {
  const translation = Object.hasOwn(FUNCTIONS, expr.name) ? FUNCTIONS[expr.name] : undefined;
  if (!translation) throw new SandboxViolation(`function ${expr.name.toUpperCase()} is not supported in sandboxed queries`, expr.position);
  const [min, max] = translation.arity;
  const count = expr.args.length;
  if (!expr.star && (count < min || count > max)) {
    const supported = min === max ? `${min}` : `${min} to ${max}`;
    throw new SandboxViolation(`${expr.name.toUpperCase()} with ${count} arguments is not supported here (it takes ${supported})`, expr.position);
  }
  if (expr.star && expr.name !== 'count') throw new InvalidQuery(`${expr.name.toUpperCase()}(*) is not valid`, expr.position);
  if (expr.distinct && translation.kind !== 'aggregate') throw new InvalidQuery(`DISTINCT is only allowed in aggregate functions`, expr.position);
  if (expr.limit) throw new SandboxViolation(`LIMIT inside ${expr.name.toUpperCase()}() is not supported`, expr.position);
  if (expr.orderBy?.length && expr.name !== 'string_agg' && expr.name !== 'array_agg') {
    throw new InvalidQuery(`ORDER BY is not allowed inside ${expr.name.toUpperCase()}()`, expr.position);
  }
  if (translation.kind === 'window' && !expr.over) throw new InvalidQuery(`${expr.name.toUpperCase()} needs an OVER clause`, expr.position);
  if (expr.over && translation.kind === 'scalar') throw new InvalidQuery(`${expr.name.toUpperCase()} is not an analytic function and takes no OVER clause`, expr.position);
  if (expr.over && !ctx.windows) throw new InvalidQuery(`analytic function ${expr.name.toUpperCase()} is not allowed in ${ctx.clause}`, expr.position);
  if (translation.kind === 'aggregate' && !expr.over && !ctx.aggregates) {
    throw new InvalidQuery(`aggregate function ${expr.name.toUpperCase()} is not allowed in ${ctx.clause}`, expr.position);
  }
  if (translation.kind !== 'scalar') ctx.seen.aggregate ||= translation.kind === 'aggregate' && !expr.over;
  // arguments of an aggregate see FROM names only, and no aggregates or windows of their own
  const argContext: ExprContext =
    translation.kind === 'scalar' ? ctx : { ...ctx, aggregates: false, windows: false, aliases: undefined, clause: `${expr.name.toUpperCase()}()` };
  const args = new Map<number, Typed>();
  const call: Call = {
    expr,
    ctx: argContext,
    printer,
    arg(i) {
      if (!args.has(i)) args.set(i, printer.translateExpr(expr.args[i]!, argContext));
      return args.get(i)!;
    },
    over: expr.over ? printer.windowSql(expr.over, ctx) : '',
  };
  return translation.translate(call);
}
