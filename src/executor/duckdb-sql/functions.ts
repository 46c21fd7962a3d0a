/**
 * The DuckDB side of the function registry (src/sql/functions.ts): each registered function printed
 * as DuckDB that gives BigQuery's result: NULL handling, 0- or 1-based positions, partial regex
 * matches, units and rounding follow BigQuery, not DuckDB. Which calls exist, their argument counts
 * and kinds, and what may stand inside a call are the registry's, checked in translateCall.
 */
import { InvalidQuery, SandboxViolation, type QueryPosition } from '../../errors.ts';
import { isAggregate, parameterAt, sandboxFunction, signatureOf, type SandboxFunctionName, type Signature, type ValueKind } from '../../sql/functions.ts';
import type { Expr, OrderItem, WindowSpec } from '../../sql/syntax.ts';
import type { SqlType } from '../../sql/types.ts';
import { duckDbTypeName } from '../engine/duckdb-type.ts';
import { bindOnce } from './bind.ts';
import type { ExprContext } from './expression-context.ts';
import { jsonEncoded, needsEncoding, twoSpaceIndent } from './json-encoding.ts';
import { LAMBDA_PARAMETER, MICROS_PER, float64Literal, quoteString, timestampLiteral } from './literals.ts';
import { formatTimestampSql, parseTimestampFormats } from './time-format.ts';
import { UTC, civilIn, instantIn, timeZone, type TimeZone } from './time-zone.ts';
import { BOOL, DATE, DATETIME, FLOAT64, INT64, STRING, TIMESTAMP, commonType, expect, isOrderable, typeName, unifyTypes, type Typed } from './types.ts';
import { bytes, concatenation, listGuard, stringGuard } from './value-size.ts';
import { weekStart, weekTrunc, weeksBetween } from './weeks.ts';

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
  /** BigQuery's CAST(value AS STRING). */
  castToString(value: Typed, ctx: ExprContext, position?: QueryPosition): Typed;
  /** A string literal read as a TIMESTAMP, DATETIME or DATE, as BigQuery coerces one. */
  coerceLiteral(text: string, type: SqlType, position?: QueryPosition): Typed;
}

interface Call {
  expr: CallExpr;
  ctx: ExprContext;
  printer: ExpressionPrinter;
  /**
   * Argument i translated where the call stands (inside an aggregate: where nested aggregates are
   * refused) and checked against the registry's parameter for it.
   */
  arg(i: number): Typed;
  /** The call's window clause, `''` when it has none. */
  over: string;
}

/** How a registered function prints; its argument counts and kinds are the registry's (src/sql/functions.ts). */
type Translation = (call: Call) => Typed;

function fail(call: Call, message: string): never {
  throw new InvalidQuery(`${call.expr.name.toUpperCase()}: ${message}`, call.expr.position);
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
  return bindOnce(
    call.ctx.budget,
    args.map((a) => a.sql),
    (refs) => `(CASE WHEN ${refs.map((ref) => `${ref} IS NULL`).join(' OR ')} THEN NULL ELSE ${sql(refs)} END)`,
  );
}

/** `sql` over the arguments' texts, each printed once however often `sql` reads it. */
function once(call: Call, args: Typed[], sql: (refs: string[]) => string): string {
  return bindOnce(
    call.ctx.budget,
    args.map((a) => a.sql),
    sql,
  );
}

/** The arguments' texts joined, within the query's budget. */
function joined(call: Call, args: readonly string[], separator: string): string {
  return call.ctx.budget.join(args, separator, call.expr.position);
}

/**
 * REGEXP_EXTRACT(value, regex, position, occurrence): the occurrence-th non-overlapping match (default
 * the first) in the text from the 1-based character position on; NULL past the end or the last match.
 */
function nthMatch(call: Call, value: Typed, pattern: Typed, group: number): string {
  const position = call.arg(2);
  const occurrence = call.expr.args.length > 3 ? call.arg(3) : { sql: 'CAST(1 AS BIGINT)', type: INT64 };
  return once(
    call,
    [value, pattern, position, occurrence],
    ([text, regex, from, nth]) =>
      `(CASE WHEN ${from} <= 0 THEN error('REGEXP_EXTRACT: the position must be positive') ` +
      `WHEN ${nth} <= 0 THEN error('REGEXP_EXTRACT: the occurrence must be positive') ` +
      `WHEN ${from} > length(${text}) THEN NULL ELSE regexp_extract_all(substring(${text}, ${from}), ${regex}, ${group})[${nth}] END)`,
  );
}

/** The count of a LIMIT inside a call: an integer literal, 0 or more. */
function limitCount(call: Call, limit: Expr): number {
  const count = limit.kind === 'number' && /^\d+$/.test(limit.text) ? Number(limit.text) : NaN;
  if (!Number.isSafeInteger(count)) fail(call, 'LIMIT takes an integer literal, 0 or more');
  return count;
}

function regexArgs(call: Call): [Typed, Typed] {
  return [call.arg(0), call.arg(1)];
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

const TRUNC_UNITS = new Set(['microsecond', 'millisecond', 'second', 'minute', 'hour', 'day', 'month', 'quarter', 'year', 'isoyear']);

function truncate(call: Call, value: Typed, part: string): string {
  // WEEK starts on Sunday, WEEK(<weekday>) on that day, ISOWEEK on Monday
  const start = weekStart(part);
  if (start !== undefined) return weekTrunc(value.sql, start);
  if (!TRUNC_UNITS.has(part)) fail(call, `unsupported date part ${part.toUpperCase()}`);
  return `date_trunc('${part}', ${value.sql})`;
}

/** The legacy JSON functions, whose JSONPath escapes a name as `['a.b']`; the others write `."a.b"`. */
const LEGACY_JSONPATH = new Set(['json_extract', 'json_extract_scalar', 'json_extract_array']);

/**
 * A literal JSONPath as DuckDB's: `$` and steps `.name`, `[n]`, and a name with other characters
 * quoted, `."a.b"` (or `['a.b']` in the legacy functions). Every name is written quoted for DuckDB,
 * so it is read as a member name, never as path syntax.
 */
function jsonPath(call: Call, path: string): string {
  const legacy = LEGACY_JSONPATH.has(call.expr.name);
  const step = legacy ? /\.([A-Za-z0-9_]+)|\['([^'\\]+)'\]|\[(\d+)\]/y : /\.([A-Za-z0-9_]+)|\."([^"\\]+)"|\[(\d+)\]/y;
  let duckDb = '$';
  let at = 1;
  while (path.startsWith('$') && at < path.length) {
    step.lastIndex = at;
    const match = step.exec(path);
    if (!match) break;
    const name = match[1] ?? match[2];
    duckDb += name === undefined ? `[${match[3]}]` : `."${name}"`;
    at = step.lastIndex;
  }
  if (!path.startsWith('$') || at < path.length) {
    fail(call, `JSONPath ${JSON.stringify(path)} is not supported (use $.a.b, $.a[0] or ${legacy ? "$['a.b']" : '$."a.b"'} for a name with other characters)`);
  }
  return quoteString(duckDb);
}

