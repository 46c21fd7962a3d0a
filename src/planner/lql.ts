import type { estypes } from '@elastic/elasticsearch';
import { cteByName, tableNames, type EndpointDefinition, type SourceCte, type WindowedSourceCte } from '../../queries/endpoint.ts';
import { KEYWORD_COLUMNS, exactTextField, isEventColumn, isInternalPath } from '../../shared/stored-event.ts';
import { clampToDateNanos, isoToNanosText, microsecondsFromStoredTimestamp, nanosTextFromMicros } from '../../shared/stored-timestamp.ts';
import { BadParameter, InvalidQuery, LqlSyntax, UnknownField, UnknownTable } from '../errors.ts';
import type { LqlChart, LqlComparison, LqlFilter, LqlQuery, LqlRange, LqlTime, LqlTimestampFilter, LqlValue } from '../lql/syntax.ts';
import { EMPTY_CATALOG, NUMERIC_FIELD_TYPES, inNestedRecords, nestedAncestor, type FieldCatalog } from './field-catalog.ts';
import type { ChartScan, Plan, SelectedColumn } from './plan.ts';
import { luceneRegexpForContains } from './regex.ts';
import { regexpQuery } from './regex-budget.ts';
import type { ScopeContext, ValidatedParameters } from './scope.ts';
import { eventScan } from './tables.ts';
import type { TimeBounds } from '../../shared/partitions.ts';

type Query = estypes.QueryDslQueryContainer;

/** The syslog order `metadata.level:error..critical` ranges over. */
export const LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const;

export interface LqlPlanContext extends ScopeContext {
  catalogs: ReadonlyMap<string, FieldCatalog>;
}

/**
 * An LQL query as a plan. Its filters mean "the event has a value that matches" (any record of an
 * array), which is Elasticsearch's own meaning for object arrays and, wrapped in `nested`, for
 * nested records: so every filter is pushed down exactly and no residual query is needed. Without a
 * chart: the newest events (at most the endpoint's maximum), with the selected columns. With a
 * chart: one aggregate per calendar bucket of timestamp, oldest first.
 */
export function planLqlQuery(endpoint: EndpointDefinition, params: ValidatedParameters, context: LqlPlanContext, query: LqlQuery): Plan {
  const cte = lqlTable(endpoint, query);
  const within = lqlTimeBounds(query.filters, context.now);
  const scopeless = eventScan(cte, params, context, { table: cte.name, predicates: [], order: 'timestamp_desc', take: { kind: 'limit', rows: 0 }, within });
  const known = context.catalogs.get(cte.source);
  const catalog = known ?? EMPTY_CATALOG;
  const columns = new Set(cte.columns.map((column) => column.name));
  if (known) assertKnownPaths(query, cte.source, known, columns);
  const predicates = query.filters.map((filter) => filterQuery(filter, catalog, columns, context.now));

  if (query.chart) {
    assertChartBuckets(query.chart, within, context.now);
    const scan = chartScan(cte.name, scopeless.index, [...scopeless.scope, ...predicates], query.chart, catalog, columns);
    return { scans: [scan], answer: { kind: 'chart', table: scan.table }, rowCap: endpoint.maxRows };
  }
  const scan = eventScan(cte, params, context, {
    table: cte.name,
    predicates,
    order: 'timestamp_desc',
    take: { kind: 'limit', rows: endpoint.maxRows },
    within,
  });
  return { scans: [scan], answer: { kind: 'selected', table: scan.table, columns: selectedColumns(query, cte, columns) }, rowCap: endpoint.maxRows };
}

/** `f:` names the table; without it the endpoint must have exactly one table LQL can read. */
function lqlTable(endpoint: EndpointDefinition, query: LqlQuery): SourceCte | WindowedSourceCte {
  const readable = endpoint.ctes.filter((cte): cte is SourceCte | WindowedSourceCte => cte.kind === 'source' || cte.kind === 'windowed_source');
  if (!query.from) {
    if (readable.length === 1) return readable[0]!;
    throw new LqlSyntax(`${endpoint.name} has several tables (${readable.map((cte) => cte.name).join(', ')}); say which one to query with f:<name>`);
  }
  const cte = cteByName(endpoint.ctes, query.from.name);
  if (!cte) throw new UnknownTable(query.from.name, tableNames(endpoint.ctes));
  if (cte.kind !== 'source' && cte.kind !== 'windowed_source') {
    throw new LqlSyntax(
      `f:${query.from.name}: LQL reads tables of events; on ${endpoint.name} those are ${readable.map((candidate) => candidate.name).join(', ')}`,
      query.from.offset,
    );
  }
  return cte;
}

