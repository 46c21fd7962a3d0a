/**
 * The function registry: every function a sandboxed query may call, with its signatures, result
 * type, BigQuery's meaning, what the planner can push down to the store and the bound on its
 * translation's size. It is also the sandbox's real wall (DuckDB's own settings cannot stop e.g.
 * `enable_logging`): anything not registered is refused, whatever it is called. The DuckDB printer
 * (src/executor/duckdb-sql/functions.ts) holds one translation per registered name, which the
 * compiler checks; the argument counts and kinds are checked here, once, for both.
 *
 * Constructs with their own syntax (CAST/SAFE_CAST, EXTRACT, STRUCT, ARRAY(subquery), and
 * OFFSET/SAFE_OFFSET/ORDINAL/SAFE_ORDINAL inside `[...]`) are nodes of the syntax tree, not calls,
 * and are not listed.
 */
import { InvalidQuery, type QueryPosition } from '../errors.ts';
import type { SqlType } from './types.ts';

export type FunctionKind =
  | 'scalar'
  /** Only with GROUP BY semantics; BigQuery refuses OVER on it. */
  | 'aggregate'
  /** Only with OVER. */
  | 'window'
  /** An aggregate that may also take OVER. */
  | 'aggregate_or_window';

export type ValueKind = Exclude<SqlType['kind'], 'unknown'>;

/**
 * What one argument may be: a value of one of the kinds (a NULL literal always fits), any value,
 * or a form the syntax gives rather than a value: a date part written as a bare word
 * (`timestamp_trunc(ts, hour)`) or an INTERVAL.
 */
export type Parameter = readonly ValueKind[] | 'any' | 'date_part' | 'interval';

/** One form of a call: its parameters, of which the first `required` must be written; the last repeats when `variadic`. */
export interface Signature {
  params: readonly Parameter[];
  required: number;
  variadic?: boolean;
}

/**
 * The result's type: a fixed kind, `ARRAY<STRING>` / `ARRAY<INT64>` / `ARRAY<TIMESTAMP>`, the first argument's type
 * (`argument`), an array of it (`array_of_argument`), the common type of the value arguments
 * (`common`), or NUMERIC for a NUMERIC first argument and FLOAT64 otherwise (`float64_or_numeric`).
 */
export type ResultRule = ValueKind | 'array<string>' | 'array<int64>' | 'array<timestamp>' | 'argument' | 'array_of_argument' | 'common' | 'float64_or_numeric';

/**
 * What the planner can hand to the store instead of the engine:
 * - `regexp_condition` / `prefix_condition`: as a WHERE condition on a scanned field, an Elasticsearch
 *   regexp / prefix query (predicates.ts);
 * - `count_metric`: COUNT / COUNTIF as a filtered document count, `value_metric`: SUM / AVG / MIN /
 *   MAX of a numeric field as the same-named metric aggregation (aggregation.ts);
 * - `time_bucket`: TIMESTAMP_TRUNC of the event timestamp as a group key, a date histogram;
 * - `time_constant`: with constant arguments, a constant time bound of the scanned range.
 */
export type Pushdown = 'regexp_condition' | 'prefix_condition' | 'count_metric' | 'value_metric' | 'time_bucket' | 'time_constant';

/**
 * The bound on a call's translation: each argument's text printed at most `copies` times (values
 * read several times are bound once, see bind.ts, except where the engine needs the value itself:
 * inside an aggregate, or a separator it takes only as a constant), plus a constant, plus, where
 * `literal`, text proportional to a literal argument (a format string, a JSONPath, a number of
 * quantiles).
 */
export interface TranslationCost {
  copies: number;
  literal?: boolean;
}

export type Modifier = 'order_by' | 'limit';

export interface SandboxFunction {
  kind: FunctionKind;
  signatures: readonly Signature[];
  result: ResultRule;
  /** BigQuery's meaning in one line, and how the sandbox departs from it where it does. */
  meaning: string;
  pushdown?: Pushdown;
  cost: TranslationCost;
  /** The fewest and most arguments over all signatures (Infinity for variadic functions). */
  minArgs: number;
  maxArgs: number;
  /** `count(*)`. */
  allowsStar?: boolean;
  /** What an aggregate call may hold besides its arguments: `ORDER BY` (string_agg(x ORDER BY y)), `LIMIT n`. */
  modifiers?: readonly Modifier[];
  /** The 0-based argument that is a date part written as a bare word. */
  datePartArgument?: number;
}

