import type { estypes } from '@elastic/elasticsearch';
import type { EndpointDefinition, EventSelection, RequestCountsCte, SourceCte } from '../../queries/endpoint.ts';
import { indexName, type SourceName } from '../../shared/sources.ts';
import { BadParameter, Forbidden } from '../errors.ts';
import { luceneRegexpForContains } from './regex.ts';
import { clampToDateNanos, parseTimestampParameter, timestampFromMillis } from './timestamp.ts';

/** What the compiler needs besides the endpoint and its validated parameters. */
export interface CompileContext {
  /** Current time, milliseconds since the epoch: look-back windows are measured from it. */
  now: number;
  /** The caller's projects; null = every project. */
  projects: string[] | null;
  indexPrefix: string;
}

/** One CTE as an Elasticsearch filter over its source's index; the sandbox planner will build on these. */
export interface CompiledCte {
  name: string;
  index: string;
  filter: estypes.QueryDslQueryContainer[];
}

export type CompiledQuery =
  | { kind: 'events'; ctes: CompiledCte[]; search: estypes.SearchRequest; limit: number }
  | { kind: 'buckets'; ctes: CompiledCte[]; search: estypes.SearchRequest; columns: string[]; limit: number };

/** Name of the composite aggregation holding the buckets, read back by the row formatter. */
export const BUCKETS_AGGREGATION = 'buckets';
export const MATCHING_REQUESTS_AGGREGATION = 'matching_requests';
export const PATH_COUNTS_AGGREGATION = 'path_counts';

/** Parameters as the compiler reads them: validated strings, absent when not sent. */
export type ValidatedParameters = Record<string, unknown>;

function stringParameter(params: ValidatedParameters, name: string): string | undefined {
  const value = params[name];
  return typeof value === 'string' ? value : undefined;
}

function requireString(params: ValidatedParameters, name: string): string {
  const value = stringParameter(params, name);
  if (value === undefined || value === '') throw new BadParameter(`${name} is required`);
  return value;
}

function projectAllowed(project: string, projects: string[] | null): boolean {
  return projects === null || projects.includes(project);
}

/** Project filter first, then the time bounds (SPEC.md 4.2 rule 2). */
export function compileSourceCte(cte: SourceCte, params: ValidatedParameters, context: CompileContext): CompiledCte {
  const project = requireString(params, cte.projectFilter.parameter);
  const filter: estypes.QueryDslQueryContainer[] = [{ term: { [cte.projectFilter.field]: project } }];
  const start = stringParameter(params, cte.timeBounds.startExclusive);
  const end = stringParameter(params, cte.timeBounds.endInclusive);
  const range: estypes.QueryDslDateRangeQuery = {};
  if (start) range.gt = clampToDateNanos(parseTimestampParameter(cte.timeBounds.startExclusive, start));
  if (end) range.lte = clampToDateNanos(parseTimestampParameter(cte.timeBounds.endInclusive, end));
  if (range.gt !== undefined || range.lte !== undefined) filter.push({ range: { timestamp: range } });
  return { name: cte.name, index: indexName({ indexPrefix: context.indexPrefix }, cte.source), filter };
}

function compileEvents(endpoint: EndpointDefinition, selection: EventSelection, params: ValidatedParameters, context: CompileContext): CompiledQuery {
  const sourceCtes = endpoint.ctes.filter((cte): cte is SourceCte => cte.kind === 'source');
  for (const cte of sourceCtes) {
    const project = requireString(params, cte.projectFilter.parameter);
    if (!projectAllowed(project, context.projects)) {
      throw new Forbidden(`this API key may not read project ${JSON.stringify(project)}; it is limited to: ${context.projects!.join(', ')}`);
    }
  }
  const ctes = sourceCtes.map((cte) => compileSourceCte(cte, params, context));
  const from = ctes.find((cte) => cte.name === selection.from);
  if (!from) throw new Error(`endpoint ${endpoint.name} selects from ${selection.from}, which is not one of its CTEs`);
  const limit = Math.min(selection.limit, endpoint.maxRows);
  return {
    kind: 'events',
    ctes,
    limit,
    search: {
      index: from.index,
      ignore_unavailable: true,
      allow_no_indices: true,
      size: limit,
      track_total_hits: false,
      query: { bool: { filter: from.filter } },
      sort: [{ timestamp: { order: 'desc' } }, { id: { order: 'desc' } }],
      // metadata values the ingest worker set aside (type conflicts) are put back by the row formatter
      _source: selection.columns.includes('metadata') ? [...selection.columns, 'metadata_unindexed'] : [...selection.columns],
    },
  };
}

