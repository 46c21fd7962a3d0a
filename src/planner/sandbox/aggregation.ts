import type { estypes } from '@elastic/elasticsearch';
import { implicitName } from '../../sql/bindings.ts';
import { isAggregateCall, pushdownOf } from '../../sql/functions.ts';
import type { Expr, OrderItem, Query, Select, SelectItem } from '../../sql/syntax.ts';
import { freezeTree } from '../../sql/frozen-tree.ts';
import { mapExpression, subqueryOf, walk } from '../../sql/walk.ts';
import type { SqlType, TableColumn } from '../../sql/types.ts';
import { nestedAncestor, type FieldCatalog } from '../field-catalog.ts';
import type { AggregationKey, AggregationMetric, AggregationScan, EventScan, ResidualQuery } from '../plan.ts';
import { conjuncts, truthOf, type PredicateContext } from './predicates.ts';
import { presentArrays, regularEvents } from './record-filters.ts';
import type { SelectScope } from './select-scope.ts';

type QueryDsl = estypes.QueryDslQueryContainer;

/** Units Elasticsearch's calendar intervals share with BigQuery's TIMESTAMP_TRUNC (its WEEK starts on Sunday, Elasticsearch's on Monday). */
const CALENDAR_UNITS = new Set(['second', 'minute', 'hour', 'day', 'month', 'quarter', 'year']);

export interface AggregationInput {
  query: Query;
  select: Select;
  scope: SelectScope;
  catalog: FieldCatalog;
  now: number;
  /** The table of the event scan the query would pull without the pushdown. */
  table: string;
}

/**
 * A grouped (or whole-table) aggregate over one CTE, computed by Elasticsearch instead of pulling
 * the events: WHERE must translate exactly, every GROUP BY key must be a calendar bucket of
 * `timestamp` or a single-valued keyword, boolean or integer field (all in the same nested records,
 * or none), and every aggregate one the store computes exactly (count, countif, count of a CASE,
 * sum, avg, min, max of integers, count distinct). The
 * residual query is the original SELECT over the aggregation's rows: keys and aggregates replaced
 * by columns, HAVING become WHERE. Undefined when any part does not fit. The shape is what the query,
 * its bindings and its catalog decide: the same for every request that reads no clock.
 */
export interface AggregationShape {
  /** The groups' table the residual reads. */
  table: string;
  columns: TableColumn[];
  /** WHERE's filters, the regular events and the arrays an inner unnest needs: the search's filter after the scope. */
  filters: QueryDsl[];
  /** The events whose shape lets the store compute the groups exactly. */
  regular: QueryDsl;
  aggregations: Record<string, estypes.AggregationsAggregationContainer>;
  keys: AggregationKey[];
  groupsAt: string[];
  metrics: AggregationMetric[];
  /** The original SELECT over the groups' rows (frozen: shared by the requests of the text). */
  residual: Query;
}