/** `sql` over the JSON text (read several times, so printed once) and the JSONPath argument. */
function withJson(call: Call, sql: (text: string, path: string) => string): string {
  const json = call.arg(0);
  const path = jsonPath(call, call.expr.args.length > 1 ? literalText(call, 1, 'JSONPath') : '$');
  const text = json.type.kind === 'json' ? `CAST(${json.sql} AS VARCHAR)` : json.sql;
  return bindOnce(call.ctx.budget, [text], ([value]) => sql(value!, path));
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
  const sql = withJson(
    call,
    (text, path) => `(CASE WHEN json_valid(${text}) AND json_type(${text}, ${path}) NOT IN ('OBJECT', 'ARRAY') THEN json_extract_string(${text}, ${path}) END)`,
  );
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
  const value = call.arg(0);
  const micros = unit === 'microsecond' ? value.sql : `(${value.sql} * ${MICROS_PER[unit]})`;
  return { sql: `make_timestamptz(${micros})`, type: TIMESTAMP };
}

function epochOf(call: Call, unit: 'second' | 'millisecond' | 'microsecond'): Typed {
  const value = call.arg(0);
  // BigQuery truncates to the start of the unit (floor, also before 1970)
  const sql = unit === 'microsecond' ? `epoch_us(${value.sql})` : `CAST(floor(epoch_us(${value.sql}) / ${MICROS_PER[unit]}) AS BIGINT)`;
  return { sql, type: INT64 };
}

function rankFunction(name: string): Translation {
  return (call) => ({ sql: `${name}()${call.over}`, type: name === 'percent_rank' || name === 'cume_dist' ? FLOAT64 : INT64 });
}

function offsetFunction(name: 'lag' | 'lead'): Translation {
  return (call) => {
    const value = call.arg(0);
    const args = [value.sql];
    if (call.expr.args.length > 1) args.push(call.arg(1).sql);
    if (call.expr.args.length > 2) {
      const fallback = call.arg(2);
      if (!commonType(value.type, fallback.type)) fail(call, `the default must have type ${typeName(value.type)}`);
      args.push(fallback.sql);
    }
    return { sql: `${name}(${joined(call, args, ', ')})${call.over}`, type: value.type };
  };
}

