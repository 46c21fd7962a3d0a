import type { estypes } from '@elastic/elasticsearch';
import type { BucketUnit } from '../../queries/endpoint.ts';
import type { Bindings } from '../sql/bindings.ts';
import type { Query } from '../sql/syntax.ts';
import type { ParameterValue, TableColumn } from '../sql/types.ts';

/**
 * What answering one request takes: the Elasticsearch scans (one per CTE read), an optional residual
 * query the embedded engine runs over the scanned rows, and where the answer's rows come from. Built
 * by pure functions in src/planner/; interpreted by src/executor/.
 */
export interface Plan {
  scans: Scan[];
  /** A sandboxed query's remainder, run over the scans' rows; absent when a scan's rows are the answer. */
  residual?: ResidualQuery;
  /** Which rows the caller gets. */
  answer: PlanAnswer;
  /** No answer carries more rows than this (the endpoint's maximum). */
  rowCap: number;
  /** The most events its event scans may read together (sandboxed SQL); one more and the request is refused as too broad. */
  maxScannedEvents?: number;
  /**
   * Bare names of a sandboxed query that no unnested record holds by the field catalogs planned
   * with, so they read as NULL: catalogs read before the field's first event would say otherwise.
   */
  unboundNames?: string[];
}

export type PlanAnswer =
  /** The rows of one scan, formatted for the API (events as logs.all rows, buckets as usage rows). */
  | { kind: 'scan'; table: string; format: 'log_rows' | 'usage_rows' }
  /** Chosen columns of each event (LQL): a column of the event, or the value at a metadata path. */
  | { kind: 'selected'; table: string; columns: SelectedColumn[] }
  /** A chart's buckets (LQL): the bucket start and the aggregate, oldest first. */
  | { kind: 'chart'; table: string }
  | { kind: 'residual' };

export interface SelectedColumn {
  name: string;
  /** `id`, `timestamp`, `event_message`, `project`, or a dotted path inside `metadata` (`metadata.user.id`). */
  path: string;
}

export type Scan = EventScan | RequestCountScan | ConstantScan | AggregationScan | ChartScan;

/** One aggregate per calendar bucket of `timestamp`, computed by Elasticsearch (LQL charts). */
export interface ChartScan extends ScanBase {
  kind: 'chart';
  index: string;
  scope: estypes.QueryDslQueryContainer[];
  search: estypes.SearchRequest;
  /** The output column of the aggregate, and where its value sits in a bucket. */
  value: { column: string; path: string[]; from: 'doc_count' | 'value' | 'percentile'; percentile?: string };
}

interface ScanBase {
  /** The table name the residual query reads the rows by (unique within a plan). */
  table: string;
  /** The CTE it reads. */
  cte: string;
  columns: TableColumn[];
}

/**
 * Stored events of one CTE: its mandatory scope, then the predicates pushed down to it. `search`
 * is the complete request (scope and predicates in `query.bool.filter`, `_source` only the
 * columns read); the executor only adds paging, each page no larger than what is left of the
 * plan's maxScannedEvents. `columns` are the CTE's columns the query reads.
 */
export interface EventScan extends ScanBase {
  kind: 'events';
  index: string;
  /** The CTE's scope filter, exactly as the scope step built it. */
  scope: estypes.QueryDslQueryContainer[];
  predicates: estypes.QueryDslQueryContainer[];
  search: estypes.SearchRequest;
  /**
   * Rows wanted: a limit (the first n in the search's sort), or every matching event. A limit with
   * `irregular` is taken among the events the filter matches exactly (one row each); every event of
   * `irregular` (matched only as a superset: it may give no row, or several) is read besides.
   * `superset` (with `irregular`) matches both parts and more, in one search: its first n events,
   * when fewer, hold every event the filter matches (and others, which WHERE drops).
   */
  take: { kind: 'limit'; rows: number; irregular?: estypes.SearchRequest; superset?: estypes.SearchRequest } | { kind: 'all' };
}

/** Request records per time bucket and per path text, counted by Elasticsearch aggregations. */
export interface RequestCountScan extends ScanBase {
  kind: 'request_counts';
  index: string;
  scope: estypes.QueryDslQueryContainer[];
  search: estypes.SearchRequest;
  bucket: BucketUnit;
  countColumns: string[];
}