/** The aggregation's shape (see AggregationShape), or undefined when any part does not fit. */
export function aggregationShape(input: AggregationInput): AggregationShape | undefined {
  const { query, select, scope, catalog } = input;
  // ROLLUP's subtotal rows are not buckets of one composite aggregation
  if (query.with.length > 0 || query.body !== select || !scope.readsOnlyTheScan || select.rollup) return undefined;
  const context: PredicateContext = { scope, catalog, now: input.now };
  if (select.items.some((item) => item.kind === 'wildcard')) return undefined;

  const filters: QueryDsl[] = [];
  const paths: string[] = [];
  for (const condition of conjuncts(select.where)) {
    const truth = truthOf(condition, context);
    if (!truth) return undefined;
    filters.push(truth.whenTrue);
    paths.push(...truth.paths);
  }

  const keys: { expr: Expr; key: AggregationKey; source: Record<string, estypes.AggregationsCompositeAggregationSource>; type: SqlType; nested?: string }[] =
    [];
  for (const written of select.groupBy) {
    const expr = groupKeyExpression(written, select, scope);
    if (!expr) return undefined;
    const column = `__k${keys.length}`;
    const key = groupKey(expr, column, context);
    if (!key) return undefined;
    paths.push(...key.paths);
    keys.push({
      expr: key.expr,
      key: { column, kind: key.kind },
      source: { [column]: key.source },
      type: key.type,
      ...(key.nested ? { nested: key.nested } : {}),
    });
  }
  // keys inside nested records group those records: all keys must live in the same ones, and every
  // event must hold exactly one of them (an inner unnest of a regular event), so records are rows
  const nestedKeys = new Set(keys.map((key) => key.nested));
  if (nestedKeys.size > 1) return undefined;
  const nested = [...nestedKeys][0];
  if (nested && !scope.unnests.some((unnest) => unnest.join === 'inner' && unnest.path === nested)) return undefined;
  if (keys.length === 0 && !containsAggregate([...itemExpressions(select.items), select.having, ...query.orderBy.map((item) => item.expr)])) return undefined;

  const metrics: { call: Expr; metric: AggregationMetric; aggregation: Record<string, estypes.AggregationsAggregationContainer>; type: SqlType }[] = [];
  const calls = aggregateCalls([...itemExpressions(select.items), select.having, select.qualify, ...query.orderBy.map((item) => item.expr)]);
  for (const call of calls) {
    if (metrics.some((existing) => sameExpression(existing.call, call))) continue;
    const column = `__m${metrics.length}`;
    const metric = metricOf(call, column, context);
    if (!metric) return undefined;
    paths.push(...metric.paths);
    metrics.push({ call, ...metric });
  }

  const unnests = scope.unnests;
  const regular = regularEvents([...unnests.map((unnest) => unnest.path), ...paths]);
  const present = presentArrays(unnests);
  const metricAggregations = Object.assign({}, ...metrics.map((metric) => metric.aggregation)) as Record<string, estypes.AggregationsAggregationContainer>;
  // metrics are computed on the events: under reverse_nested when the groups are nested records
  const composite = (aggs: Record<string, estypes.AggregationsAggregationContainer>): estypes.AggregationsAggregationContainer => ({
    composite: { size: 1000, sources: keys.map((key) => key.source) },
    aggs,
  });
  const aggregations: Record<string, estypes.AggregationsAggregationContainer> =
    keys.length === 0
      ? { groups: { filter: { match_all: {} }, aggs: metricAggregations } }
      : nested
        ? { records: { nested: { path: nested }, aggs: { groups: composite({ events: { reverse_nested: {}, aggs: metricAggregations } }) } } }
        : { groups: composite(metricAggregations) };
  const table = `${input.table}_groups`;
  const columns: TableColumn[] = [
    ...keys.map((key) => ({ name: key.key.column, type: key.type })),
    ...metrics.map((metric) => ({ name: metric.metric.column, type: metric.type })),
  ];

  const replace = (node: Expr): Expr =>
    replaceExpressions(node, [
      ...keys.map((key) => [key.expr, key.key.column] as const),
      ...metrics.map((metric) => [metric.call, metric.metric.column] as const),
    ]);
  // an item keeps the name it had (`function_id`, not the key column it now reads)
  const items: SelectItem[] = select.items.map((item) => {
    if (item.kind !== 'expression') return item;
    const name = item.alias ?? implicitName(item.expr);
    return { ...item, expr: replace(item.expr), ...(name === undefined ? {} : { alias: name }) };
  });
  const residual: Query = {
    kind: 'query',
    with: [],
    body: {
      kind: 'select',
      distinct: select.distinct,
      items,
      from: [{ relation: { kind: 'table', name: [table] }, joins: [] }],
      ...(select.having ? { where: replace(select.having) } : {}),
      groupBy: [],
      ...(select.qualify ? { qualify: replace(select.qualify) } : {}),
    },
    orderBy: [...query.orderBy.map((item): OrderItem => ({ ...item, expr: replace(item.expr) })), ...groupOrder(keys, select)],
    ...(query.limit ? { limit: query.limit } : {}),
    ...(query.offset ? { offset: query.offset } : {}),
  };
  if (referencesRawColumns(residual, new Set(columns.map((column) => column.name)))) return undefined;
  return {
    table,
    columns,
    filters: [...filters, regular, ...present],
    regular,
    aggregations,
    keys: keys.map((key) => key.key),
    groupsAt: nested ? ['records', 'groups'] : ['groups'],
    metrics: nested ? metrics.map((metric) => prefixed(metric.metric, 'events')) : metrics.map((metric) => metric.metric),
    residual: freezeTree(residual),
  };
}