/** One translation per registered function: a name the registry gains without one here does not compile. */
const TRANSLATIONS: Record<SandboxFunctionName, Translation> = {
  // aggregates
  count: (call) => {
    if (call.expr.star) return { sql: `count(*)${call.over}`, type: INT64 };
    if (call.expr.args.length !== 1) fail(call, 'takes one argument or *');
    return { sql: `count(${call.expr.distinct ? 'DISTINCT ' : ''}${call.arg(0).sql})${call.over}`, type: INT64 };
  },
  // count(CASE ...) is BIGINT already; DuckDB's count_if would be HUGEINT
  countif: (call) => ({ sql: `count(CASE WHEN ${call.arg(0).sql} THEN 1 END)${call.over}`, type: INT64 }),
  sum: (call) => {
    const value = call.arg(0);
    const sql = `sum(${call.expr.distinct ? 'DISTINCT ' : ''}${value.sql})${call.over}`;
    // DuckDB sums BIGINT into HUGEINT; the cast back fails on overflow, as BigQuery does
    if (value.type.kind === 'int64' || value.type.kind === 'unknown') return { sql: `CAST(${sql} AS BIGINT)`, type: INT64 };
    return { sql: value.type.kind === 'numeric' ? `CAST(${sql} AS DECIMAL(38,9))` : sql, type: value.type };
  },
  avg: (call) => {
    const value = call.arg(0);
    return { sql: `avg(${call.expr.distinct ? 'DISTINCT ' : ''}CAST(${value.sql} AS DOUBLE))${call.over}`, type: FLOAT64 };
  },
  min: (call) => minMax(call, 'min'),
  max: (call) => minMax(call, 'max'),
  any_value: (call) => {
    const value = call.arg(0);
    return { sql: `any_value(${value.sql})${call.over}`, type: value.type };
  },
  logical_and: (call) => ({ sql: `bool_and(${call.arg(0).sql})${call.over}`, type: BOOL }),
  logical_or: (call) => ({ sql: `bool_or(${call.arg(0).sql})${call.over}`, type: BOOL }),
  // exact distinct count: a valid (perfect) approximation
  approx_count_distinct: (call) => ({ sql: `count(DISTINCT ${call.arg(0).sql})${call.over}`, type: INT64 }),
  string_agg: (call) => {
    const value = call.arg(0);
    const separator = call.expr.args.length > 1 ? call.arg(1).sql : `','`;
    const order = aggregateOrder(call);
    const distinct = call.expr.distinct ? 'DISTINCT ' : '';
    if (!call.expr.limit) return { sql: `string_agg(${distinct}${value.sql}, ${separator}${order})${call.over}`, type: STRING };
    // LIMIT n joins the first n values that are not NULL; no values at all is NULL, as string_agg's
    const kept = `(list(${distinct}${value.sql}${order}) FILTER (WHERE ${value.sql} IS NOT NULL))[1:${limitCount(call, call.expr.limit)}]`;
    return { sql: `array_to_string(${kept}, ${separator})`, type: STRING };
  },
  array_agg: (call) => {
    const value = call.arg(0);
    if (value.type.kind === 'array') fail(call, 'BigQuery has no arrays of arrays');
    const order = aggregateOrder(call);
    const distinct = call.expr.distinct ? 'DISTINCT ' : '';
    const type: SqlType = { kind: 'array', element: value.type };
    // LIMIT n keeps the first n elements (in the ORDER BY's order)
    const limit = call.expr.limit ? `[1:${limitCount(call, call.expr.limit)}]` : '';
    if (call.expr.ignoreNulls) return { sql: `(list(${distinct}${value.sql}${order}) FILTER (WHERE ${value.sql} IS NOT NULL)${call.over})${limit}`, type };
    // BigQuery refuses to build an array holding NULL; DuckDB would keep it
    const refusal = `error('ARRAY_AGG: Array cannot have a null element; use IGNORE NULLS')`;
    const list = `list(${distinct}${value.sql}${order})${call.over}`;
    if (limit) {
      const e = LAMBDA_PARAMETER;
      const sql = bindOnce(
        call.ctx.budget,
        [`(${list})${limit}`],
        ([kept]) => `(CASE WHEN list_bool_or(list_transform(${kept}, lambda ${e}: ${e} IS NULL)) THEN ${refusal} ELSE ${kept} END)`,
      );
      return { sql, type };
    }
    const nulls = `count(*) FILTER (WHERE ${value.sql} IS NULL)${call.over}`;
    return { sql: `(CASE WHEN ${nulls} > 0 THEN ${refusal} ELSE ${list} END)`, type };
  },
  approx_quantiles: (call) => {
    const value = call.arg(0);
    if (!isOrderable(value.type)) fail(call, `cannot order values of type ${typeName(value.type)}`);
    const count = call.expr.args[1];
    const buckets = count?.kind === 'number' && /^\d+$/.test(count.text) ? Number(count.text) : NaN;
    if (!(buckets >= 1 && buckets <= 1000)) fail(call, 'the number of quantiles must be an integer literal from 1 to 1000');
    // N+1 values: the minimum, the N-1 inner quantiles, the maximum
    const fractions = Array.from({ length: buckets + 1 }, (_, i) => float64Literal(String(i / buckets)));
    return { sql: `quantile_disc(${value.sql}, [${fractions.join(', ')}])${call.over}`, type: { kind: 'array', element: value.type } };
  },

  stddev: (call) => statistic(call, 'stddev_samp'),
  stddev_samp: (call) => statistic(call, 'stddev_samp'),
  stddev_pop: (call) => statistic(call, 'stddev_pop'),
  variance: (call) => statistic(call, 'var_samp'),
  var_samp: (call) => statistic(call, 'var_samp'),
  var_pop: (call) => statistic(call, 'var_pop'),

  // window-only functions
  row_number: rankFunction('row_number'),
  rank: rankFunction('rank'),
  dense_rank: rankFunction('dense_rank'),
  percent_rank: rankFunction('percent_rank'),
  cume_dist: rankFunction('cume_dist'),
  ntile: (call) => ({ sql: `ntile(${call.arg(0).sql})${call.over}`, type: INT64 }),
  lag: offsetFunction('lag'),
  lead: offsetFunction('lead'),
  first_value: (call) => {
    const value = call.arg(0);
    return { sql: `first_value(${value.sql}${call.expr.ignoreNulls ? ' IGNORE NULLS' : ''})${call.over}`, type: value.type };
  },
  last_value: (call) => {
    const value = call.arg(0);
    return { sql: `last_value(${value.sql}${call.expr.ignoreNulls ? ' IGNORE NULLS' : ''})${call.over}`, type: value.type };
  },

  // conditionals
  if: (call) => {
    const [condition, then, otherwise] = [call.arg(0), call.arg(1), call.arg(2)];
    return { sql: `(CASE WHEN ${condition.sql} THEN ${then.sql} ELSE ${otherwise.sql} END)`, type: unifyTypes([then, otherwise], 'IF', call.expr.position) };
  },
  ifnull: (call) => {
    const args = [call.arg(0), call.arg(1)];
    return { sql: `coalesce(${args[0]!.sql}, ${args[1]!.sql})`, type: unifyTypes(args, 'IFNULL', call.expr.position) };
  },
  coalesce: (call) => {
    const args = call.expr.args.map((_, i) => call.arg(i));
    return {
      sql: `coalesce(${joined(
        call,
        args.map((a) => a.sql),
        ', ',
      )})`,
      type: unifyTypes(args, 'COALESCE', call.expr.position),
    };
  },
  nullif: (call) => {
    const [value, other] = [call.arg(0), call.arg(1)];
    if (!commonType(value.type, other.type)) fail(call, `cannot compare ${typeName(value.type)} with ${typeName(other.type)}`);
    return { sql: `nullif(${value.sql}, ${other.sql})`, type: value.type };
  },
  greatest: (call) => greatestLeast(call, 'greatest'),
  least: (call) => greatestLeast(call, 'least'),

  // strings
  concat: (call) => {
    // BigQuery casts each argument to STRING first
    const args = call.expr.args.map((_, i) => call.printer.castToString(call.arg(i), call.ctx, call.expr.position));
    // DuckDB's concat skips NULLs; BigQuery's (like ||) returns NULL
    return {
      sql: concatenation(
        args.map((a) => a.sql),
        call.ctx.budget,
        call.ctx.maxValueBytes,
      ),
      type: STRING,
    };
  },
  length: (call) => {
    const value = call.arg(0);
    return { sql: `CAST(${value.type.kind === 'bytes' ? 'octet_length' : 'length'}(${value.sql}) AS BIGINT)`, type: INT64 };
  },
  char_length: (call) => ({ sql: `CAST(length(${call.arg(0).sql}) AS BIGINT)`, type: INT64 }),
  lower: (call) => ({ sql: `lower(${call.arg(0).sql})`, type: STRING }),
  upper: (call) => ({ sql: `upper(${call.arg(0).sql})`, type: STRING }),
  substr: (call) => substring(call),
  substring: (call) => substring(call),
  strpos: (call) => ({ sql: `CAST(strpos(${call.arg(0).sql}, ${call.arg(1).sql}) AS BIGINT)`, type: INT64 }),
  starts_with: (call) => ({ sql: `starts_with(${call.arg(0).sql}, ${call.arg(1).sql})`, type: BOOL }),
  ends_with: (call) => ({ sql: `ends_with(${call.arg(0).sql}, ${call.arg(1).sql})`, type: BOOL }),
  trim: (call) => trimFunction(call, 'trim'),
  ltrim: (call) => trimFunction(call, 'ltrim'),
  rtrim: (call) => trimFunction(call, 'rtrim'),
  replace: (call) => {
    const args = [call.arg(0), call.arg(1), call.arg(2)];
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
  },
  split: (call) => {
    const value = call.arg(0);
    const separator = call.expr.args.length > 1 ? call.arg(1).sql : `','`;
    return { sql: `string_split(${value.sql}, ${separator})`, type: { kind: 'array', element: STRING } };
  },
  regexp_contains: (call) => {
    const [value, pattern] = regexArgs(call);
    // a partial match, as BigQuery's (regexp_full_match would anchor it)
    return { sql: `regexp_matches(${value.sql}, ${pattern.sql})`, type: BOOL };
  },
  regexp_extract: (call) => {
    const [value, pattern] = regexArgs(call);
    const groups = captureGroups(literalText(call, 1, 'regular expression'));
    if (groups > 1) fail(call, 'the regular expression may have at most one capturing group');
    if (call.expr.args.length > 2) return { sql: nthMatch(call, value, pattern, groups), type: STRING };
    // the capture group if there is one, else the whole match; NULL (not '') when nothing matches
    const sql = once(
      call,
      [value, pattern],
      ([text, regex]) => `(CASE WHEN regexp_matches(${text}, ${regex}) THEN regexp_extract(${text}, ${regex}, ${groups}) END)`,
    );
    return { sql, type: STRING };
  },
  regexp_replace: (call) => {
    const [value, pattern] = regexArgs(call);
    const replacement = call.arg(2);
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
  },
  json_value: jsonScalar,
  json_query: jsonText,
  json_extract: jsonText,
  json_extract_array: (call) => jsonArray(call, false),
  json_value_array: (call) => jsonArray(call, true),
  regexp_extract_all: (call) => {
    const [value, pattern] = regexArgs(call);
    const groups = captureGroups(literalText(call, 1, 'regular expression'));
    if (groups > 1) fail(call, 'the regular expression may have at most one capturing group');
    return { sql: `regexp_extract_all(${value.sql}, ${pattern.sql}, ${groups})`, type: { kind: 'array', element: STRING } };
  },
  json_extract_scalar: jsonScalar,

  // DuckDB's md5 and sha256 give hex text; BigQuery's give BYTES, which TO_HEX turns into hex text
  md5: (call) => ({ sql: `unhex(md5(${call.arg(0).sql}))`, type: { kind: 'bytes' } }),
  sha256: (call) => ({ sql: `unhex(sha256(${call.arg(0).sql}))`, type: { kind: 'bytes' } }),
  to_hex: (call) => ({ sql: `lower(hex(${call.arg(0).sql}))`, type: STRING }),
  parse_json: (call) => ({ sql: `CAST(${call.arg(0).sql} AS JSON)`, type: { kind: 'json' } }),
  to_json_string: (call) => {
    const value = call.arg(0);
    const encode = (v: string) => `CAST(${jsonEncoded(v, value.type)} AS VARCHAR)`;
    if (call.expr.args.length === 1) return { sql: needsEncoding(value.type) ? once(call, [value], ([v]) => encode(v!)) : encode(value.sql), type: STRING };
    const sql = once(
      call,
      [value, call.arg(1)],
      ([v, pretty]) => `(CASE WHEN ${pretty} THEN ${twoSpaceIndent(`json_pretty(${encode(v!)})`)} ELSE ${encode(v!)} END)`,
    );
    return { sql, type: STRING };
  },
  // on strings only: BigQuery also searches inside records and arrays
  contains_substr: (call) => ({ sql: `contains(lower(${call.arg(0).sql}), lower(${call.arg(1).sql}))`, type: BOOL }),

  // numbers
  abs: (call) => {
    const value = call.arg(0);
    return { sql: `abs(${value.sql})`, type: value.type };
  },
  round: (call) => {
    const value = call.arg(0);
    const digits = call.expr.args.length > 1 ? `CAST(${call.arg(1).sql} AS INTEGER)` : '0';
    // DuckDB's round rounds half away from zero, as BigQuery; INT64 input gives FLOAT64
    const type = value.type.kind === 'numeric' ? value.type : FLOAT64;
    const mode = call.expr.args.length > 2 ? literalText(call, 2, 'rounding mode') : 'ROUND_HALF_AWAY_FROM_ZERO';
    if (mode !== 'ROUND_HALF_AWAY_FROM_ZERO' && mode !== 'ROUND_HALF_EVEN') {
      fail(call, `unknown rounding mode ${JSON.stringify(mode)} (ROUND_HALF_AWAY_FROM_ZERO or ROUND_HALF_EVEN)`);
    }
    if (call.expr.args.length > 2 && type.kind !== 'numeric') fail(call, `a rounding mode applies to NUMERIC only, not ${typeName(value.type)}`);
    const fn = mode === 'ROUND_HALF_EVEN' ? 'round_even' : 'round';
    return { sql: `${fn}(CAST(${value.sql} AS ${type.kind === 'numeric' ? 'DECIMAL(38,9)' : 'DOUBLE'}), ${digits})`, type };
  },
  floor: (call) => ({ sql: `floor(CAST(${call.arg(0).sql} AS DOUBLE))`, type: FLOAT64 }),
  ceil: (call) => ({ sql: `ceil(CAST(${call.arg(0).sql} AS DOUBLE))`, type: FLOAT64 }),
  ceiling: (call) => ({ sql: `ceil(CAST(${call.arg(0).sql} AS DOUBLE))`, type: FLOAT64 }),
  mod: (call) => {
    const [a, b] = [call.arg(0), call.arg(1)];
    // the sign of the dividend, as DuckDB's %; a zero divisor is an error in BigQuery
    return { sql: once(call, [a, b], ([x, y]) => `(CASE WHEN ${y} = 0 THEN error('division by zero: MOD(x, 0)') ELSE ${x} % ${y} END)`), type: INT64 };
  },
  div: (call) => {
    const [a, b] = [call.arg(0), call.arg(1)];
    // DuckDB's // on BIGINT truncates toward zero, as BigQuery's DIV
    return { sql: once(call, [a, b], ([x, y]) => `(CASE WHEN ${y} = 0 THEN error('division by zero: DIV(x, 0)') ELSE ${x} // ${y} END)`), type: INT64 };
  },
  safe_divide: (call) => {
    const [a, b] = [call.arg(0), call.arg(1)];
    return {
      sql: once(call, [a, b], ([x, y]) => `(CASE WHEN CAST(${y} AS DOUBLE) = 0 THEN NULL ELSE CAST(${x} AS DOUBLE) / CAST(${y} AS DOUBLE) END)`),
      type: FLOAT64,
    };
  },
  ieee_divide: (call) => ({ sql: `(CAST(${call.arg(0).sql} AS DOUBLE) / CAST(${call.arg(1).sql} AS DOUBLE))`, type: FLOAT64 }),

  sqrt: (call) => mathFunction(call, 'sqrt', (x) => `${x} < 0`),
  ln: (call) => mathFunction(call, 'ln', (x) => `${x} <= 0`),
  log10: (call) => mathFunction(call, 'log10', (x) => `${x} <= 0`),
  exp: (call) => mathFunction(call, 'exp'),
  log: (call) => {
    // BigQuery's LOG(x) is the natural logarithm (DuckDB's log is base 10)
    if (call.expr.args.length === 1) return mathFunction(call, 'ln', (x) => `${x} <= 0`);
    const [x, base] = [call.arg(0), call.arg(1)];
    return { sql: `(ln(CAST(${x.sql} AS DOUBLE)) / ln(CAST(${base.sql} AS DOUBLE)))`, type: FLOAT64 };
  },
  pow: (call) => ({ sql: `pow(CAST(${call.arg(0).sql} AS DOUBLE), CAST(${call.arg(1).sql} AS DOUBLE))`, type: FLOAT64 }),
  power: (call) => ({ sql: `pow(CAST(${call.arg(0).sql} AS DOUBLE), CAST(${call.arg(1).sql} AS DOUBLE))`, type: FLOAT64 }),
  sign: (call) => {
    const value = call.arg(0);
    return { sql: `CAST(sign(${value.sql}) AS ${value.type.kind === 'float64' ? 'DOUBLE' : 'BIGINT'})`, type: value.type.kind === 'float64' ? FLOAT64 : INT64 };
  },
  // toward zero, at N decimal places (left of the point for a negative N)
  trunc: (call) => {
    const value = `CAST(${call.arg(0).sql} AS DOUBLE)`;
    return { sql: call.expr.args.length > 1 ? `trunc(${value}, CAST(${call.arg(1).sql} AS INTEGER))` : `trunc(${value})`, type: FLOAT64 };
  },
  reverse: (call) => ({ sql: `reverse(${call.arg(0).sql})`, type: STRING }),
  repeat: (call) => {
    const [value, times] = [call.arg(0), call.arg(1)];
    const sql = once(
      call,
      [value, times],
      ([text, count]) =>
        `(CASE WHEN ${count} < 0 THEN error('REPEAT: count must not be negative') ${stringGuard('REPEAT', `${bytes(text!)} * ${count}`, call.ctx.maxValueBytes)} ELSE repeat(${text}, ${count}) END)`,
    );
    return { sql, type: STRING };
  },
  left: (call) => ({ sql: `left(${call.arg(0).sql}, ${call.arg(1).sql})`, type: STRING }),
  right: (call) => ({ sql: `right(${call.arg(0).sql}, ${call.arg(1).sql})`, type: STRING }),
  lpad: (call) => pad(call, 'lpad'),
  rpad: (call) => pad(call, 'rpad'),

  // arrays
  array_reverse: (call) => {
    const value = call.arg(0);
    if (value.type.kind !== 'array') fail(call, `expects an array, got ${typeName(value.type)}`);
    return { sql: `list_reverse(${value.sql})`, type: value.type };
  },
  array_concat: (call) => {
    const arrays = call.expr.args.map((_, i) => call.arg(i));
    const type = unifyTypes(arrays, 'ARRAY_CONCAT', call.expr.position);
    if (type.kind !== 'array') fail(call, `expects arrays, got ${typeName(type)}`);
    // NULL if any array is NULL (DuckDB's list_concat would treat it as empty)
    return { sql: nullIfAnyNull(call, arrays, (refs) => `flatten([${refs.join(', ')}])`), type };
  },
  generate_array: (call) => {
    const [start, end] = [call.arg(0), call.arg(1)];
    const step = call.expr.args.length > 2 ? call.arg(2) : { sql: 'CAST(1 AS BIGINT)', type: INT64 };
    // BigQuery refuses a zero step; an empty range is an empty array in both
    const sql = once(call, [start, end, step], ([from, to, by]) => {
      const elements = `floor((CAST(${to} AS DOUBLE) - CAST(${from} AS DOUBLE)) / ${by}) + 1`;
      return `(CASE WHEN ${by} = 0 THEN error('GENERATE_ARRAY: step cannot be 0') ${listGuard('GENERATE_ARRAY', elements, call.ctx.maxValueBytes)} ELSE generate_series(${from}, ${to}, ${by}) END)`;
    });
    return { sql, type: { kind: 'array', element: INT64 } };
  },
  generate_timestamp_array: (call) => {
    const [start, end] = [call.arg(0), call.arg(1)];
    const interval = call.expr.args[2];
    if (interval?.kind !== 'interval') fail(call, 'argument 3 must be an INTERVAL such as INTERVAL 1 HOUR');
    const unit = Object.hasOwn(MICROS_PER, interval.unit) ? MICROS_PER[interval.unit as keyof typeof MICROS_PER] : undefined;
    if (!unit) fail(call, `unsupported interval part ${interval.unit.toUpperCase()} (MICROSECOND to DAY)`);
    const amount = expect(call.printer.translateExpr(interval.value, call.ctx), ['int64'], 'GENERATE_TIMESTAMP_ARRAY interval', call.expr.position);
    const step = { sql: `(${amount.sql} * ${unit})`, type: INT64 };
    // the k-th element is start + k steps, for k from 0 while it does not pass end; a zero step is an error
    const sql = once(call, [start, end, step], ([from, to, by]) => {
      const steps = `((epoch_us(${to}) - epoch_us(${from})) // ${by})`;
      const k = LAMBDA_PARAMETER;
      const guard = listGuard('GENERATE_TIMESTAMP_ARRAY', `${steps} + 1`, call.ctx.maxValueBytes);
      return (
        `(CASE WHEN ${by} = 0 THEN error('GENERATE_TIMESTAMP_ARRAY: the interval cannot be 0') ${guard} ` +
        `ELSE list_transform(generate_series(0, ${steps}), lambda ${k}: make_timestamptz(epoch_us(${from}) + ${k} * ${by})) END)`
      );
    });
    return { sql, type: { kind: 'array', element: TIMESTAMP } };
  },
  array_length: (call) => {
    const value = call.arg(0);
    if (value.type.kind !== 'array' && value.type.kind !== 'unknown') fail(call, `expects an array, got ${typeName(value.type)}`);
    return { sql: `CAST(len(${value.sql}) AS BIGINT)`, type: INT64 };
  },
  array_to_string: (call) => {
    const value = call.arg(0);
    if (value.type.kind !== 'array' || value.type.element.kind !== 'string') fail(call, `expects ARRAY<STRING>, got ${typeName(value.type)}`);
    const separator = call.arg(1);
    // NULL elements are skipped unless a replacement text is given
    const elements =
      call.expr.args.length > 2 ? `list_transform(${value.sql}, lambda ${LAMBDA_PARAMETER}: coalesce(${LAMBDA_PARAMETER}, ${call.arg(2).sql}))` : value.sql;
    // the elements only are bound once: DuckDB takes only a constant separator, which a bound one is not
    const sql = bindOnce(call.ctx.budget, [elements], ([list]) => {
      const texts = `coalesce(list_sum(list_transform(${list}, lambda ${LAMBDA_PARAMETER}: strlen(${LAMBDA_PARAMETER}))), 0)`;
      const separators = `greatest(len(list_filter(${list}, lambda ${LAMBDA_PARAMETER}: ${LAMBDA_PARAMETER} IS NOT NULL)) - 1, 0)`;
      const size = `CAST(${texts} AS DOUBLE) + ${separators} * ${bytes(separator.sql)}`;
      return `(CASE WHEN ${separator.sql} IS NULL THEN NULL ${stringGuard('ARRAY_TO_STRING', size, call.ctx.maxValueBytes)} ELSE array_to_string(${list}, ${separator.sql}) END)`;
    });
    return { sql, type: STRING };
  },

  // time
  current_timestamp: (call) => ({ sql: timestampLiteral(BigInt(call.ctx.now) * 1000n), type: TIMESTAMP }),
  timestamp_trunc: (call) => {
    const value = call.arg(0);
    const zone = zoneArgument(call, 2, value);
    const type = value.type.kind === 'unknown' ? TIMESTAMP : value.type;
    if (zone.kind === 'utc') return { sql: truncate(call, value, datePart(call, 1)), type };
    // truncated on the zone's clock, then read back as an instant
    return { sql: instantIn(truncate(call, { sql: civilIn(value.sql, zone), type: DATETIME }, datePart(call, 1)), zone), type };
  },
  datetime_trunc: (call) => {
    const value = call.arg(0);
    return { sql: truncate(call, value, datePart(call, 1)), type: value.type };
  },
  date_trunc: (call) => {
    const value = call.arg(0);
    return { sql: `CAST(${truncate(call, value, datePart(call, 1))} AS DATE)`, type: DATE };
  },
  timestamp_add: (call) => intervalArithmetic(call, false),
  timestamp_sub: (call) => intervalArithmetic(call, true),
  datetime_add: (call) => intervalArithmetic(call, false),
  datetime_sub: (call) => intervalArithmetic(call, true),
  date_add: (call) => intervalArithmetic(call, false),
  date_sub: (call) => intervalArithmetic(call, true),
  date_diff: (call) => ({ sql: boundariesCrossed(call, 'date'), type: INT64 }),
  datetime_diff: (call) => ({ sql: boundariesCrossed(call, 'datetime'), type: INT64 }),
  current_date: (call) => ({ sql: `CAST(${civilIn(timestampLiteral(BigInt(call.ctx.now) * 1000n), zoneArgument(call, 0))} AS DATE)`, type: DATE }),
  current_datetime: (call) => ({ sql: civilIn(timestampLiteral(BigInt(call.ctx.now) * 1000n), zoneArgument(call, 0)), type: DATETIME }),
  datetime: (call) => {
    const count = call.expr.args.length;
    if (count === 6) {
      const parts = call.expr.args.map((_, i) => call.arg(i).sql);
      return { sql: `make_timestamp(${joined(call, parts, ', ')})`, type: DATETIME };
    }
    if (count > 2) fail(call, 'takes a timestamp or date (and a time zone), or year, month, day, hour, minute, second');
    const value = call.arg(0);
    const zone = zoneArgument(call, 1, value);
    return { sql: zone.kind === 'utc' ? `CAST(${value.sql} AS TIMESTAMP)` : civilIn(value.sql, zone), type: DATETIME };
  },
  format_date: (call) => formatCivil(call, 'date'),
  format_datetime: (call) => formatCivil(call, 'datetime'),
  parse_date: (call) => parseCivil(call, 'DATE', DATE),
  parse_datetime: (call) => parseCivil(call, 'TIMESTAMP', DATETIME),
  timestamp_diff: (call) => {
    const [a, b] = [call.arg(0), call.arg(1)];
    const part = datePart(call, 2);
    const unit = Object.hasOwn(MICROS_PER, part) ? MICROS_PER[part as keyof typeof MICROS_PER] : undefined;
    if (!unit) fail(call, `unsupported date part ${part.toUpperCase()} (MICROSECOND to DAY)`);
    // whole units, truncated toward zero (DuckDB's // on BIGINT truncates)
    return { sql: `((epoch_us(${a.sql}) - epoch_us(${b.sql})) // ${unit})`, type: INT64 };
  },
  unix_micros: (call) => epochOf(call, 'microsecond'),
  unix_millis: (call) => epochOf(call, 'millisecond'),
  unix_seconds: (call) => epochOf(call, 'second'),
  timestamp_micros: (call) => timestampFromEpoch(call, 'microsecond'),
  timestamp_millis: (call) => timestampFromEpoch(call, 'millisecond'),
  timestamp_seconds: (call) => timestampFromEpoch(call, 'second'),
  timestamp: (call) => {
    const value = call.arg(0);
    if (value.type.kind === 'timestamp') return { sql: value.sql, type: TIMESTAMP };
    const zone = call.expr.args.length > 1 ? timeZone(literalText(call, 1, 'time zone'), call.expr.position) : UTC;
    if (zone.kind === 'utc') return { sql: `CAST(${value.sql} AS TIMESTAMPTZ)`, type: TIMESTAMP };
    if (value.type.kind !== 'string') return { sql: instantIn(`CAST(${value.sql} AS TIMESTAMP)`, zone), type: TIMESTAMP };
    // a text that names its own zone or offset keeps it; the argument is the zone of one that does not
    const sql = once(
      call,
      [value],
      ([text]) =>
        `(CASE WHEN regexp_matches(${text}, '${OWN_ZONE}') THEN CAST(${text} AS TIMESTAMPTZ) ELSE ${instantIn(`CAST(${text} AS TIMESTAMP)`, zone)} END)`,
    );
    return { sql, type: TIMESTAMP };
  },
  date: (call) => {
    if (call.expr.args.length === 3)
      return {
        sql: `make_date(${joined(
          call,
          [0, 1, 2].map((i) => call.arg(i).sql),
          ', ',
        )})`,
        type: DATE,
      };
    const value = call.arg(0);
    const zone = zoneArgument(call, 1, value);
    return { sql: `CAST(${zone.kind === 'utc' ? value.sql : civilIn(value.sql, zone)} AS DATE)`, type: DATE };
  },
  format_timestamp: (call) => {
    const format = literalText(call, 0, 'format');
    const value = call.arg(1);
    const zone = zoneArgument(call, 2, value);
    if (zone.kind !== 'utc' && hasZoneElement(format)) fail(call, 'zone elements (%Z, %z, %Ez) are written for UTC only; drop them or the time zone');
    // the elements read the zone's clock: a civil time, which the formatter takes as it is
    const clock = (timestamp: string) => (zone.kind === 'utc' ? timestamp : civilIn(timestamp, zone));
    return { sql: once(call, [value], ([timestamp]) => formatTimestampSql(format, clock(timestamp!), call.ctx.budget, call.expr.position)), type: STRING };
  },
  parse_timestamp: (call) => {
    const formats = parseTimestampFormats(literalText(call, 0, 'format'), call.expr.position);
    const text = call.arg(1);
    const zone = call.expr.args.length > 2 ? timeZone(literalText(call, 2, 'time zone'), call.expr.position) : UTC;
    const list = formats.length === 1 ? quoteString(formats[0]!) : `[${formats.map((f) => quoteString(f)).join(', ')}]`;
    if (zone.kind === 'utc') return { sql: `CAST(strptime(${text.sql}, ${list}) AS TIMESTAMPTZ)`, type: TIMESTAMP };
    if (formats.some((f) => f.includes('%z'))) fail(call, 'a format with a zone element (%z, %Ez) takes its zone from the text; drop the time zone argument');
    // the text is a time on the zone's clock
    return { sql: instantIn(`strptime(${text.sql}, ${list})`, zone), type: TIMESTAMP };
  },
};