/**
 * A path LQL may read: a column of the table, anything inside metadata, or another top-level name,
 * which is read inside metadata because that is where the ingest worker keeps a producer's other
 * top-level fields (`created_at:x` finds `metadata.created_at`).
 */
function checkedPath(path: string, columns: ReadonlySet<string>): string {
  if (path.startsWith('metadata.') && path.length > 'metadata.'.length) return path;
  // metadata itself holds records, not values
  if (path === 'metadata' || isInternalPath(path) || path.split('.').some((part) => part === '')) {
    throw new InvalidQuery(
      `${path} is not a field a query may read; use ${[...columns].filter((column) => column !== 'metadata').join(', ')} or m.<path> inside metadata`,
    );
  }
  if (isEventColumn(path) && columns.has(path)) return path;
  return `metadata.${path}`;
}

/**
 * Every metadata path the query names must be one some stored event of the source has, as the
 * reference refuses a path outside its source schema: a misspelt field gets a 400 naming it instead
 * of quietly matching nothing.
 */
function assertKnownPaths(query: LqlQuery, source: string, catalog: FieldCatalog, columns: ReadonlySet<string>): void {
  const named = [
    ...query.filters.flatMap((filter) => (filter.kind === 'timestamp' ? [] : [filter.path])),
    // a chart's rows are its buckets: selected columns are not read then
    ...(query.chart ? [] : query.select.flatMap((select) => (select.kind === 'field' && select.path !== 'metadata' ? [select.path] : []))),
    ...(query.chart?.path !== undefined && query.chart.path !== '*' ? [query.chart.path] : []),
  ];
  for (const path of named.map((name) => checkedPath(name, columns))) {
    if (path.startsWith('metadata.') && catalog.typeOf(path) === undefined) throw new UnknownField(path, source);
  }
}

function filterQuery(filter: LqlFilter, catalog: FieldCatalog, columns: ReadonlySet<string>, now: number): Query {
  const query =
    filter.kind === 'timestamp'
      ? timestampQuery(filter, now)
      : filter.kind === 'range'
        ? rangeQuery(filter, catalog, columns)
        : comparisonQuery(filter, catalog, columns);
  return filter.negated ? { bool: { must_not: [query] } } : query;
}

function comparisonQuery(filter: LqlComparison, catalog: FieldCatalog, columns: ReadonlySet<string>): Query {
  const path = checkedPath(filter.path, columns);
  const field = exactTextField(path);
  const type = fieldType(path, catalog);
  if (filter.operator !== 'is_null' && filter.value?.kind !== 'null') assertHoldsValues(path, type);
  let leaf: Query;
  switch (filter.operator) {
    case 'is_null':
      return { bool: { must_not: [inNestedRecords(path, { exists: { field } }, catalog)] } };
    case 'contains':
      leaf = { wildcard: { [field]: { value: `*${escapeWildcard(text(filter.value))}*` } } };
      break;
    case '~':
    case 'list_includes_regex':
      leaf = partialMatchQuery(field, text(filter.value));
      break;
    case '=':
    case 'list_includes':
      leaf = equalsQuery(field, type, filter.value!);
      break;
    default:
      leaf = { range: { [field]: { [RANGE_KEYS[filter.operator]]: comparable(filter.value!, type) } } };
  }
  return inNestedRecords(path, leaf, catalog);
}

const RANGE_KEYS = { '<': 'lt', '<=': 'lte', '>': 'gt', '>=': 'gte' } as const;

function rangeQuery(filter: LqlRange, catalog: FieldCatalog, columns: ReadonlySet<string>): Query {
  const path = checkedPath(filter.path, columns);
  const field = exactTextField(path);
  const levels = levelRange(filter);
  if (levels) return inNestedRecords(path, { terms: { [field]: levels } }, catalog);
  const type = fieldType(path, catalog);
  assertHoldsValues(path, type);
  return inNestedRecords(path, { range: { [field]: { gte: comparable(filter.low, type), lte: comparable(filter.high, type) } } }, catalog);
}