/** The aggregation's scan for one request: the shape's search within the fallback scan's scope. */
export function aggregationScan(shape: AggregationShape, fallback: EventScan, fallbackResidual: ResidualQuery, maxGroups: number): AggregationScan {
  const search: estypes.SearchRequest = {
    index: fallback.index,
    ignore_unavailable: true,
    allow_no_indices: true,
    size: 0,
    track_total_hits: false,
    query: { bool: { filter: [...fallback.scope, ...shape.filters] } },
    aggs: shape.aggregations,
  };
  const irregular: estypes.SearchRequest = {
    index: fallback.index,
    ignore_unavailable: true,
    allow_no_indices: true,
    size: 0,
    track_total_hits: 1,
    terminate_after: 1,
    query: { bool: { filter: [...fallback.scope, ...fallback.predicates], must_not: [shape.regular] } },
  };
  return {
    kind: 'aggregation',
    table: shape.table,
    cte: fallback.cte,
    columns: shape.columns,
    index: fallback.index,
    scope: fallback.scope,
    search,
    keys: shape.keys,
    groupsAt: shape.groupsAt,
    metrics: shape.metrics,
    irregular,
    fallback: { scan: fallback, residual: fallbackResidual },
    maxGroups,
  };
}

/**
 * The groups' keys as the last ORDER BY keys, ascending with NULLs first: the order the composite
 * gives the rows, which a query without ORDER BY answers in (DuckDB keeps the table's order) and
 * which decides ties of the query's own keys. Either order is one BigQuery may answer; made explicit,
 * the answer is one the service can give without the engine. Not under SELECT DISTINCT, which orders
 * only by what it selects.
 */
function groupOrder(keys: readonly { key: AggregationKey }[], select: Select): OrderItem[] {
  if (select.distinct) return [];
  return keys.map((key) => ({ expr: { kind: 'identifier', path: [key.key.column] }, descending: false, nulls: 'first' }));
}

function prefixed(metric: AggregationMetric, step: string): AggregationMetric {
  return { ...metric, path: [step, ...metric.path], ...(metric.present ? { present: [step, ...metric.present] } : {}) };
}

/** GROUP BY `alias` means the select item of that alias (BigQuery); GROUP BY 2 the second item. */
function groupKeyExpression(written: Expr, select: Select, scope: SelectScope): Expr | undefined {
  const alias = scope.aliasOf(written)?.toLowerCase();
  if (alias !== undefined) {
    const item = select.items.find(
      (candidate) => candidate.kind === 'expression' && (candidate.alias ?? implicitName(candidate.expr))?.toLowerCase() === alias,
    );
    return item?.kind === 'expression' ? item.expr : undefined;
  }
  if (written.kind === 'number') {
    const item = select.items[Number(written.text) - 1];
    return item?.kind === 'expression' ? item.expr : undefined;
  }
  return written;
}

interface GroupKey {
  /** The expression the residual finds and replaces with the key's column. */
  expr: Expr;
  /** The nested records the key's field lives in, if any (its composite must run inside them). */
  nested?: string;
  kind: 'date' | 'terms';
  source: estypes.AggregationsCompositeAggregationSource;
  type: SqlType;
  paths: string[];
}

