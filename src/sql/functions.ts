/**
 * The functions a sandboxed query may call: the allow-list is the sandbox's real wall (DuckDB's own
 * settings cannot stop e.g. `enable_logging`), so anything not listed here is refused, whatever it
 * is called. The DuckDB printer (src/executor/duckdb-sql/) needs a translation for every name in
 * `SANDBOX_FUNCTION_NAMES`.
 *
 * Constructs with their own syntax (CAST/SAFE_CAST, EXTRACT, STRUCT, ARRAY(subquery), and
 * OFFSET/SAFE_OFFSET/ORDINAL/SAFE_ORDINAL inside `[...]`) are nodes of the syntax tree, not calls,
 * and are not listed.
 */

export type FunctionKind =
  | 'scalar'
  /** Only with GROUP BY semantics; BigQuery refuses OVER on it. */
  | 'aggregate'
  /** Only with OVER. */
  | 'window'
  /** An aggregate that may also take OVER. */
  | 'aggregate_or_window';

export interface SandboxFunction {
  kind: FunctionKind;
  minArgs: number;
  /** Infinity for variadic functions. */
  maxArgs: number;
  /** `count(*)`. */
  allowsStar?: boolean;
  /** The 0-based argument that is a date part written as a bare word (`timestamp_trunc(ts, hour)`). */
  datePartArgument?: number;
}

const scalar = (minArgs: number, maxArgs = minArgs, datePartArgument?: number): SandboxFunction => ({
  kind: 'scalar',
  minArgs,
  maxArgs,
  ...(datePartArgument === undefined ? {} : { datePartArgument }),
});
const aggregate = (minArgs: number, maxArgs = minArgs): SandboxFunction => ({ kind: 'aggregate', minArgs, maxArgs });
const aggregateOrWindow = (minArgs: number, maxArgs = minArgs): SandboxFunction => ({ kind: 'aggregate_or_window', minArgs, maxArgs });
const window = (minArgs: number, maxArgs = minArgs): SandboxFunction => ({ kind: 'window', minArgs, maxArgs });