/**
 * The saved usage SQL, as Elasticsearch aggregations: events at or after the window start whose
 * request records include one with a matching url, bucketed by calendar unit in UTC (composite, so
 * empty buckets are absent and the first maxRows come oldest first); inside each bucket the matching
 * records are counted per path text, a record matching several texts counting in each.
 */
function compileRequestCounts(endpoint: EndpointDefinition, cte: RequestCountsCte, params: ValidatedParameters, context: CompileContext): CompiledQuery {
  const intervalName = requireString(params, cte.windowParameter);
  const window = cte.windows[intervalName];
  if (!window) throw new BadParameter(`${cte.windowParameter} must be one of ${Object.keys(cte.windows).join(', ')}`);
  const pattern = requireString(params, cte.urlPatternParameter);
  const urlMatches: estypes.QueryDslQueryContainer = {
    regexp: { [`${cte.requestPath}.url`]: { value: luceneRegexpForContains(pattern), flags: 'NONE', max_determinized_states: 100_000 } },
  };
  const filter: estypes.QueryDslQueryContainer[] = [{ range: { timestamp: { gte: timestampFromMillis(context.now - window.lookBackMs) } } }];
  if (context.projects !== null) filter.push({ terms: { project: context.projects } });
  filter.push({ nested: { path: cte.requestPath, query: urlMatches } });
  const compiledCte: CompiledCte = { name: cte.name, index: indexName({ indexPrefix: context.indexPrefix }, cte.source as SourceName), filter };
  const pathFilters = Object.fromEntries(
    Object.entries(cte.pathColumns).map(([column, text]) => [column, { wildcard: { [`${cte.requestPath}.path`]: { value: `*${escapeWildcard(text)}*` } } }]),
  );
  const limit = endpoint.maxRows;
  return {
    kind: 'buckets',
    ctes: [compiledCte],
    columns: Object.keys(cte.pathColumns),
    limit,
    search: {
      index: compiledCte.index,
      ignore_unavailable: true,
      allow_no_indices: true,
      size: 0,
      track_total_hits: false,
      query: { bool: { filter } },
      aggs: {
        [BUCKETS_AGGREGATION]: {
          composite: {
            size: limit,
            sources: [{ timestamp: { date_histogram: { field: 'timestamp', calendar_interval: window.bucket, time_zone: 'UTC', order: 'asc' } } }],
          },
          aggs: {
            requests: {
              nested: { path: cte.requestPath },
              aggs: {
                [MATCHING_REQUESTS_AGGREGATION]: {
                  filter: urlMatches,
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

function escapeWildcard(text: string): string {
  return text.replace(/[\\*?]/g, (c) => `\\${c}`);
}

/** (endpoint, validated parameters, now, project restriction) -> the Elasticsearch request of its saved selection. */
export function compileEndpoint(endpoint: EndpointDefinition, params: ValidatedParameters, context: CompileContext): CompiledQuery {
  const selection = endpoint.selection;
  if (selection.kind === 'events') return compileEvents(endpoint, selection, params, context);
  const cte = endpoint.ctes.find((candidate): candidate is RequestCountsCte => candidate.kind === 'request_counts' && candidate.name === selection.from);
  if (!cte) throw new Error(`endpoint ${endpoint.name} selects buckets from ${selection.from}, which is not one of its request-count CTEs`);
  return compileRequestCounts(endpoint, cte, params, context);
}