function groupKey(written: Expr, _column: string, context: PredicateContext): GroupKey | undefined {
  // cast(timestamp_trunc(...) as datetime): the bucket is the trunc; the cast stays in the residual
  let expr = written;
  while (expr.kind === 'cast' && (expr.type === 'DATETIME' || expr.type === 'TIMESTAMP')) expr = expr.expr;
  if (expr.kind === 'call' && pushdownOf(expr) === 'time_bucket' && expr.args.length === 2) {
    const [target, part] = expr.args as [Expr, Expr];
    const field = target.kind === 'identifier' ? context.scope.resolve(target) : undefined;
    if (field?.kind !== 'column' || field.column !== 'timestamp' || part.kind !== 'date_part' || !CALENDAR_UNITS.has(part.part)) return undefined;
    return {
      expr,
      kind: 'date',
      source: { date_histogram: { field: 'timestamp', calendar_interval: part.part as estypes.AggregationsCalendarInterval, time_zone: 'UTC', order: 'asc' } },
      type: { kind: 'timestamp' },
      paths: [],
    };
  }
  if (expr.kind !== 'identifier') return undefined;
  const field = context.scope.resolve(expr);
  if (!field) return undefined;
  if (field.kind === 'column') {
    if (field.column !== 'id' && field.column !== 'project') return undefined;
    return { expr, kind: 'terms', source: { terms: { field: field.column, missing_bucket: true } }, type: { kind: 'string' }, paths: [] };
  }
  const type = context.catalog.typeOf(field.path);
  const sqlType = valueType(type);
  if (!sqlType) return undefined;
  const nested = nestedAncestor(field.path, context.catalog);
  return {
    expr,
    kind: 'terms',
    source: { terms: { field: field.path, missing_bucket: true } },
    type: sqlType,
    paths: [field.path],
    ...(nested ? { nested } : {}),
  };
}

/**
 * Field types whose indexed values are the values the engine reads from the events. Not floating
 * point: a float field indexes float32 (0.1 becomes 0.10000000149011612), and a double one holding 2
 * is a BIGINT to the engine, which types columns by their values, but DOUBLE here. Not unsigned_long,
 * whose values pass 2^63.
 */
const EXACT_NUMBER_TYPES = new Set(['long', 'integer', 'short', 'byte']);

function valueType(type: string | undefined): SqlType | undefined {
  if (type === 'keyword') return { kind: 'string' };
  if (type === 'boolean') return { kind: 'bool' };
  if (type !== undefined && EXACT_NUMBER_TYPES.has(type)) return { kind: 'int64' };
  return undefined;
}

interface Metric {
  metric: AggregationMetric;
  aggregation: Record<string, estypes.AggregationsAggregationContainer>;
  type: SqlType;
  paths: string[];
}

function metricOf(call: Extract<Expr, { kind: 'call' }>, column: string, context: PredicateContext): Metric | undefined {
  const count = (filter: QueryDsl, paths: string[]): Metric => ({
    metric: { column, path: [column], value: 'doc_count' },
    aggregation: { [column]: { filter } },
    type: { kind: 'int64' },
    paths,
  });
  const pushdown = pushdownOf(call);
  if (pushdown === 'count_metric' && call.star) return count({ match_all: {} }, []);
  if (call.args.length !== 1 || (pushdown !== 'count_metric' && pushdown !== 'value_metric')) return undefined;
  const argument = call.args[0]!;
  if (call.name === 'countif' && !call.distinct) {
    const truth = truthOf(argument, context);
    return truth && count(truth.whenTrue, truth.paths);
  }
  if (call.name === 'count' && !call.distinct) {
    const condition = countedCondition(argument);
    if (condition) {
      const truth = truthOf(condition, context);
      return truth && count(truth.whenTrue, truth.paths);
    }
    const truth = truthOf({ kind: 'is', negated: true, expr: argument, test: 'null' }, context);
    return truth && count(truth.whenTrue, truth.paths);
  }
  if (argument.kind !== 'identifier') return undefined;
  const field = context.scope.resolve(argument);
  if (field?.kind !== 'metadata') return undefined;
  const type = context.catalog.typeOf(field.path);
  const nested = nestedAncestor(field.path, context.catalog);
  if (call.name === 'count' && call.distinct) {
    if (!valueType(type) || nested) return undefined;
    // exact below the threshold (40,000 distinct values per group), as documented
    return {
      metric: { column, path: [column], value: 'value' },
      aggregation: { [column]: { cardinality: { field: field.path, precision_threshold: 40_000 } } },
      type: { kind: 'int64' },
      paths: [field.path],
    };
  }
  if (pushdown !== 'value_metric' || call.distinct || !type || !EXACT_NUMBER_TYPES.has(type)) return undefined;
  const valueAggregation = { [call.name]: { field: field.path } } as estypes.AggregationsAggregationContainer;
  const inner: Record<string, estypes.AggregationsAggregationContainer> = {
    present: { filter: { exists: { field: field.path } }, aggs: { value: valueAggregation } },
  };
  const aggregation: estypes.AggregationsAggregationContainer = nested ? { nested: { path: nested }, aggs: inner } : inner.present!;
  const prefix = nested ? [column, 'present'] : [column];
  const resultType: SqlType = call.name === 'avg' ? { kind: 'float64' } : { kind: 'int64' };
  return {
    metric: { column, path: [...prefix, 'value'], value: 'value', present: prefix },
    aggregation: { [column]: aggregation },
    type: resultType,
    paths: [field.path],
  };
}

