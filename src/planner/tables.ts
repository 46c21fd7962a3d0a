import type { estypes } from '@elastic/elasticsearch';
import type { Cte, EndpointDefinition, RequestCountsCte, WindowStartCte, WindowedSourceCte } from '../../queries/endpoint.ts';
import type { TimeBounds } from '../../shared/partitions.ts';
import { sourceFieldsOf } from '../../shared/stored-event.ts';
import { BadParameter } from '../errors.ts';
import type { ConstantScan, EventScan, RequestCountScan } from './plan.ts';
import { requestUrlMatch, scopeOf, windowOf, type ScopeContext, type ValidatedParameters } from './scope.ts';

/** Name of the composite aggregation holding the buckets, read back by the row formatter. */
export const BUCKETS_AGGREGATION = 'buckets';
export const MATCHING_REQUESTS_AGGREGATION = 'matching_requests';
export const PATH_COUNTS_AGGREGATION = 'path_counts';

/** The parts of an event scan's response the executor reads (Elasticsearch's filter_path): rows, the paging key, and a refusal whole. */
const EVENT_RESPONSE_FIELDS = ['hits.hits._id', 'hits.hits._source', 'hits.hits.sort', 'error'];

/** Events per search request of a scan (Elasticsearch's default max_result_window). */
const EVENT_PAGE_SIZE = 10_000;

export interface EventScanShape {
  table: string;
  predicates: estypes.QueryDslQueryContainer[];
  order: 'timestamp_desc' | 'none';
  take: EventScan['take'];
  /** The CTE's columns to read, in its order; default: every one. */
  columns?: readonly string[];
  /** Where the predicates confine every event in time: narrows the partitions read, never the filter. */
  within?: TimeBounds;
  /**
   * Of the events the predicates match, those matched exactly and the others: a limit is taken among the first, all others are read.
   * `loose`: each condition's own filter, exact or a superset (the cheapest search matching both parts).
   */
  split?: { regular: estypes.QueryDslQueryContainer; irregular: estypes.QueryDslQueryContainer; loose: estypes.QueryDslQueryContainer[] };
}

/** A scan of a CTE's events: its scope, then the pushed-down predicates, in one filter. */
export function eventScan(cte: Cte, params: ValidatedParameters, context: ScopeContext, shape: EventScanShape): EventScan {
  if (cte.kind !== 'source' && cte.kind !== 'windowed_source') throw new Error(`CTE ${cte.name} holds no events`);
  const scope = scopeOf(cte, params, context, shape.within);
  const size = shape.take.kind === 'limit' ? Math.min(shape.take.rows, EVENT_PAGE_SIZE) : EVENT_PAGE_SIZE;
  const columns = cte.columns.filter((column) => shape.columns?.includes(column.name) ?? true);
  const limitSplit = shape.take.kind === 'limit' ? shape.split : undefined;
  const search: estypes.SearchRequest = {
    index: scope.index,
    ignore_unavailable: true,
    allow_no_indices: true,
    size,
    track_total_hits: false,
    // a limit split by shape is taken among the events matched exactly; the others are one more search
    query: { bool: { filter: [...scope.filter, ...shape.predicates, ...(limitSplit ? [limitSplit.regular] : [])] } },
    // id breaks ties so pages are stable; it also makes search_after paging exact
    sort: shape.order === 'timestamp_desc' ? [{ timestamp: { order: 'desc' } }, { id: { order: 'desc' } }] : [{ _doc: { order: 'asc' } }],
    // only what rows are made of: less for Elasticsearch to write and for us to hold and parse
    _source: columns.flatMap((column) => sourceFieldsOf(column.name)),
    filter_path: EVENT_RESPONSE_FIELDS,
  };
  const take: EventScan['take'] =
    shape.take.kind === 'limit' && limitSplit
      ? {
          ...shape.take,
          irregular: { ...search, size: EVENT_PAGE_SIZE, query: { bool: { filter: [...scope.filter, ...shape.predicates, limitSplit.irregular] } } },
          // both parts under each condition's own filter alone: one regexp each, however often the parts repeat it
          superset: { ...search, query: { bool: { filter: [...scope.filter, ...limitSplit.loose] } } },
        }
      : shape.take;
  return { kind: 'events', table: shape.table, cte: cte.name, columns, index: scope.index, scope: scope.filter, predicates: shape.predicates, search, take };
}

/**
 * Request records per bucket, as the saved usage SQL computes them: events of the windowed source,
 * bucketed by calendar unit in UTC (composite, so empty buckets are absent and the first `rowCap`
 * come oldest first); inside each bucket the records with a matching url are counted per path text,
 * a record matching several texts counting in each.
 */
export function requestCountScan(
  endpoint: EndpointDefinition,
  cte: RequestCountsCte,
  params: ValidatedParameters,
  context: ScopeContext,
  table = cte.name,
): RequestCountScan {
  const from = endpoint.ctes.find((candidate): candidate is WindowedSourceCte => candidate.kind === 'windowed_source' && candidate.name === cte.from);
  if (!from) throw new Error(`endpoint ${endpoint.name}: ${cte.name} counts ${cte.from}, which is not one of its windowed sources`);
  const scope = scopeOf(from, params, context);
  const window = windowOf(from.scope.window, params);
  const requestPath = from.scope.requestPath;
  const pathFilters = Object.fromEntries(
    Object.entries(cte.pathColumns).map(([column, text]) => [column, { wildcard: { [`${requestPath}.path`]: { value: `*${escapeWildcard(text)}*` } } }]),
  );
  return {
    kind: 'request_counts',
    table,
    cte: cte.name,
    columns: [...cte.columns],
    index: scope.index,
    scope: scope.filter,
    bucket: window.bucket,
    countColumns: Object.keys(cte.pathColumns),
    search: {
      index: scope.index,
      ignore_unavailable: true,
      allow_no_indices: true,
      size: 0,
      track_total_hits: false,
      query: { bool: { filter: scope.filter } },
      aggs: {
        [BUCKETS_AGGREGATION]: {
          composite: {
            size: endpoint.maxRows,
            sources: [{ timestamp: { date_histogram: { field: 'timestamp', calendar_interval: window.bucket, time_zone: 'UTC', order: 'asc' } } }],
          },
          aggs: {
            requests: {
              nested: { path: requestPath },
              aggs: {
                [MATCHING_REQUESTS_AGGREGATION]: {
                  filter: requestUrlMatch(from, params),
                  aggs: { [PATH_COUNTS_AGGREGATION]: { filters: { filters: pathFilters } } },
                },
              },
            },
          },
        },
      },
    },
  };
}

/** The usage window's start as a one-row table, in microseconds like every stored timestamp. */
export function windowStartScan(cte: WindowStartCte, params: ValidatedParameters, context: ScopeContext, table = cte.name): ConstantScan {
  const window = windowOf(cte.window, params);
  return { kind: 'constant', table, cte: cte.name, columns: [...cte.columns], rows: [{ start: (context.now - window.lookBackMs) * 1000 }] };
}

function escapeWildcard(text: string): string {
  return text.replace(/[\\*?]/g, (c) => `\\${c}`);
}

export function requireCte(endpoint: EndpointDefinition, name: string): Cte {
  const cte = endpoint.ctes.find((candidate) => candidate.name === name);
  if (!cte) throw new BadParameter(`endpoint ${endpoint.name} has no CTE ${name}`);
  return cte;
}