/**
 * A GROUP BY the store computes: a composite aggregation over the scan's events, one row per group
 * (`keys` then `metrics`, named as the residual query reads them). Exact only for events whose
 * record arrays hold at most one element each (their `shape`); `irregular` counts the others in
 * scope, and when there are any the executor answers with `fallback` instead (pull and run the
 * original query in the engine).
 */
export interface AggregationScan extends ScanBase {
  kind: 'aggregation';
  index: string;
  scope: estypes.QueryDslQueryContainer[];
  search: estypes.SearchRequest;
  keys: AggregationKey[];
  /** Aggregation names from the response's `aggregations` to the one holding the groups (a composite, or one bucket without keys). */
  groupsAt: string[];
  metrics: AggregationMetric[];
  irregular: estypes.SearchRequest;
  fallback: { scan: EventScan; residual: ResidualQuery };
  /** More groups than this and the query is refused as too broad. */
  maxGroups: number;
}

export interface AggregationKey {
  column: string;
  /** `date` keys come back as epoch milliseconds and are loaded as microseconds. */
  kind: 'date' | 'terms';
}

export interface AggregationMetric {
  column: string;
  /** Where the value sits under a composite bucket: names of nested aggregations, then the value field. */
  path: string[];
  /** `doc_count` values are counts; a `value` whose `present` count is 0 is NULL (a sum over nothing). */
  value: 'doc_count' | 'value';
  present?: string[];
}

/** A table computed without the store (the usage window's start). */
export interface ConstantScan extends ScanBase {
  kind: 'constant';
  rows: Record<string, unknown>[];
}

/** The part of a sandboxed query the embedded engine runs, table references renamed to scan tables. */
export interface ResidualQuery {
  query: Query;
  /** What each name of `query` means (src/sql/bind.ts), decided once for the planner and the printer. */
  bindings: Bindings;
  /** Values of the endpoint's parameters, for `@name` references. */
  parameters: Record<string, ParameterValue | undefined>;
  /** What current_timestamp() means for this request (epoch milliseconds). */
  now: number;
  /**
   * Present when the query is only a projection, ORDER BY and LIMIT of one scan's rows, or simple
   * groups of them (ServiceGroupFinish): the service may finish it without the engine.
   */
  finish?: ServiceFinish | ServiceGroupFinish;
  /** Present when the query is a UNION ALL of SELECTs over one scan each that the service may finish without the engine. */
  unionFinish?: ServiceUnionFinish;
}

/**
 * A residual query the service finishes itself (src/executor/service-finish.ts): the rows of `table`,
 * each array of `unnests` unnested in turn, projected to `columns`, sorted by `order`, then OFFSET and
 * LIMIT. Its WHERE, if any, is the scan's filter exactly for the events of the scan's exact part;
 * those of its `take.irregular` part, matched only as a superset, must sort after the answer. Where
 * the scan's filter is only a superset of WHERE, `where` holds the conditions it left, for each row.
 */
export interface ServiceFinish {
  table: string;
  unnests: { array: ValuePath; join: 'inner' | 'left' }[];
  /** `datetime`: the value is a TIMESTAMP cast to DATETIME (the UTC civil time). */
  columns: { name: string; value: ValuePath; cast?: 'datetime' }[];
  order: { value: ValuePath; descending: boolean; nulls: 'first' | 'last' }[];
  limit?: number;
  offset: number;
  /**
   * The WHERE conditions the scan's filter did not apply exactly (it matched a superset of their
   * events): each row must make every one TRUE before it is sorted.
   */
  where?: FinishCondition[];
  /**
   * When the scan's filter is WHERE exactly for its exact part only (a record filter with a LIMIT):
   * the conditions it did not apply exactly, for the rows of the events it matched as a superset, so
   * those rows are checked here rather than left to the engine (none left: they pass as they are).
   * Absent where one of them is not a condition the service evaluates.
   */
  supersetWhere?: FinishCondition[];
}

/**
 * A UNION ALL of SELECTs over one scan each that the service finishes itself (src/executor/service-union.ts):
 * each branch's rows (every combination of its unnests' elements) making its `where` TRUE, its
 * `values` computed, all branches together sorted by `order` (positions of the union's columns),
 * then OFFSET and LIMIT; the answer's `columns` each read one of the union's columns.
 */