const STRING = ['string'] as const;
const INT64 = ['int64'] as const;
const BOOL = ['bool'] as const;
const NUMBER = ['int64', 'float64', 'numeric'] as const;
const FLOATING = ['int64', 'float64'] as const;
const TIMESTAMP = ['timestamp'] as const;
const DATETIME = ['datetime'] as const;
const DATE = ['date'] as const;
const ARRAY = ['array'] as const;
const JSON_TEXT = ['string', 'json'] as const;
/** The kinds CAST(x AS STRING) takes. */
const TO_STRING = ['string', 'int64', 'float64', 'bool', 'date', 'datetime', 'timestamp'] as const;

interface Entry {
  kind?: FunctionKind;
  /** One signature, or several (chosen by the number of arguments). */
  params: readonly Parameter[] | readonly Signature[];
  required?: number;
  variadic?: boolean;
  result: ResultRule;
  meaning: string;
  pushdown?: Pushdown;
  /** Each argument printed at most this often (default 1). */
  copies?: number;
  /** Text proportional to a literal argument is printed too. */
  literal?: boolean;
  allowsStar?: boolean;
  modifiers?: readonly Modifier[];
}

const isSignatureList = (params: Entry['params']): params is readonly Signature[] =>
  params.length > 0 && typeof params[0] === 'object' && 'params' in params[0];

function define(entry: Entry): SandboxFunction {
  const signatures: Signature[] = isSignatureList(entry.params)
    ? [...entry.params]
    : [{ params: entry.params, required: entry.required ?? entry.params.length, ...(entry.variadic ? { variadic: true } : {}) }];
  const datePartArgument = signatures[0]!.params.indexOf('date_part');
  return {
    kind: entry.kind ?? 'scalar',
    signatures,
    result: entry.result,
    meaning: entry.meaning,
    cost: { copies: entry.copies ?? 1, ...(entry.literal ? { literal: true } : {}) },
    minArgs: Math.min(...signatures.map((s) => s.required)),
    maxArgs: Math.max(...signatures.map((s) => (s.variadic ? Infinity : s.params.length))),
    ...(entry.pushdown ? { pushdown: entry.pushdown } : {}),
    ...(entry.allowsStar ? { allowsStar: true } : {}),
    ...(entry.modifiers ? { modifiers: entry.modifiers } : {}),
    ...(datePartArgument >= 0 ? { datePartArgument } : {}),
  };
}

const sig = (params: readonly Parameter[], required = params.length): Signature => ({ params, required });
const aggregate = (entry: Omit<Entry, 'kind'>): SandboxFunction => define({ ...entry, kind: 'aggregate_or_window' });
const window = (entry: Omit<Entry, 'kind'>): SandboxFunction => define({ ...entry, kind: 'window' });
const statistic = (meaning: string): SandboxFunction => aggregate({ params: [FLOATING], result: 'float64', meaning });
const rank = (result: ResultRule, meaning: string): SandboxFunction => window({ params: [], result, meaning });