/** `metadata.level:error..critical`: every level from the first to the second in the syslog order. */
function levelRange(filter: LqlRange): string[] | undefined {
  if (!filter.path.endsWith('.level') || filter.low.kind !== 'string' || filter.high.kind !== 'string') return undefined;
  const from = LEVELS.indexOf(filter.low.value.toLowerCase() as (typeof LEVELS)[number]);
  const to = LEVELS.indexOf(filter.high.value.toLowerCase() as (typeof LEVELS)[number]);
  if (from < 0 || to < 0) return undefined;
  if (from > to)
    throw new InvalidQuery(`${filter.path}:${filter.low.value}..${filter.high.value}: the first level must come first in the order ${LEVELS.join(', ')}`);
  return LEVELS.slice(from, to + 1).flatMap((level) => [level, level.toUpperCase()]);
}

/** The store matches no value filter on a path holding records (it has no values of its own): the query is refused instead of answered empty. */
function assertHoldsValues(path: string, type: string | undefined): void {
  if (type === 'object' || type === 'nested') throw new InvalidQuery(`${path} holds records, not values; filter on a field inside it (${path}.<field>)`);
}

function fieldType(path: string, catalog: FieldCatalog): string | undefined {
  if (KEYWORD_COLUMNS.has(path)) return 'keyword';
  return catalog.typeOf(path);
}

/** Equality the store evaluates without error: a number against a numeric field, text against a keyword, never text against a number. */
function equalsQuery(field: string, type: string | undefined, value: LqlValue): Query {
  if (value.kind === 'null') return { bool: { must_not: [{ exists: { field } }] } };
  if (type !== undefined && NUMERIC_FIELD_TYPES.has(type)) {
    const number = value.kind === 'number' ? Number(value.text) : value.kind === 'string' ? Number(value.value) : Number.NaN;
    return Number.isFinite(number) ? { term: { [field]: number } } : { match_none: {} };
  }
  if (type === 'boolean') return value.kind === 'boolean' ? { term: { [field]: value.value } } : { match_none: {} };
  return { term: { [field]: text(value) } };
}

function comparable(value: LqlValue, type: string | undefined): string | number {
  if (type !== undefined && NUMERIC_FIELD_TYPES.has(type)) {
    const number = value.kind === 'number' ? Number(value.text) : value.kind === 'string' ? Number(value.value) : Number.NaN;
    if (!Number.isFinite(number)) throw new InvalidQuery(`${text(value)} is not a number, and the field holds numbers`);
    return number;
  }
  return text(value);
}

function text(value: LqlValue | undefined): string {
  if (!value || value.kind === 'null') return '';
  if (value.kind === 'string') return value.value;
  if (value.kind === 'number') return value.text;
  return String(value.value);
}

/** A partial match in RE2 syntax; a leading `(?i)` makes it case-insensitive (the store's flag, not the pattern's). */
function partialMatchQuery(field: string, pattern: string): Query {
  const insensitive = pattern.startsWith('(?i)');
  const body = insensitive ? pattern.slice(4) : pattern;
  return regexpQuery(field, luceneRegexpForContains(body, 'lql'), { parameter: 'lql', pattern }, insensitive);
}

function escapeWildcard(value: string): string {
  return value.replace(/[\\*?]/g, (c) => `\\${c}`);
}

const UNIT_MS = { seconds: 1000, minutes: 60_000, hours: 3_600_000, days: 86_400_000, weeks: 7 * 86_400_000 } as const;