/** `CASE WHEN c THEN <non-null literal> END` or `IF(c, <non-null literal>, NULL)`: counting it counts rows where c is TRUE. */
function countedCondition(expr: Expr): Expr | undefined {
  const nonNullLiteral = (value: Expr) => value.kind === 'number' || value.kind === 'string' || value.kind === 'boolean';
  if (expr.kind === 'case' && !expr.operand && expr.whens.length === 1 && nonNullLiteral(expr.whens[0]!.then) && (!expr.else || expr.else.kind === 'null'))
    return expr.whens[0]!.when;
  if (expr.kind === 'call' && expr.name === 'if' && expr.args.length === 3 && nonNullLiteral(expr.args[1]!) && expr.args[2]!.kind === 'null')
    return expr.args[0];
  return undefined;
}

function itemExpressions(items: readonly SelectItem[]): Expr[] {
  return items.flatMap((item) => (item.kind === 'expression' ? [item.expr] : []));
}

/** The aggregate calls outside subqueries, outermost only (an aggregate's arguments hold none). */
function aggregateCalls(exprs: readonly (Expr | undefined)[]): Extract<Expr, { kind: 'call' }>[] {
  const found: Extract<Expr, { kind: 'call' }>[] = [];
  const visitor = {
    expr: (expr: Expr): boolean => {
      if (subqueryOf(expr)) return false;
      if (expr.kind === 'call' && isAggregateCall(expr)) {
        found.push(expr);
        return false;
      }
      return true;
    },
  };
  for (const expr of exprs) if (expr) walk(expr, visitor);
  return found;
}

function containsAggregate(exprs: readonly (Expr | undefined)[]): boolean {
  return aggregateCalls(exprs).length > 0;
}

/** An expression as text without where it was written: two with the same text are the same expression. */
function expressionText(node: unknown): string {
  return JSON.stringify(node, (key, value) => (key === 'position' ? undefined : value));
}

function sameExpression(a: unknown, b: unknown): boolean {
  return expressionText(a) === expressionText(b);
}

/** Every occurrence of a key or aggregate expression replaced by the identifier of its column. */
function replaceExpressions(node: Expr, replacements: readonly (readonly [Expr, string])[]): Expr {
  const texts = replacements.map(([expr, column]) => [expressionText(expr), column] as const);
  // the same text is the same kind of node: others are not written out (each node's text holds its whole subtree)
  const kinds = new Set(replacements.map(([expr]) => expr.kind));
  return mapExpression(node, (expr) => {
    if (!kinds.has(expr.kind)) return undefined;
    const text = expressionText(expr);
    const match = texts.find(([candidate]) => candidate === text);
    return match ? { kind: 'identifier', path: [match[1]] } : undefined;
  });
}

/** After the rewrite only the group table's columns and select aliases may be named; anything else was a raw column. */
function referencesRawColumns(residual: Query, columns: ReadonlySet<string>): boolean {
  const select = residual.body as Select;
  const aliases = new Set(select.items.flatMap((item) => (item.kind === 'expression' && item.alias ? [item.alias.toLowerCase()] : [])));
  let raw = false;
  const visit = (expr: Expr | undefined, aliasesVisible: boolean): void => {
    if (!expr) return;
    walk(expr, {
      query: () => false,
      expr: (node) => {
        if (node.kind !== 'identifier') return;
        const name = node.path[0]!;
        if (!(node.path.length === 1 && (columns.has(name) || (aliasesVisible && aliases.has(name.toLowerCase()))))) raw = true;
      },
    });
  };
  for (const expr of itemExpressions(select.items)) visit(expr, false);
  visit(select.where, false);
  for (const item of residual.orderBy) visit(item.expr, true);
  return raw;
}