const FUNCTIONS = {
  // aggregates
  count: { ...aggregateOrWindow(1), allowsStar: true },
  countif: aggregateOrWindow(1),
  sum: aggregateOrWindow(1),
  avg: aggregateOrWindow(1),
  min: aggregateOrWindow(1),
  max: aggregateOrWindow(1),
  any_value: aggregateOrWindow(1),
  array_agg: aggregateOrWindow(1),
  string_agg: aggregateOrWindow(1, 2),
  logical_and: aggregateOrWindow(1),
  logical_or: aggregateOrWindow(1),
  stddev: aggregateOrWindow(1),
  stddev_samp: aggregateOrWindow(1),
  stddev_pop: aggregateOrWindow(1),
  variance: aggregateOrWindow(1),
  var_samp: aggregateOrWindow(1),
  var_pop: aggregateOrWindow(1),
  approx_count_distinct: aggregate(1),
  approx_quantiles: aggregate(2),

  // window functions
  row_number: window(0),
  rank: window(0),
  dense_rank: window(0),
  percent_rank: window(0),
  cume_dist: window(0),
  ntile: window(1),
  lag: window(1, 3),
  lead: window(1, 3),
  first_value: window(1),
  last_value: window(1),

  // time
  timestamp_trunc: scalar(2, 3, 1),
  datetime_trunc: scalar(2, 2, 1),
  date_trunc: scalar(2, 2, 1),
  timestamp_add: scalar(2),
  timestamp_sub: scalar(2),
  datetime_add: scalar(2),
  datetime_sub: scalar(2),
  date_add: scalar(2),
  date_sub: scalar(2),
  timestamp_diff: scalar(3, 3, 2),
  datetime_diff: scalar(3, 3, 2),
  date_diff: scalar(3, 3, 2),
  current_timestamp: scalar(0),
  current_datetime: scalar(0, 1),
  current_date: scalar(0, 1),
  timestamp: scalar(1, 2),
  datetime: scalar(1, 6),
  date: scalar(1, 3),
  timestamp_micros: scalar(1),
  timestamp_millis: scalar(1),
  timestamp_seconds: scalar(1),
  unix_micros: scalar(1),
  unix_millis: scalar(1),
  unix_seconds: scalar(1),
  format_timestamp: scalar(2, 3),
  format_datetime: scalar(2),
  format_date: scalar(2),
  parse_timestamp: scalar(2, 3),
  parse_datetime: scalar(2),
  parse_date: scalar(2),

  // regular expressions and JSON
  regexp_contains: scalar(2),
  regexp_extract: scalar(2, 4),
  regexp_extract_all: scalar(2),
  regexp_replace: scalar(3),
  json_value: scalar(1, 2),
  json_query: scalar(2),
  json_extract: scalar(2),
  json_extract_scalar: scalar(1, 2),
  json_extract_array: scalar(1, 2),
  json_value_array: scalar(1, 2),
  to_json_string: scalar(1, 2),
  parse_json: scalar(1, 2),

  // strings
  lower: scalar(1),
  upper: scalar(1),
  length: scalar(1),
  char_length: scalar(1),
  concat: scalar(1, Infinity),
  substr: scalar(2, 3),
  substring: scalar(2, 3),
  strpos: scalar(2),
  starts_with: scalar(2),
  ends_with: scalar(2),
  contains_substr: scalar(2, 3),
  split: scalar(1, 2),
  trim: scalar(1, 2),
  ltrim: scalar(1, 2),
  rtrim: scalar(1, 2),
  replace: scalar(3),
  reverse: scalar(1),
  repeat: scalar(2),
  lpad: scalar(2, 3),
  rpad: scalar(2, 3),
  left: scalar(2),
  right: scalar(2),
  to_hex: scalar(1),
  md5: scalar(1),
  sha256: scalar(1),

  // conditionals
  safe_divide: scalar(2),
  ifnull: scalar(2),
  coalesce: scalar(1, Infinity),
  nullif: scalar(2),
  if: scalar(3),
  greatest: scalar(1, Infinity),
  least: scalar(1, Infinity),

  // numbers
  abs: scalar(1),
  round: scalar(1, 3),
  floor: scalar(1),
  ceil: scalar(1),
  ceiling: scalar(1),
  trunc: scalar(1, 2),
  mod: scalar(2),
  div: scalar(2),
  pow: scalar(2),
  power: scalar(2),
  sqrt: scalar(1),
  ln: scalar(1),
  log: scalar(1, 2),
  log10: scalar(1),
  exp: scalar(1),
  sign: scalar(1),

  // arrays
  array_length: scalar(1),
  array_to_string: scalar(2, 3),
  generate_array: scalar(2, 3),
  array_concat: scalar(1, Infinity),
  array_reverse: scalar(1),
} satisfies Record<string, SandboxFunction>;

export type SandboxFunctionName = keyof typeof FUNCTIONS;

/** Every function a sandboxed query may call, lower case. */
export const SANDBOX_FUNCTION_NAMES = Object.freeze(Object.keys(FUNCTIONS) as SandboxFunctionName[]);

/** The allowed function of that (lower-cased) name, or undefined when it is not allowed. */
export function sandboxFunction(name: string): SandboxFunction | undefined {
  return Object.hasOwn(FUNCTIONS, name) ? FUNCTIONS[name as SandboxFunctionName] : undefined;
}

export function isAggregate(fn: SandboxFunction): boolean {
  return fn.kind === 'aggregate' || fn.kind === 'aggregate_or_window';
}

/** Whether a call is an aggregate over groups (an aggregate function without OVER). */
export function isAggregateCall(call: { name: string; over?: unknown }): boolean {
  const fn = sandboxFunction(call.name);
  return call.over === undefined && fn !== undefined && isAggregate(fn);
}