/** A time as an inclusive [from, to] span in epoch microseconds: a date is its whole day, a relative name its span. */
function span(time: LqlTime, now: number): [number, number] {
  const nowMicros = now * 1000;
  const startOf = (unit: 'minute' | 'hour' | 'day' | 'week' | 'month' | 'year'): number => {
    const date = new Date(now);
    if (unit === 'minute') date.setUTCSeconds(0, 0);
    if (unit === 'hour') date.setUTCMinutes(0, 0, 0);
    if (unit === 'day') date.setUTCHours(0, 0, 0, 0);
    if (unit === 'week') date.setUTCHours(0, 0, 0, 0), date.setUTCDate(date.getUTCDate() - ((date.getUTCDay() + 6) % 7));
    if (unit === 'month') date.setUTCHours(0, 0, 0, 0), date.setUTCDate(1);
    if (unit === 'year') date.setUTCHours(0, 0, 0, 0), date.setUTCMonth(0, 1);
    return date.getTime() * 1000;
  };
  switch (time.kind) {
    case 'iso': {
      const nanos = isoToNanosText(time.text);
      if (nanos === undefined) throw new LqlSyntax(`${time.text} is not an ISO 8601 date or time`);
      const micros = microsecondsFromStoredTimestamp(nanos);
      // a date alone is the whole day
      return /^\d{4}-\d{2}-\d{2}$/.test(time.text) ? [micros, micros + 86_400_000_000 - 1] : [micros, micros];
    }
    case 'unix': {
      const digits = time.digits;
      const micros = digits.length === 10 ? Number(digits) * 1_000_000 : digits.length === 13 ? Number(digits) * 1000 : Number(digits);
      return [micros, micros];
    }
    case 'relative':
      if (time.name === 'now') return [nowMicros, nowMicros];
      // the whole day, as the reference reads it (events stamped later today by a fast clock included)
      if (time.name === 'today') return [startOf('day'), startOf('day') + 86_400_000_000 - 1];
      return [startOf('day') - 86_400_000_000, startOf('day') - 1];
    case 'this':
      return [startOf(time.unit), nowMicros];
    case 'last': {
      // as the reference counts it: seconds from now, else from the current minute, hour or day (weeks and months: day), back N units
      if (time.unit === 'seconds') return [nowMicros - time.amount * 1_000_000, nowMicros];
      const floor = startOf(time.unit === 'minutes' ? 'minute' : time.unit === 'hours' ? 'hour' : 'day');
      if (time.unit === 'months') {
        const date = new Date(floor / 1000);
        date.setUTCMonth(date.getUTCMonth() - time.amount);
        return [date.getTime() * 1000, nowMicros];
      }
      return [floor - time.amount * UNIT_MS[time.unit] * 1000, nowMicros];
    }
  }
}

function nanosText(micros: number): string {
  return clampToDateNanos(nanosTextFromMicros(micros));
}

/** The instants a timestamp filter admits, in epoch microseconds; an absent side is unbounded, `exclusive` marks strict ones. */
interface MicrosBounds {
  from?: { micros: number; exclusive: boolean };
  to?: { micros: number; exclusive: boolean };
}

function timestampBounds(filter: LqlTimestampFilter, now: number): MicrosBounds {
  const first = span(filter.times[0], now);
  const inclusive = (micros: number) => ({ micros, exclusive: false });
  if (filter.operator === 'range') return { from: inclusive(first[0]), to: inclusive(span(filter.times[1] ?? filter.times[0], now)[1]) };
  switch (filter.operator) {
    case '=':
      return { from: inclusive(first[0]), to: inclusive(first[1]) };
    case '>':
      return { from: { micros: first[1], exclusive: true } };
    case '>=':
      return { from: inclusive(first[0]) };
    case '<':
      return { to: { micros: first[0], exclusive: true } };
    case '<=':
      return { to: inclusive(first[1]) };
  }
}

function timestampQuery(filter: LqlTimestampFilter, now: number): Query {
  const { from, to } = timestampBounds(filter, now);
  const range: estypes.QueryDslDateRangeQuery = {};
  if (from) range[from.exclusive ? 'gt' : 'gte'] = nanosText(from.micros);
  if (to) range[to.exclusive ? 'lt' : 'lte'] = nanosText(to.micros);
  return { range: { timestamp: range } };
}

/** Where every event an LQL query returns must lie in time (its timestamp filters together), so the scope reads only those partitions. */
function lqlTimeBounds(filters: readonly LqlFilter[], now: number): TimeBounds {
  const bounds: TimeBounds = {};
  for (const filter of filters) {
    if (filter.kind !== 'timestamp' || filter.negated) continue;
    const { from, to } = timestampBounds(filter, now);
    if (from) bounds.fromMs = Math.max(bounds.fromMs ?? -Infinity, Math.floor(from.micros / 1000));
    if (to) bounds.toMs = Math.min(bounds.toMs ?? Infinity, Math.ceil(to.micros / 1000));
  }
  return bounds;
}