const FUNCTIONS = {
  // aggregates
  count: aggregate({
    params: ['any'],
    result: 'int64',
    allowsStar: true,
    pushdown: 'count_metric',
    meaning: 'COUNT(*): the rows; COUNT(x): the rows where x is not NULL',
  }),
  countif: aggregate({ params: [BOOL], result: 'int64', pushdown: 'count_metric', meaning: 'the rows where the condition is TRUE' }),
  sum: aggregate({
    params: [NUMBER],
    result: 'argument',
    pushdown: 'value_metric',
    meaning: 'the sum of the non-NULL values; an INT64 sum that overflows is an error',
  }),
  avg: aggregate({
    params: [NUMBER],
    result: 'float64',
    pushdown: 'value_metric',
    meaning: 'the mean of the non-NULL values (FLOAT64 here also for NUMERIC input)',
  }),
  min: aggregate({ params: ['any'], result: 'argument', pushdown: 'value_metric', meaning: 'the least non-NULL value of an orderable type' }),
  max: aggregate({ params: ['any'], result: 'argument', pushdown: 'value_metric', meaning: 'the greatest non-NULL value of an orderable type' }),
  any_value: aggregate({ params: ['any'], result: 'argument', meaning: 'a value of the group, any one' }),
  array_agg: aggregate({
    params: ['any'],
    copies: 2,
    modifiers: ['order_by', 'limit'],
    result: 'array_of_argument',
    meaning: 'the values as an array (the first N with LIMIT); a NULL element is an error unless IGNORE NULLS',
  }),
  string_agg: aggregate({
    params: [STRING, STRING],
    required: 1,
    modifiers: ['order_by', 'limit'],
    copies: 2,
    result: 'string',
    meaning: 'the non-NULL values joined by the separator (default ",")',
  }),
  logical_and: aggregate({ params: [BOOL], result: 'bool', meaning: 'TRUE when every non-NULL value is TRUE' }),
  logical_or: aggregate({ params: [BOOL], result: 'bool', meaning: 'TRUE when any non-NULL value is TRUE' }),
  stddev: statistic('the sample standard deviation (alias of STDDEV_SAMP)'),
  stddev_samp: statistic('the sample standard deviation'),
  stddev_pop: statistic('the population standard deviation'),
  variance: statistic('the sample variance (alias of VAR_SAMP)'),
  var_samp: statistic('the sample variance'),
  var_pop: statistic('the population variance'),
  approx_count_distinct: define({ kind: 'aggregate', params: ['any'], result: 'int64', meaning: 'the approximate distinct count; exact here' }),
  approx_quantiles: define({
    kind: 'aggregate',
    params: ['any', INT64],
    result: 'array_of_argument',
    literal: true,
    meaning: 'the minimum, the N-1 quantile boundaries and the maximum; exact here',
  }),

  // window functions
  row_number: rank('int64', "the row's 1-based position in its ordered partition"),
  rank: rank('int64', "the row's rank, with gaps after ties"),
  dense_rank: rank('int64', "the row's rank, without gaps after ties"),
  percent_rank: rank('float64', '(rank - 1) / (rows in the partition - 1)'),
  cume_dist: rank('float64', 'the share of partition rows ordered before or with the row'),
  ntile: window({ params: [INT64], result: 'int64', meaning: "the row's bucket number when the partition is cut into N buckets" }),
  lag: window({ params: ['any', INT64, 'any'], required: 1, result: 'argument', meaning: 'the value N rows before (default 1), or the default' }),
  lead: window({ params: ['any', INT64, 'any'], required: 1, result: 'argument', meaning: 'the value N rows after (default 1), or the default' }),
  first_value: window({ params: ['any'], result: 'argument', meaning: "the value at the window frame's first row" }),
  last_value: window({ params: ['any'], result: 'argument', meaning: "the value at the window frame's last row" }),

  // time
  timestamp_trunc: define({
    params: [['timestamp', 'datetime'], 'date_part', STRING],
    required: 2,
    result: 'argument',
    pushdown: 'time_bucket',
    meaning: 'the timestamp truncated to the start of the part on the clock of a time zone (default UTC)',
  }),
  datetime_trunc: define({ params: [DATETIME, 'date_part'], result: 'datetime', meaning: 'the datetime truncated to the start of the part' }),
  date_trunc: define({ params: [DATE, 'date_part'], result: 'date', meaning: 'the date truncated to the start of the part' }),
  timestamp_add: define({
    params: [TIMESTAMP, 'interval'],
    result: 'timestamp',
    pushdown: 'time_constant',
    meaning: 'the timestamp plus the interval',
  }),
  timestamp_sub: define({
    params: [TIMESTAMP, 'interval'],
    result: 'timestamp',
    pushdown: 'time_constant',
    meaning: 'the timestamp minus the interval',
  }),
  datetime_add: define({ params: [DATETIME, 'interval'], result: 'datetime', meaning: 'the datetime plus the interval' }),
  datetime_sub: define({ params: [DATETIME, 'interval'], result: 'datetime', meaning: 'the datetime minus the interval' }),
  date_add: define({ params: [DATE, 'interval'], result: 'date', meaning: 'the date plus the interval (DAY to YEAR)' }),
  date_sub: define({ params: [DATE, 'interval'], result: 'date', meaning: 'the date minus the interval (DAY to YEAR)' }),
  timestamp_diff: define({
    params: [TIMESTAMP, TIMESTAMP, 'date_part'],
    result: 'int64',
    meaning: 'whole parts (MICROSECOND to DAY) from the second to the first, truncated',
  }),
  datetime_diff: define({
    params: [DATETIME, DATETIME, 'date_part'],
    result: 'int64',
    meaning: 'part boundaries crossed from the second datetime to the first',
  }),
  date_diff: define({ params: [DATE, DATE, 'date_part'], result: 'int64', meaning: 'part boundaries crossed from the second date to the first' }),
  current_timestamp: define({ params: [], result: 'timestamp', pushdown: 'time_constant', meaning: "the query's start time" }),
  current_datetime: define({
    params: [STRING],
    required: 0,
    result: 'datetime',
    meaning: "the query's start time on the clock of a time zone (default UTC)",
  }),
  current_date: define({ params: [STRING], required: 0, result: 'date', meaning: "the query's start date in a time zone (default UTC)" }),
  timestamp: define({
    params: [['string', 'datetime', 'date', 'timestamp'], STRING],
    required: 1,
    result: 'timestamp',
    meaning: 'the value read as a timestamp; a civil time without its own zone is read in the time zone (default UTC)',
  }),
  datetime: define({
    params: [sig([INT64, INT64, INT64, INT64, INT64, INT64]), sig([['timestamp', 'date', 'datetime'], STRING], 1)],
    result: 'datetime',
    meaning: 'a datetime from year, month, day, hour, minute, second, or from a timestamp on the clock of a time zone (default UTC) or a date',
  }),
  date: define({
    params: [sig([INT64, INT64, INT64]), sig([['timestamp', 'datetime', 'date', 'string'], STRING], 1)],
    result: 'date',
    meaning: 'a date from year, month, day, or the date of a timestamp in a time zone (default UTC), of a datetime or of text',
  }),
  timestamp_micros: define({ params: [INT64], result: 'timestamp', meaning: 'the timestamp that many microseconds after 1970-01-01 UTC' }),
  timestamp_millis: define({ params: [INT64], result: 'timestamp', meaning: 'the timestamp that many milliseconds after 1970-01-01 UTC' }),
  timestamp_seconds: define({ params: [INT64], result: 'timestamp', meaning: 'the timestamp that many seconds after 1970-01-01 UTC' }),
  unix_micros: define({ params: [TIMESTAMP], result: 'int64', meaning: 'microseconds since 1970-01-01 UTC' }),
  unix_millis: define({ params: [TIMESTAMP], result: 'int64', meaning: 'whole milliseconds since 1970-01-01 UTC, rounded down' }),
  unix_seconds: define({ params: [TIMESTAMP], result: 'int64', meaning: 'whole seconds since 1970-01-01 UTC, rounded down' }),
  format_timestamp: define({
    params: [STRING, TIMESTAMP, STRING],
    required: 2,
    result: 'string',
    literal: true,
    meaning: 'the timestamp written by a literal format on the clock of a time zone (default UTC; zone elements UTC only)',
  }),
  format_datetime: define({ params: [STRING, DATETIME], result: 'string', literal: true, meaning: 'the datetime written by a literal format' }),
  format_date: define({ params: [STRING, DATE], result: 'string', literal: true, meaning: 'the date written by a literal format' }),
  parse_timestamp: define({
    params: [STRING, STRING, STRING],
    required: 2,
    result: 'timestamp',
    literal: true,
    meaning: 'the text read as a timestamp by a literal format, in the time zone when it has no zone element (default UTC)',
  }),
  parse_datetime: define({ params: [STRING, STRING], result: 'datetime', literal: true, meaning: 'the text read as a datetime by a literal format' }),
  parse_date: define({ params: [STRING, STRING], result: 'date', literal: true, meaning: 'the text read as a date by a literal format' }),

  // regular expressions and JSON
  regexp_contains: define({
    params: [STRING, STRING],
    result: 'bool',
    pushdown: 'regexp_condition',
    meaning: 'TRUE when the RE2 regex matches part of the value',
  }),
  regexp_extract: define({
    params: [STRING, STRING, INT64, INT64],
    required: 2,
    result: 'string',
    meaning: 'the capture group (or whole match) of the Nth match (default 1st) from a 1-based position (default 1); NULL when none',
  }),
  regexp_extract_all: define({ params: [STRING, STRING], result: 'array<string>', meaning: "every match's capture group (or whole match)" }),
  regexp_replace: define({
    params: [STRING, STRING, STRING],
    result: 'string',
    meaning: 'every match replaced; \\1 in the replacement copies a group',
  }),
  json_value: define({
    params: [JSON_TEXT, STRING],
    required: 1,
    result: 'string',
    literal: true,
    meaning: 'the scalar at the JSONPath, unquoted; NULL for an object or array',
  }),
  json_query: define({ params: [JSON_TEXT, STRING], result: 'string', literal: true, meaning: 'the JSON text at the JSONPath' }),
  json_extract: define({
    params: [JSON_TEXT, STRING],
    result: 'string',
    literal: true,
    meaning: 'the JSON text at the JSONPath (legacy JSON_QUERY)',
  }),
  json_extract_scalar: define({
    params: [JSON_TEXT, STRING],
    required: 1,
    result: 'string',
    literal: true,
    meaning: 'the scalar at the JSONPath (legacy JSON_VALUE)',
  }),
  json_extract_array: define({
    params: [JSON_TEXT, STRING],
    required: 1,
    result: 'array<string>',
    literal: true,
    meaning: 'the array at the JSONPath, its elements as JSON text',
  }),
  json_value_array: define({
    params: [JSON_TEXT, STRING],
    required: 1,
    result: 'array<string>',
    literal: true,
    meaning: 'the array of scalars at the JSONPath, unquoted',
  }),
  to_json_string: define({
    params: ['any', BOOL],
    required: 1,
    result: 'string',
    meaning: 'the value as JSON text, compact or (when the flag is TRUE) indented by two spaces',
  }),
  parse_json: define({ params: [STRING], result: 'json', meaning: 'the text read as a JSON value' }),

  // strings
  lower: define({ params: [STRING], result: 'string', meaning: 'the text in lower case' }),
  upper: define({ params: [STRING], result: 'string', meaning: 'the text in upper case' }),
  length: define({ params: [['string', 'bytes']], result: 'int64', meaning: 'characters of a STRING, bytes of BYTES' }),
  char_length: define({ params: [STRING], result: 'int64', meaning: 'characters of the text' }),
  concat: define({ params: [TO_STRING], variadic: true, result: 'string', meaning: 'the values cast to STRING and joined; NULL when any is NULL' }),
  substr: define({
    params: [STRING, INT64, INT64],
    required: 2,
    result: 'string',
    meaning: 'the text from a 1-based position (negative: from the end), of at most the length',
  }),
  substring: define({ params: [STRING, INT64, INT64], required: 2, result: 'string', meaning: 'alias of SUBSTR' }),
  strpos: define({ params: [STRING, STRING], result: 'int64', meaning: 'the 1-based position of the first occurrence, 0 when none' }),
  starts_with: define({
    params: [STRING, STRING],
    result: 'bool',
    pushdown: 'prefix_condition',
    meaning: 'TRUE when the text begins with the prefix',
  }),
  ends_with: define({ params: [STRING, STRING], result: 'bool', meaning: 'TRUE when the text ends with the suffix' }),
  contains_substr: define({
    params: [STRING, STRING],
    result: 'bool',
    meaning: 'TRUE when the text contains the search text, ignoring case (strings only here)',
  }),
  split: define({ params: [STRING, STRING], required: 1, result: 'array<string>', meaning: 'the text cut at each separator (default ",")' }),
  trim: define({
    params: [STRING, STRING],
    required: 1,
    result: 'string',
    meaning: 'the text without leading and trailing whitespace (or the given characters)',
  }),
  ltrim: define({
    params: [STRING, STRING],
    required: 1,
    result: 'string',
    meaning: 'the text without leading whitespace (or the given characters)',
  }),
  rtrim: define({
    params: [STRING, STRING],
    required: 1,
    result: 'string',
    meaning: 'the text without trailing whitespace (or the given characters)',
  }),
  replace: define({ params: [STRING, STRING, STRING], result: 'string', meaning: 'every occurrence replaced; an empty search text changes nothing' }),
  reverse: define({ params: [STRING], result: 'string', meaning: 'the characters in reverse order' }),
  repeat: define({ params: [STRING, INT64], result: 'string', meaning: 'the text repeated N times; a negative N is an error' }),
  lpad: define({ params: [STRING, INT64, STRING], required: 2, result: 'string', meaning: 'the text padded on the left (or cut) to the length' }),
  rpad: define({ params: [STRING, INT64, STRING], required: 2, result: 'string', meaning: 'the text padded on the right (or cut) to the length' }),
  left: define({ params: [STRING, INT64], result: 'string', meaning: 'the first N characters' }),
  right: define({ params: [STRING, INT64], result: 'string', meaning: 'the last N characters' }),
  to_hex: define({ params: [['bytes']], result: 'string', meaning: 'the bytes as lower-case hexadecimal text' }),
  md5: define({ params: [STRING], result: 'bytes', meaning: 'the MD5 digest as BYTES' }),
  sha256: define({ params: [STRING], result: 'bytes', meaning: 'the SHA-256 digest as BYTES' }),

  // conditionals
  safe_divide: define({ params: [FLOATING, FLOATING], result: 'float64', meaning: 'x / y, NULL when y is 0' }),
  ifnull: define({ params: ['any', 'any'], result: 'common', meaning: 'the first value unless it is NULL, else the second' }),
  coalesce: define({ params: ['any'], variadic: true, result: 'common', meaning: 'the first non-NULL value' }),
  nullif: define({ params: ['any', 'any'], result: 'argument', meaning: 'NULL when the values are equal, else the first' }),
  if: define({ params: [BOOL, 'any', 'any'], result: 'common', meaning: 'the second value when the condition is TRUE, else the third' }),
  greatest: define({ params: ['any'], variadic: true, result: 'common', meaning: 'the greatest value; NULL when any is NULL' }),
  least: define({ params: ['any'], variadic: true, result: 'common', meaning: 'the least value; NULL when any is NULL' }),

  // numbers
  abs: define({ params: [NUMBER], result: 'argument', meaning: 'the absolute value' }),
  round: define({
    params: [NUMBER, INT64, STRING],
    required: 1,
    result: 'float64_or_numeric',
    literal: true,
    meaning: 'rounded to N decimal places (default 0), halves away from zero or, for NUMERIC, by the mode ROUND_HALF_EVEN',
  }),
  floor: define({ params: [FLOATING], result: 'float64', meaning: 'the largest integral value not greater' }),
  ceil: define({ params: [FLOATING], result: 'float64', meaning: 'the smallest integral value not less' }),
  ceiling: define({ params: [FLOATING], result: 'float64', meaning: 'alias of CEIL' }),
  trunc: define({
    params: [FLOATING, INT64],
    required: 1,
    result: 'float64',
    meaning: 'the value rounded toward zero, at N decimal places (default 0)',
  }),
  mod: define({ params: [INT64, INT64], result: 'int64', meaning: "the remainder, with the dividend's sign; a zero divisor is an error" }),
  div: define({ params: [INT64, INT64], result: 'int64', meaning: 'the quotient rounded toward zero; a zero divisor is an error' }),
  ieee_divide: define({ params: [FLOATING, FLOATING], result: 'float64', meaning: 'x / y by IEEE 754: a zero divisor gives +/-inf or NaN' }),
  pow: define({ params: [FLOATING, FLOATING], result: 'float64', meaning: 'x raised to the power y' }),
  power: define({ params: [FLOATING, FLOATING], result: 'float64', meaning: 'alias of POW' }),
  sqrt: define({ params: [FLOATING], result: 'float64', meaning: 'the square root; a negative value is an error' }),
  ln: define({ params: [FLOATING], result: 'float64', meaning: 'the natural logarithm; x <= 0 is an error' }),
  log: define({ params: [FLOATING, FLOATING], required: 1, result: 'float64', meaning: 'the natural logarithm, or the logarithm to the given base' }),
  log10: define({ params: [FLOATING], result: 'float64', meaning: 'the base-10 logarithm; x <= 0 is an error' }),
  exp: define({ params: [FLOATING], result: 'float64', meaning: 'e raised to the power x' }),
  sign: define({ params: [FLOATING], result: 'argument', meaning: "-1, 0 or +1 by the value's sign" }),

  // arrays
  generate_timestamp_array: define({
    params: [TIMESTAMP, TIMESTAMP, 'interval'],
    result: 'array<timestamp>',
    meaning: 'the timestamps from start to end by the interval (MICROSECOND to DAY); a zero interval is an error',
  }),
  array_length: define({ params: [ARRAY], result: 'int64', meaning: 'the number of elements' }),
  array_to_string: define({
    params: [ARRAY, STRING, STRING],
    required: 2,
    copies: 3,
    result: 'string',
    meaning: 'the STRING elements joined; NULLs skipped unless a replacement is given',
  }),
  generate_array: define({
    params: [INT64, INT64, INT64],
    required: 2,
    result: 'array<int64>',
    meaning: 'the integers from start to end by step (default 1); a zero step is an error',
  }),
  array_concat: define({ params: [ARRAY], variadic: true, result: 'common', meaning: 'the arrays joined; NULL when any is NULL' }),
  array_reverse: define({ params: [ARRAY], result: 'argument', meaning: 'the elements in reverse order' }),
} satisfies Record<string, SandboxFunction>;