/** FORMAT_DATE / FORMAT_DATETIME: the timestamp elements over a civil value (zone elements print UTC's). */
function formatCivil(call: Call, _kind: 'date' | 'datetime'): Typed {
  const format = literalText(call, 0, 'format');
  const value = call.arg(1);
  return {
    sql: once(call, [value], ([civil]) => formatTimestampSql(format, `CAST(${civil} AS TIMESTAMP)`, call.ctx.budget, call.expr.position)),
    type: STRING,
  };
}

function parseCivil(call: Call, duckDbType: 'DATE' | 'TIMESTAMP', type: SqlType): Typed {
  const formats = parseTimestampFormats(literalText(call, 0, 'format'), call.expr.position);
  if (formats.some((f) => f.includes('%z'))) fail(call, 'a civil date or time has no time zone element');
  const text = call.arg(1);
  const list = formats.length === 1 ? quoteString(formats[0]!) : `[${formats.map((f) => quoteString(f)).join(', ')}]`;
  return { sql: `CAST(strptime(${text.sql}, ${list}) AS ${duckDbType})`, type };
}

const CIVIL_DIFF_PARTS = {
  date: new Set(['day', 'month', 'quarter', 'year', 'isoyear']),
  datetime: new Set(['microsecond', 'millisecond', 'second', 'minute', 'hour', 'day', 'month', 'quarter', 'year', 'isoyear']),
};

