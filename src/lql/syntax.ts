/**
 * The syntax tree of LQL, Logflare's log query language: whitespace-separated clauses, each a
 * filter, a chart, a select or a from. Produced by src/lql/parser.ts, printed back by
 * src/lql/printer.ts, compiled into a plan by src/planner/lql.ts. Relative times (`today`,
 * `last@2hours`) stay symbolic here: the planner resolves them against the request's time.
 */

/** 1-based offset in the LQL text where a clause starts. */
export type Offset = number;

export interface LqlQuery {
  filters: LqlFilter[];
  /** `c:` clauses: at most one aggregate and one group_by (minute when omitted). */
  chart?: LqlChart;
  /** `s:` clauses, in order; empty = the default columns. */
  select: LqlSelect[];
  /** `f:` / `from:`. */
  from?: { name: string; offset: Offset };
}

/**
 * A field path as written, normalised: `m.x` and `metadata.x` are `metadata.x`; `t` and
 * `timestamp` are `timestamp`; free text and `~regex` target `event_message`.
 */
export type LqlPath = string;

export type LqlFilter = LqlComparison | LqlRange | LqlTimestampFilter;

interface FilterBase {
  path: LqlPath;
  /** The clause was written with a leading `-`. */
  negated: boolean;
  offset: Offset;
}

export interface LqlComparison extends FilterBase {
  kind: 'comparison';
  /**
   * `contains`: free text (a bare word or a quoted phrase), a case-sensitive substring of the field.
   * `~`: partial regex match (RE2 syntax, `(?i)` for case-insensitive). `=`, `<`, `<=`, `>`, `>=`
   * compare. `list_includes` (`:@>`) and `list_includes_regex` (`:@>~`): some element of an array.
   * `is_null` (`:NULL`) takes no value.
   */
  operator: '=' | '<' | '<=' | '>' | '>=' | '~' | 'contains' | 'list_includes' | 'list_includes_regex' | 'is_null';
  value?: LqlValue;
}

/** `a..b` on a field: inclusive at both ends; on `metadata.level` with level names, over the syslog order. */
export interface LqlRange extends FilterBase {
  kind: 'range';
  low: LqlValue;
  high: LqlValue;
}

/** A filter on `t:` / `timestamp:`: a comparison with one time, or a range between two. */
export interface LqlTimestampFilter extends FilterBase {
  kind: 'timestamp';
  operator: '=' | '<' | '<=' | '>' | '>=' | 'range';
  /** For `range`: from and to (both inclusive); otherwise one time. */
  times: [LqlTime] | [LqlTime, LqlTime];
}

export type LqlValue =
  | { kind: 'string'; value: string; quoted: boolean }
  /** Numbers keep their text, so 1.0 prints as written and 64-bit integers survive. */
  | { kind: 'number'; text: string }
  | { kind: 'boolean'; value: boolean }
  | { kind: 'null' };

export type LqlTime =
  /**
   * An ISO 8601 date (`2024-01-01`), datetime (`2024-01-01T10:00:00`, fractions allowed), with `Z`
   * or an offset or neither (read as UTC), exactly as written (brace ranges already expanded).
   */
  | { kind: 'iso'; text: string }
  /** 10, 13 or 16 digits: seconds, milliseconds or microseconds since the epoch. */
  | { kind: 'unix'; digits: string }
  /** `now`, `today`, `yesterday`, `this@minute|hour|day|week|month|year`, `last@N(seconds|minutes|hours|days|weeks|months)`. */
  | { kind: 'relative'; name: 'now' | 'today' | 'yesterday' }
  | { kind: 'this'; unit: 'minute' | 'hour' | 'day' | 'week' | 'month' | 'year' }
  | { kind: 'last'; amount: number; unit: 'seconds' | 'minutes' | 'hours' | 'days' | 'weeks' | 'months' };

export interface LqlChart {
  aggregate: 'count' | 'countd' | 'avg' | 'sum' | 'max' | 'min' | 'p50' | 'p95' | 'p99';
  /** The aggregated field; `count(*)` has none. */
  path?: LqlPath;
  period: 'second' | 'minute' | 'hour' | 'day';
  offset: Offset;
}

export type LqlSelect = { kind: 'field'; path: LqlPath; alias?: string; offset: Offset } | { kind: 'all'; offset: Offset };