export type SandboxFunctionName = keyof typeof FUNCTIONS;

/** Every function a sandboxed query may call, lower case. */
export const SANDBOX_FUNCTION_NAMES = Object.freeze(Object.keys(FUNCTIONS) as SandboxFunctionName[]);

/** The registered function of that (lower-cased) name, or undefined when it is not allowed. */
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

/** What the planner may push down for this call (none for a windowed call). */
export function pushdownOf(call: { name: string; over?: unknown }): Pushdown | undefined {
  return call.over === undefined ? sandboxFunction(call.name)?.pushdown : undefined;
}

/**
 * The signature a call with `written` arguments (`count(*)` counts one) takes: the one place
 * argument counts are checked, for the front end and the printer alike.
 */
export function signatureOf(name: string, fn: SandboxFunction, written: number, position?: QueryPosition): Signature {
  const found = fn.signatures.find((s) => written >= s.required && (s.variadic || written <= s.params.length));
  if (found) return found;
  const expected = argumentCounts(fn);
  throw new InvalidQuery(`${name} takes ${expected} argument${expected.endsWith(' 1') || expected === '1' ? '' : 's'}, not ${written}`, position);
}

/** The argument counts a function takes, for messages: `2`, `1 to 3`, `at least 1`, `1, 2 or 6`. */
function argumentCounts(fn: SandboxFunction): string {
  if (fn.maxArgs === Infinity) return `at least ${fn.minArgs}`;
  const counts = new Set<number>();
  for (const signature of fn.signatures) for (let n = signature.required; n <= signature.params.length; n++) counts.add(n);
  const sorted = [...counts].sort((x, y) => x - y);
  if (sorted.length === 1) return `${fn.minArgs}`;
  if (sorted.length === fn.maxArgs - fn.minArgs + 1) return `${fn.minArgs} to ${fn.maxArgs}`;
  return `${sorted.slice(0, -1).join(', ')} or ${sorted.at(-1)}`;
}

/** The parameter at a 0-based position of a signature (a variadic signature's last one repeats). */
export function parameterAt(signature: Signature, index: number): Parameter | undefined {
  if (index < signature.params.length) return signature.params[index];
  return signature.variadic ? signature.params.at(-1) : undefined;
}
