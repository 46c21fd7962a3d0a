import type { estypes } from '@elastic/elasticsearch';
import type { SourceCte, UsageWindow, WindowScope, WindowedSourceCte } from '../../queries/endpoint.ts';
import { clampToDateNanos, isoToNanosText, millisFromNanosText, nanosTextFromMillis } from '../../shared/stored-timestamp.ts';
import { partitionsOverlapping, type PartitionPeriod, type TimeBounds } from '../../shared/partitions.ts';
import { sourceByName, type SourceName } from '../../shared/sources.ts';
import { BadParameter, Forbidden } from '../errors.ts';
import { luceneRegexpForContains } from './regex.ts';
import { regexpQuery, type RegexLimits } from './regex-budget.ts';

/** What scoping needs besides the CTE and the validated parameters. */
export interface ScopeContext {
  /** Current time, epoch milliseconds: look-back windows are measured from it. */
  now: number;
  /** The caller's projects; null = every project. */
  projects: string[] | null;
  indexPrefix: string;
  /**
   * Sources partitioned hourly or weekly (PARTITION_PERIODS); the rest are daily. Only sharpens
   * which partitions a read names: the day wildcards read covers partitions of every period.
   */
  partitionPeriods?: Partial<Record<SourceName, PartitionPeriod>>;
  /** What the request's regular expressions may cost the store; default DEFAULT_REGEX_LIMITS. */
  regexLimits?: RegexLimits;
}

/** Parameters as the planner reads them: validated, absent when not sent. */
export type ValidatedParameters = Record<string, unknown>;

/** A CTE read from the store: the partitions its bounds overlap and the filter no query on it may drop. */
export interface CteScope {
  /** Comma-separated index expressions, as Elasticsearch takes them. */
  index: string;
  filter: estypes.QueryDslQueryContainer[];
}

function stringParameter(params: ValidatedParameters, name: string): string | undefined {
  const value = params[name];
  return typeof value === 'string' ? value : undefined;
}

function requireString(params: ValidatedParameters, name: string): string {
  const value = stringParameter(params, name);
  if (value === undefined || value === '') throw new BadParameter(`${name} is required`);
  return value;
}

/** An ISO 8601 bound parameter in the nine-digit form date_nanos ranges compare exactly. */
export function timestampBound(name: string, text: string): string {
  const bound = isoToNanosText(text);
  if (bound === undefined)
    throw new BadParameter(`${name}: ${JSON.stringify(text)} is not an ISO 8601 timestamp; send e.g. 2024-01-01T00:00:00.000Z, or leave it empty for no bound`);
  return clampToDateNanos(bound);
}

export function windowOf(scope: WindowScope, params: ValidatedParameters): UsageWindow {
  const name = requireString(params, scope.parameter);
  const window = scope.windows[name];
  if (!window) throw new BadParameter(`${scope.parameter} must be one of ${Object.keys(scope.windows).join(', ')}`);
  return window;
}

/** The nested-record url match of a windowed source, shared by its scope and the aggregation that counts records. */
export function requestUrlMatch(cte: WindowedSourceCte, params: ValidatedParameters): estypes.QueryDslQueryContainer {
  const parameter = cte.scope.urlPatternParameter;
  const pattern = requireString(params, parameter);
  return regexpQuery(`${cte.scope.requestPath}.url`, luceneRegexpForContains(pattern, parameter), { parameter, pattern });
}

/**
 * The one scope step: a CTE's mandatory filter from its declaration, the validated parameters, the
 * caller's projects and the current time, and the partitions its time bounds (narrowed by `within`,
 * where the query's own predicates confine it) overlap. For a source: project match first, then the time bounds,
 * then the key's project restriction (docs/design/SPEC.md 4.2 rule 2). For a windowed source: the window, the
 * key's restriction, then the url pattern (the costliest clause last). Saved selections, sandboxed
 * queries and cache warming all scope through here, and nothing else builds these filters.
 */
export function scopeOf(cte: SourceCte | WindowedSourceCte, params: ValidatedParameters, context: ScopeContext, within: TimeBounds = {}): CteScope {
  // the CTE's own bounds, narrowed by where the query's predicates confine its events
  const partitions = (bounds: TimeBounds) => {
    const fromMs = Math.max(bounds.fromMs ?? -Infinity, within.fromMs ?? -Infinity);
    const toMs = Math.min(bounds.toMs ?? Infinity, within.toMs ?? Infinity);
    const narrowed = { ...(Number.isFinite(fromMs) ? { fromMs } : {}), ...(Number.isFinite(toMs) ? { toMs } : {}) };
    return partitionsOverlapping(context.indexPrefix, cte.source, context.partitionPeriods?.[cte.source] ?? 'daily', narrowed, context.now).join(',');
  };
  if (cte.kind === 'source') {
    const { project, timeBounds } = cte.scope;
    const projectValue = requireString(params, project.parameter);
    const filter: estypes.QueryDslQueryContainer[] = [{ term: { [project.field]: projectValue } }];
    const start = stringParameter(params, timeBounds.startExclusive);
    const end = stringParameter(params, timeBounds.endInclusive);
    const range: estypes.QueryDslDateRangeQuery = {};
    if (start) range.gt = timestampBound(timeBounds.startExclusive, start);
    if (end) range.lte = timestampBound(timeBounds.endInclusive, end);
    if (range.gt !== undefined || range.lte !== undefined) filter.push({ range: { timestamp: range } });
    const index = partitions({ fromMs: millisOfBound(range.gt, 'down'), toMs: millisOfBound(range.lte, 'up') });
    if (context.projects !== null) {
      if (!context.projects.includes(projectValue)) {
        throw new Forbidden(`this API key may not read project ${JSON.stringify(projectValue)}; it is limited to: ${context.projects.join(', ')}`);
      }
      // kept as a filter too, so no later step can widen what the key reads
      filter.push({ terms: { [project.field]: context.projects } });
    }
    return { index, filter };
  }
  const window = windowOf(cte.scope.window, params);
  // the usage pattern matches urls, not a project field, so the key's restriction is a filter of its own
  const filter: estypes.QueryDslQueryContainer[] = [{ range: { timestamp: { gte: nanosTextFromMillis(context.now - window.lookBackMs) } } }];
  const index = partitions({ fromMs: context.now - window.lookBackMs });
  if (context.projects !== null) filter.push({ terms: { [sourceByName(cte.source)!.projectField]: context.projects } });
  filter.push({ nested: { path: cte.scope.requestPath, query: requestUrlMatch(cte, params) } });
  return { index, filter };
}

/** A range bound in epoch milliseconds, rounded outwards. */
function millisOfBound(bound: estypes.QueryDslDateRangeQuery['gt'], rounding: 'down' | 'up'): number | undefined {
  return typeof bound === 'string' ? millisFromNanosText(bound, rounding) : undefined;
}