export interface ServiceUnionFinish {
  branches: UnionBranch[];
  columns: { name: string; position: number }[];
  order: { position: number; descending: boolean; nulls: 'first' | 'last' }[];
  limit?: number;
  offset: number;
}

export interface UnionBranch {
  table: string;
  unnests: ServiceFinish['unnests'];
  where?: FinishCondition[];
  /** One per column of the union, in order. */
  values: UnionValue[];
}

/**
 * A value of a union branch: a path, a NULL or text literal, CAST(path AS STRING), or a searched
 * CASE whose results are text literals or NULL.
 */
export type UnionValue =
  | { kind: 'path'; value: ValuePath }
  | { kind: 'literal'; text: string | null }
  | { kind: 'string_cast'; value: ValuePath }
  | { kind: 'case'; whens: { condition: FinishCondition; text: string | null }[]; otherwise: string | null };

/** A literal a finish condition compares with: a string, a number or a boolean as written. */
export type FinishLiteral = string | number | boolean;

/**
 * A value a finish condition reads: a path of the row, or its STRING read as INT64 (BigQuery's CAST),
 * or JSON_VALUE of its STRING at the member names `json` ($.a.b).
 */
export interface FinishOperand {
  value: ValuePath;
  cast?: 'int64';
  json?: string[];
}

/**
 * A GROUP BY the service finishes itself (src/executor/service-groups.ts): the rows of `table` through
 * its `unnests` (every element), those making each `where` condition TRUE, grouped by `keys`, each
 * group's `aggregates` computed; then the groups as `columns`, those making `having` TRUE, sorted by
 * `order`, OFFSET and LIMIT.
 * Without keys there is exactly one group, also over no rows.
 */
export interface ServiceGroupFinish {
  table: string;
  unnests: ServiceFinish['unnests'];
  where?: FinishCondition[];
  groups: { keys: GroupKey[]; aggregates: GroupAggregate[] };
  columns: { name: string; value: GroupOutput }[];
  /** HAVING, over the columns: each of its paths is `{ from: 'column', column: <a column's name>, fields: [] }`. */
  having?: FinishCondition;
  order: { value: GroupOutput; descending: boolean; nulls: 'first' | 'last' }[];
  limit?: number;
  offset: number;
}

/** A grouping key: a value of the row, or TIMESTAMP_TRUNC of the event's timestamp to a unit. */
export interface GroupKey {
  operand: FinishOperand;
  trunc?: 'minute' | 'hour' | 'day';
}

/** An aggregate over a group's rows: COUNT(*) has no operand; COUNTIF counts the rows making its condition TRUE. */
export type GroupAggregate =
  | { fn: 'count'; operand?: GroupKey; distinct: boolean }
  | { fn: 'sum' | 'min' | 'max'; operand: GroupKey }
  | { fn: 'countif'; condition: FinishCondition };

/** A value of a group: its key at a position of `keys`, or its aggregate at a position of `aggregates`. */
export type GroupOutput = { from: 'key' | 'aggregate'; index: number };

/**
 * A WHERE condition the service evaluates in SQL's three-valued logic (src/executor/finish-conditions.ts):
 * AND, OR and NOT of comparisons of a value with a literal, IS NULL, and matches of literal text
 * (`contains`: REGEXP_CONTAINS of a pattern without metacharacters; `like`: LIKE of a pattern whose
 * only wildcard is %, as its literal pieces).
 */
export type FinishCondition =
  | { kind: 'and' | 'or'; operands: FinishCondition[] }
  | { kind: 'not'; operand: FinishCondition }
  | { kind: 'compare'; operator: '=' | '!=' | '<' | '<=' | '>' | '>='; left: FinishOperand; right: FinishLiteral }
  | { kind: 'is_null'; operand: FinishOperand }
  | { kind: 'contains'; operand: FinishOperand; text: string }
  | { kind: 'like'; operand: FinishOperand; pieces: string[] };

/** A value of a row: a column of the table or the element of an earlier unnest, then record fields (as written). */
export type ValuePath = { from: 'column'; column: string; fields: string[] } | { from: 'unnest'; unnest: number; fields: string[] };