/**
 * DATE_DIFF / DATETIME_DIFF: the part boundaries crossed from the second value to the first, as
 * DuckDB's date_diff counts them, except for weeks, where it counts whole 7-day spans: count week
 * starts instead (Sunday for WEEK, the day for WEEK(<weekday>), Monday for ISOWEEK).
 */
function boundariesCrossed(call: Call, kind: 'date' | 'datetime'): string {
  const [later, earlier] = [call.arg(0), call.arg(1)];
  const part = datePart(call, 2);
  const start = weekStart(part);
  if (start !== undefined) return weeksBetween(`CAST(${earlier.sql} AS DATE)`, `CAST(${later.sql} AS DATE)`, start);
  if (!CIVIL_DIFF_PARTS[kind].has(part)) fail(call, `unsupported date part ${part.toUpperCase()}`);
  return `date_diff('${part}', ${earlier.sql}, ${later.sql})`;
}

/**
 * The time zone argument at `i` (UTC when it is not written), a string literal; a zone other than
 * UTC applies to a TIMESTAMP `value` only (BigQuery has no zone for a DATE or DATETIME there).
 */
function zoneArgument(call: Call, i: number, value?: Typed): TimeZone {
  if (call.expr.args.length <= i) return UTC;
  const zone = timeZone(literalText(call, i, 'time zone'), call.expr.position);
  if (zone.kind !== 'utc' && value && value.type.kind !== 'timestamp' && value.type.kind !== 'unknown') {
    fail(call, `a time zone applies to a TIMESTAMP, not ${typeName(value.type)}`);
  }
  return zone;
}