/** The most buckets a chart over a bounded time range may have, as the reference allows. */
export const MAX_CHART_BUCKETS = 250;
const PERIOD_MS = { second: 1000, minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;

/** A chart whose own time filters bound it below must fit MAX_CHART_BUCKETS periods up to its upper bound (now when open). */
function assertChartBuckets(chart: LqlChart, within: TimeBounds, now: number): void {
  if (within.fromMs === undefined) return;
  const period = PERIOD_MS[chart.period];
  const to = Math.min(within.toMs ?? now, 8_640_000_000_000_000);
  const buckets = Math.floor(to / period) - Math.floor(within.fromMs / period) + 1;
  if (buckets > MAX_CHART_BUCKETS) {
    const range = `${new Date(Math.max(within.fromMs, -8_640_000_000_000_000)).toISOString()}..${new Date(to).toISOString()}`;
    throw new InvalidQuery(
      `c:group_by(t::${chart.period}) over ${range} makes ${buckets.toLocaleString('en')} buckets, more than ${MAX_CHART_BUCKETS}; narrow the t: range or chart by a longer period`,
    );
  }
}

const PERCENTILES = { p50: '50.0', p95: '95.0', p99: '99.0' } as const;

function chartScan(table: string, index: string, filter: Query[], chart: LqlChart, catalog: FieldCatalog, columns: ReadonlySet<string>): ChartScan {
  const column = chart.aggregate;
  const path = chart.path === undefined || chart.path === '*' ? undefined : checkedPath(chart.path, columns);
  let metric: estypes.AggregationsAggregationContainer | undefined;
  let value: ChartScan['value'] = { column, path: [], from: 'doc_count' };
  if (chart.aggregate === 'count') {
    if (path && path !== 'timestamp') {
      metric = { filter: inNestedRecords(path, { exists: { field: exactTextField(path) } }, catalog) };
      value = { column, path: ['value'], from: 'doc_count' };
    }
  } else {
    if (!path) throw new LqlSyntax(`c:${chart.aggregate}() needs a field`, chart.offset);
    const type = fieldType(path, catalog);
    if (chart.aggregate !== 'countd' && (type === undefined || !NUMERIC_FIELD_TYPES.has(type))) {
      throw new BadParameter(
        `c:${chart.aggregate}(${path}): the field is ${type === undefined ? 'not in any event yet' : `of type ${type}`}; only numeric fields can be averaged, summed or ranked`,
        'invalid_query',
      );
    }
    const field = exactTextField(path);
    const inner: estypes.AggregationsAggregationContainer =
      chart.aggregate === 'countd'
        ? { cardinality: { field, precision_threshold: 40_000 } }
        : chart.aggregate in PERCENTILES
          ? { percentiles: { field, percents: [Number(PERCENTILES[chart.aggregate as keyof typeof PERCENTILES])] } }
          : ({ [chart.aggregate]: { field } } as estypes.AggregationsAggregationContainer);
    const nestedPath = nestedAncestor(path, catalog);
    metric = nestedPath ? { nested: { path: nestedPath }, aggs: { value: inner } } : inner;
    const at = nestedPath ? ['value', 'value'] : ['value'];
    value =
      chart.aggregate in PERCENTILES
        ? { column, path: at, from: 'percentile', percentile: PERCENTILES[chart.aggregate as keyof typeof PERCENTILES] }
        : { column, path: at, from: 'value' };
  }
  return {
    kind: 'chart',
    table,
    cte: table,
    columns: [],
    index,
    scope: filter,
    value,
    search: {
      index,
      ignore_unavailable: true,
      allow_no_indices: true,
      size: 0,
      track_total_hits: false,
      query: { bool: { filter } },
      aggs: {
        buckets: {
          composite: {
            size: 1000,
            sources: [{ timestamp: { date_histogram: { field: 'timestamp', calendar_interval: chart.period, time_zone: 'UTC', order: 'asc' } } }],
          },
          ...(metric ? { aggs: { value: metric } } : {}),
        },
      },
    },
  };
}

/** `s:` columns; without them timestamp, id, event_message and every filtered path (names from the last segment, or the alias). */
function selectedColumns(query: LqlQuery, cte: SourceCte | WindowedSourceCte, columns: ReadonlySet<string>): SelectedColumn[] {
  const chosen: { path: string; alias?: string }[] = [];
  if (query.select.length === 0) {
    chosen.push({ path: 'timestamp' }, { path: 'id' }, { path: 'event_message' });
    for (const filter of query.filters) if (!chosen.some((column) => column.path === filter.path)) chosen.push({ path: filter.path });
  } else {
    for (const select of query.select) {
      if (select.kind === 'all') chosen.push(...cte.columns.map((column) => ({ path: column.name })));
      else chosen.push({ path: select.path, ...(select.alias ? { alias: select.alias } : {}) });
    }
  }
  const named: SelectedColumn[] = [];
  for (const column of chosen) {
    const path = column.path === 'metadata' ? 'metadata' : checkedPath(column.path, columns);
    const last = path.split('.').pop()!;
    const name = column.alias ?? (named.some((existing) => existing.name === last) ? path : last);
    if (!named.some((existing) => existing.name === name)) named.push({ name, path });
  }
  return named;
}
