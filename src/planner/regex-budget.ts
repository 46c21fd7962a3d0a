import type { estypes } from '@elastic/elasticsearch';
import { QueryTooExpensive } from '../errors.ts';
import type { Plan, Scan } from './plan.ts';

/**
 * What one request's regular expressions may cost the store. Each `regexp` query is an automaton
 * Elasticsearch builds for every shard it searches, so their number and their length are bounded
 * per request, before any search runs.
 */
export interface RegexLimits {
  /** Sent with every regexp query as its max_determinized_states (Elasticsearch 8.19 was measured applying its own 10,000 regardless). */
  maxDeterminizedStates: number;
  /** Regexp queries one request may send. */
  maxPerRequest: number;
  /** Their patterns' length together, in the store's syntax. */
  maxTotalChars: number;
}

/** Elasticsearch's own default for the states; the others as SANDBOX_MAX_REGEX_PER_QUERY and SANDBOX_MAX_REGEX_CHARS default. */
export const DEFAULT_REGEX_LIMITS: RegexLimits = { maxDeterminizedStates: 10_000, maxPerRequest: 16, maxTotalChars: 4096 };

/** Where a regexp query came from: the parameter that held the pattern, and the pattern as the caller wrote it. */
export interface RegexpOrigin {
  parameter: string;
  pattern: string;
}

type RegexpBody = estypes.QueryDslRegexpQuery & { value: string };

/** Kept beside each regexp query the planner makes, so a refusal by the store can name the caller's own pattern. */
const origins = new WeakMap<object, RegexpOrigin>();

/** A `regexp` query on `field` for `lucene` (from luceneRegexpForContains), remembering its origin. */
export function regexpQuery(field: string, lucene: string, origin: RegexpOrigin, caseInsensitive = false): estypes.QueryDslQueryContainer {
  const body: RegexpBody = { value: lucene, flags: 'NONE', ...(caseInsensitive ? { case_insensitive: true } : {}) };
  origins.set(body, origin);
  return { regexp: { [field]: body } };
}

export interface FoundRegexp {
  field: string;
  body: RegexpBody;
  origin?: RegexpOrigin;
}

/** Every distinct regexp query inside `value` (a search request, a plan's scans): each query object once, however often it is shared. */
export function regexpQueriesIn(value: unknown): FoundRegexp[] {
  const found = new Map<object, FoundRegexp>();
  const seen = new Set<object>();
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const node = pending.pop();
    if (typeof node !== 'object' || node === null || seen.has(node)) continue;
    seen.add(node);
    const regexp = (node as { regexp?: unknown }).regexp;
    if (typeof regexp === 'object' && regexp !== null) {
      for (const [field, body] of Object.entries(regexp)) {
        if (typeof body !== 'object' || body === null || typeof (body as RegexpBody).value !== 'string') continue;
        found.set(body, { field, body: body as RegexpBody, origin: origins.get(body) });
      }
    }
    pending.push(...Object.values(node));
  }
  return [...found.values()];
}

/** The search requests a scan may send: only these reach the store (a fallback's residual query is a whole syntax tree, not worth walking). */
function searchesOf(scan: Scan): estypes.SearchRequest[] {
  switch (scan.kind) {
    case 'constant':
      return [];
    case 'events':
      return scan.take.kind === 'limit' && scan.take.irregular
        ? [scan.search, scan.take.irregular, ...(scan.take.superset ? [scan.take.superset] : [])]
        : [scan.search];
    case 'aggregation':
      return [scan.search, scan.irregular, ...searchesOf(scan.fallback.scan)];
    default:
      return [scan.search];
  }
}

/**
 * Refuses a plan whose regexp queries exceed the request's budget (QueryTooExpensive, naming the
 * limit), and sets each one's state limit. The regexp bodies can be shared by every request of one
 * text (planned once per endpoint and field catalogs, which belong to one server and so to one
 * configuration): each request writes the same value.
 */
export function boundRegexCost(plan: Plan, limits: RegexLimits): Plan {
  const queries = regexpQueriesIn(plan.scans.flatMap(searchesOf));
  // one pattern on one field counts once: a record filter sends it in its exact and its loose form
  const distinct = new Map(queries.map((query) => [`${query.field}\u0000${query.body.case_insensitive === true}\u0000${query.body.value}`, query]));
  if (distinct.size > limits.maxPerRequest) {
    throw new QueryTooExpensive(
      `the query holds ${distinct.size} regular expressions for the log store to match; at most ${limits.maxPerRequest} are allowed ` +
        'in one request (SANDBOX_MAX_REGEX_PER_QUERY): join patterns with | or match exact values instead',
    );
  }
  const chars = [...distinct.values()].reduce((total, query) => total + query.body.value.length, 0);
  if (chars > limits.maxTotalChars) {
    throw new QueryTooExpensive(
      `the query's regular expressions are ${chars} characters long together in the log store's syntax, ` +
        `more than ${limits.maxTotalChars} allowed in one request (SANDBOX_MAX_REGEX_CHARS); shorten them`,
    );
  }
  for (const query of queries) query.body.max_determinized_states = limits.maxDeterminizedStates;
  return plan;
}