/** A text ending in its own zone: a time followed by Z, UTC, an offset, or a tz database name. */
const OWN_ZONE = '(?i)[0-9]{2}:[0-9]{2}(:[0-9]{2}(\\.[0-9]+)?)?\\s*(z|utc|[+-][0-9]{1,2}(:?[0-9]{2})?|[a-z_]+/[a-z_/]+)\\s*$';

/** Whether a format writes the zone (%Z, %z, %Ez); `%%` is a literal percent sign. */
function hasZoneElement(format: string): boolean {
  for (let i = 0; i < format.length - 1; i++) {
    if (format[i] !== '%') continue;
    const next = format[i + 1];
    if (next === 'Z' || next === 'z' || (next === 'E' && format[i + 2] === 'z')) return true;
    i++;
  }
  return false;
}

function statistic(call: Call, fn: string): Typed {
  const value = call.arg(0);
  return { sql: `${fn}(${call.expr.distinct ? 'DISTINCT ' : ''}CAST(${value.sql} AS DOUBLE))${call.over}`, type: FLOAT64 };
}

/** A DOUBLE function; `domain` (of x) is where BigQuery raises an error where DuckDB gives NaN or NULL. */
function mathFunction(call: Call, fn: string, domain?: (x: string) => string): Typed {
  const value = call.arg(0);
  if (!domain) return { sql: `${fn}(CAST(${value.sql} AS DOUBLE))`, type: FLOAT64 };
  const sql = once(call, [value], ([v]) => {
    const x = `CAST(${v} AS DOUBLE)`;
    return `(CASE WHEN ${domain(x)} THEN error('${call.expr.name.toUpperCase()}: argument out of domain') ELSE ${fn}(${x}) END)`;
  });
  return { sql, type: FLOAT64 };
}

function pad(call: Call, fn: 'lpad' | 'rpad'): Typed {
  const [value, length] = [call.arg(0), call.arg(1)];
  const filler = call.expr.args.length > 2 ? call.arg(2) : { sql: `' '`, type: STRING };
  const sql = once(call, [value, length, filler], ([text, size, fill]) => {
    // the characters added, at the filler's bytes per character; a shorter length cuts the text, which builds nothing
    const padded = `${bytes(text!)} + (CAST(${size} AS DOUBLE) - length(${text})) * ${bytes(fill!)} / greatest(length(${fill}), 1)`;
    const grown = `(CASE WHEN ${size} > length(${text}) THEN ${padded} ELSE 0 END)`;
    return (
      `(CASE WHEN ${size} < 0 THEN error('${fn.toUpperCase()}: length must not be negative') ${stringGuard(fn.toUpperCase(), grown, call.ctx.maxValueBytes)} ` +
      `ELSE ${fn}(${text}, CAST(${size} AS INTEGER), ${fill}) END)`
    );
  });
  return { sql, type: STRING };
}

function intervalArithmetic(call: Call, subtract: boolean): Typed {
  const interval = call.expr.args[1];
  if (interval?.kind !== 'interval') fail(call, 'argument 2 must be an INTERVAL such as INTERVAL 1 HOUR');
  return call.printer.addInterval(call.arg(0), interval, subtract, call.ctx);
}

function substring(call: Call): Typed {
  const value = call.arg(0);
  const start = call.arg(1);
  const length = call.expr.args.length > 2 ? call.arg(2) : undefined;
  // BigQuery: 1-based, 0 reads as 1, a negative start counts from the end (clamped to the first
  // character), a negative length is an error
  const from = (text: string, first: string) =>
    `(CASE WHEN ${first} > 0 THEN ${first} WHEN ${first} = 0 THEN 1 ELSE greatest(length(${text}) + ${first} + 1, 1) END)`;
  if (!length) return { sql: nullIfAnyNull(call, [value, start], ([text, first]) => `substring(${text}, ${from(text!, first!)})`), type: STRING };
  const sql = nullIfAnyNull(call, [value, start, length], ([text, first, count]) => {
    const checked = `(CASE WHEN ${count} < 0 THEN error('SUBSTR: length must not be negative') ELSE ${count} END)`;
    return `substring(${text}, ${from(text!, first!)}, ${checked})`;
  });
  return { sql, type: STRING };
}

function trimFunction(call: Call, fn: 'trim' | 'ltrim' | 'rtrim'): Typed {
  const value = call.arg(0);
  if (call.expr.args.length === 1) return { sql: `${fn}(${value.sql})`, type: STRING };
  return { sql: `${fn}(${value.sql}, ${call.arg(1).sql})`, type: STRING };
}

export function translateCall(expr: CallExpr, ctx: ExprContext, printer: ExpressionPrinter): Typed {
  const fn = sandboxFunction(expr.name);
  if (!fn) throw new SandboxViolation(`function ${expr.name.toUpperCase()} is not supported in sandboxed queries`, expr.position);
  const name = expr.name as SandboxFunctionName;
  if (expr.star && !fn.allowsStar) throw new InvalidQuery(`${name.toUpperCase()}(*) is not valid`, expr.position);
  const signature = signatureOf(name, fn, expr.star ? 1 : expr.args.length, expr.position);
  const aggregate = isAggregate(fn);
  if (expr.distinct && !aggregate) throw new InvalidQuery(`DISTINCT is only allowed in aggregate functions`, expr.position);
  if (expr.limit && !fn.modifiers?.includes('limit')) {
    throw new InvalidQuery(`LIMIT is only allowed inside ARRAY_AGG() and STRING_AGG(), not ${name.toUpperCase()}()`, expr.position);
  }
  if (expr.orderBy?.length && !fn.modifiers?.includes('order_by'))
    throw new InvalidQuery(`ORDER BY is not allowed inside ${name.toUpperCase()}()`, expr.position);
  if ((expr.limit || expr.orderBy?.length) && expr.over) {
    throw new InvalidQuery(`ORDER BY and LIMIT inside ${name.toUpperCase()}() are not allowed with OVER`, expr.position);
  }
  if (fn.kind === 'window' && !expr.over) throw new InvalidQuery(`${name.toUpperCase()} needs an OVER clause`, expr.position);
  if (expr.over && (fn.kind === 'scalar' || fn.kind === 'aggregate')) {
    throw new InvalidQuery(`${name.toUpperCase()} is not an analytic function and takes no OVER clause`, expr.position);
  }
  if (expr.over && !ctx.windows) throw new InvalidQuery(`analytic function ${name.toUpperCase()} is not allowed in ${ctx.clause}`, expr.position);
  if (aggregate && !expr.over && !ctx.aggregates) {
    throw new InvalidQuery(`aggregate function ${name.toUpperCase()} is not allowed in ${ctx.clause}`, expr.position);
  }
  if (fn.kind !== 'scalar') ctx.seen.aggregate ||= aggregate && !expr.over;
  // arguments of an aggregate see FROM names only, and no aggregates or windows of their own
  const argContext: ExprContext =
    fn.kind === 'scalar' ? ctx : { ...ctx, aggregates: false, windows: false, aliases: undefined, clause: `${name.toUpperCase()}()` };
  const args = new Map<number, Typed>();
  const call: Call = {
    expr,
    ctx: argContext,
    printer,
    arg(i) {
      if (!args.has(i)) args.set(i, argument(expr, signature, i, printer.translateExpr(expr.args[i]!, argContext), printer));
      return args.get(i)!;
    },
    over: expr.over ? printer.windowSql(expr.over, ctx) : '',
  };
  return TRANSLATIONS[name](call);
}

/**
 * An argument checked against the registry's parameter: a value of another kind is an error, except
 * a string literal where a TIMESTAMP, DATETIME or DATE is expected, which BigQuery reads as one.
 */
function argument(expr: CallExpr, signature: Signature, i: number, value: Typed, printer: ExpressionPrinter): Typed {
  const parameter = parameterAt(signature, i);
  if (!Array.isArray(parameter)) return value;
  const kinds = parameter as readonly ValueKind[];
  // a NULL of no type (a NULL literal, a field no event has) takes the parameter's, which DuckDB needs to pick a function
  const [first] = kinds;
  if (value.type.kind === 'unknown' && first !== 'array' && first !== 'struct') {
    return { sql: `CAST(${value.sql} AS ${duckDbTypeName({ kind: first! })})`, type: { kind: first! } };
  }
  if (value.stringLiteral !== undefined && !kinds.includes('string')) {
    const target = kinds.find((kind) => kind === 'timestamp' || kind === 'datetime' || kind === 'date');
    if (target) return printer.coerceLiteral(value.stringLiteral, { kind: target }, expr.position);
  }
  return expect(value, [...kinds], `${expr.name.toUpperCase()} argument ${i + 1}`, expr.position);
}

/** An aggregate's own ORDER BY (`string_agg(x ORDER BY y)`), printed for DuckDB; empty without one. */
function aggregateOrder(call: Call): string {
  const items = call.expr.orderBy;
  if (!items?.length) return '';
  return ` ORDER BY ${joined(
    call,
    items.map((o) => call.printer.orderItemSql(call.printer.translateExpr(o.expr, call.ctx).sql, o)),
    ', ',
  )}`;
}
