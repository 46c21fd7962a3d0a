import { errors, type Client, type estypes } from '@elastic/elasticsearch';
import { BadParameter, QueryTimeout, QueryTooExpensive, StoreUnavailable } from '../errors.ts';
import { expressionReads } from '../../shared/partitions.ts';
import { regexpQueriesIn } from '../planner/regex-budget.ts';

export interface StoreOptions {
  elasticsearch: Client;
  /** A search still running after this long is abandoned (Elasticsearch cancels it when the connection closes). */
  timeoutMs: number;
  /** Observes the time spent in Elasticsearch, in seconds. */
  observe?: (seconds: number) => void;
}

/** Elasticsearch's reasons for refusing a regexp that the translator let through (too long, too many states). */
const PATTERN_REFUSALS = /too_complex_to_determinize|max_regex_length|maxDeterminizedStates|determinizing/i;

interface StoreFailureCause {
  type?: string;
  reason?: string;
}

/** The shallowest failure of `type` anywhere in an Elasticsearch error body (root causes, caused_by chains, shard failures). */
export function findStoreCause(body: unknown, type: string): StoreFailureCause | undefined {
  const pending: unknown[] = [body];
  // breadth first, so the root cause wins over a shard's copy; bodies are small, but a bound keeps an odd one cheap
  for (let visited = 0; visited < pending.length && visited < 1000; visited += 1) {
    const node = pending[visited];
    if (typeof node !== 'object' || node === null) continue;
    if ((node as StoreFailureCause).type === type) return node as StoreFailureCause;
    pending.push(...Object.values(node));
  }
  return undefined;
}

/**
 * A pattern of `request` the store refused, named after where the caller wrote it (a project
 * parameter, sql, lql). A pattern too complex to determinize is quoted in the refusal; one too long
 * is not, so it is known only when the request holds a single pattern.
 */
function patternRefusal(body: unknown, request: unknown): BadParameter {
  const queries = regexpQueriesIn(request);
  const reason = findStoreCause(body, 'too_complex_to_determinize_exception')?.reason ?? '';
  const quoted = /^Determinizing (.*) would require more than (\d+) effort/s.exec(reason);
  const refused = quoted ? queries.find((query) => query.body.value === quoted[1]) : queries.length === 1 ? queries[0] : undefined;
  const what = quoted ? `is too complex for the log store (building its automaton takes more than ${quoted[2]} steps)` : 'is too long or too complex for the log store';
  const fix = 'simplify it: fewer repeats of . or of a class, fewer alternatives';
  if (refused?.origin) return new BadParameter(`${refused.origin.parameter}: the pattern ${JSON.stringify(refused.origin.pattern)} ${what}; ${fix}`, 'pattern_too_complex');
  const parameters = new Set(queries.flatMap((query) => (query.origin ? [query.origin.parameter] : [])));
  const which = parameters.size === 1 ? `${[...parameters][0]}: a pattern` : 'a pattern of the query';
  return new BadParameter(`${which} ${what}; ${fix}`, 'pattern_too_complex');
}

/**
 * What Elasticsearch's refusal means for the caller: the query's fault (400), the store's state
 * (503), or time (504). `request` (what was refused) lets a refused pattern be named.
 */
export function storeError(error: unknown, timeoutMs: number, request?: unknown): Error {
  if (error instanceof errors.TimeoutError) {
    return new QueryTimeout(`the query took longer than ${timeoutMs} ms and was stopped; narrow the time window or the pattern`);
  }
  if (error instanceof errors.ConnectionError || error instanceof errors.NoLivingConnectionsError) {
    return new StoreUnavailable(`the log store (Elasticsearch) is unreachable: ${error.message}`);
  }
  if (error instanceof errors.ResponseError) {
    const breaker = findStoreCause(error.body, 'circuit_breaking_exception');
    // the parent breaker counts the whole node's memory: short of it, the store is busy, not this query at fault
    if (breaker && !breaker.reason?.startsWith('[parent]')) {
      return new QueryTooExpensive(`the query needs more memory than the log store allows one request (${breaker.reason ?? 'circuit breaker'}); narrow the time window, the pattern or the grouping`);
    }
    const buckets = findStoreCause(error.body, 'too_many_buckets_exception');
    if (buckets) {
      return new QueryTooExpensive(`the query would create too many buckets (${buckets.reason ?? 'too many buckets'}); use coarser buckets or a narrower time window`);
    }
    const text = JSON.stringify(error.body ?? '');
    if (error.statusCode === 400 && PATTERN_REFUSALS.test(text)) return patternRefusal(error.body, request);
    if (isShardNotStarted(error)) {
      return new StoreUnavailable('part of the log store is not available yet (a shard of an index being created or recovering); retry shortly');
    }
    if (error.statusCode === 429 || error.statusCode === 503 || error.statusCode === 502) {
      return new StoreUnavailable(`the log store (Elasticsearch) is overloaded or unavailable (status ${error.statusCode}); retry shortly`);
    }
    // anything else the store refuses (index blocks, shard failures) is the store's state, not the caller's request
    const type = (error.body as { error?: { type?: string } } | undefined)?.error?.type ?? 'unknown';
    return new StoreUnavailable(`the log store (Elasticsearch) refused the query (status ${error.statusCode}, ${type}); retry later or tell the operator`);
  }
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * A partition the worker created a moment ago (the first event of a new day) exists before its shard
 * has started, and a search over it fails whole with no_shard_available. Such a shard holds nothing
 * yet (no event is written before its primary starts), so the search is made again without that
 * index. A shard missing for any other reason (a node restarting with events on it) is waited for
 * within this budget, then the caller hears 503: an answer without its events would be wrong.
 */
export const SHARD_START_RETRY_MS = 1000;

/** Whether Elasticsearch refused a search only because a shard has no started copy (searches never accept partial results here). */
export function isShardNotStarted(error: unknown): boolean {
  if (!(error instanceof errors.ResponseError)) return false;
  // a shard still recovering refuses field_caps with this, as a 404
  if (findStoreCause(error.body, 'illegal_index_shard_state_exception') !== undefined) return true;
  if (error.statusCode !== 503) return false;
  return findStoreCause(error.body, 'no_shard_available_action_exception') !== undefined || /Search rejected due to missing shards/.test(JSON.stringify(error.body ?? ''));
}

/** A primary shard as `_cat/shards` lists it. */
export interface PrimaryShardState {
  index: string;
  state: string;
  /** Why it was last unassigned; kept while it initialises. */
  unassignedReason?: string;
}

/**
 * The indices among `shards` whose primary has not started since the index was created, when those
 * are the only primaries not started; undefined when any other primary is missing (its events would
 * be missing from an answer) or none is.
 */
export function neverStartedIndices(shards: readonly PrimaryShardState[]): string[] | undefined {
  const missing = shards.filter((shard) => shard.state !== 'STARTED' && shard.state !== 'RELOCATING');
  if (missing.length === 0 || missing.some((shard) => shard.unassignedReason !== 'INDEX_CREATED')) return undefined;
  return [...new Set(missing.map((shard) => shard.index))];
}

function indexExpressions(index: estypes.Indices): string[] {
  return (Array.isArray(index) ? index : index.split(',')).map((expression) => expression.trim()).filter((expression) => expression !== '');
}

/** The primaries of the indices `expressions` reads (exclusions left aside: they only narrow the list). */
async function primaryShards(expressions: readonly string[], options: StoreOptions, timeoutMs: number): Promise<PrimaryShardState[]> {
  const included = expressions.filter((expression) => !expression.startsWith('-'));
  const rows = await options.elasticsearch.cat.shards(
    // every name as a wildcard: a concrete name that does not exist would fail the listing
    { index: included.map((expression) => (expression.endsWith('*') ? expression : `${expression}*`)), format: 'json', h: 'index,prirep,state,unassigned.reason' },
    { requestTimeout: timeoutMs },
  );
  return (rows as Array<Record<string, string | undefined>>)
    .filter((row) => row.prirep === 'p' && row.index !== undefined && expressionReads(included, row.index))
    .map((row) => ({ index: row.index!, state: row.state ?? '', unassignedReason: row['unassigned.reason'] }));
}

/** Time spent on one request so far, and what is left of its timeout (at least 1 ms, as a request timeout must be). */
function requestClock(timeoutMs: number): { elapsedMs(): number; remainingMs(): number } {
  const started = process.hrtime.bigint();
  const elapsedMs = () => Number(process.hrtime.bigint() - started) / 1e6;
  return { elapsedMs, remainingMs: () => Math.max(1, Math.round(timeoutMs - elapsedMs())) };
}

/**
 * Runs `attempt` over the index expressions of one request. When it fails because a shard has no
 * started copy: partitions whose primary has not started since they were created hold nothing and
 * are left out at once; any other missing shard is waited for within SHARD_START_RETRY_MS, then the
 * failure stands.
 */
async function leavingNewPartitionsOut<T>(index: estypes.Indices, options: StoreOptions, clock: ReturnType<typeof requestClock>, attempt: (expressions: string[]) => Promise<T>): Promise<T> {
  let expressions = indexExpressions(index);
  for (let pause = 50, leftOut = 0; ; ) {
    try {
      return await attempt(expressions);
    } catch (error) {
      if (!isShardNotStarted(error)) throw error;
      // a few new partitions at a time (one per source at midnight); beyond that, wait like any other missing shard
      const empty = leftOut < 20 ? neverStartedIndices(await primaryShards(expressions, options, clock.remainingMs())) : undefined;
      if (empty) {
        leftOut += empty.length;
        // a name listed as itself is dropped; one a remaining wildcard reads is excluded after it
        const kept = expressions.filter((expression) => !empty.includes(expression));
        const included = kept.filter((expression) => !expression.startsWith('-'));
        // never an empty list: Elasticsearch reads every index for one
        if (included.length > 0) {
          expressions = [...kept, ...empty.filter((name) => expressionReads(included, name)).map((name) => `-${name}`)];
          continue;
        }
      }
      if (clock.elapsedMs() + pause > Math.min(SHARD_START_RETRY_MS, options.timeoutMs)) throw error;
      await new Promise((resolve) => setTimeout(resolve, pause));
      pause *= 2;
    }
  }
}

/** One search request; with fieldTypes below, the only places the query path talks to Elasticsearch, and where failures get their meaning. */
export async function search(request: estypes.SearchRequest, options: StoreOptions): Promise<estypes.SearchResponse<Record<string, unknown>>> {
  const clock = requestClock(options.timeoutMs);
  // a shard without a started copy must fail the search: by default Elasticsearch would answer 200 without that shard's events
  const attempt = (index: estypes.Indices | undefined) => options.elasticsearch.search<Record<string, unknown>>({ ...request, index, allow_partial_search_results: false }, { requestTimeout: clock.remainingMs() });
  try {
    // every search the planner makes names its indices
    if (request.index === undefined) return await attempt(undefined);
    return await leavingNewPartitionsOut(request.index, options, clock, attempt);
  } catch (error) {
    throw storeError(error, options.timeoutMs, request);
  } finally {
    options.observe?.(clock.elapsedMs() / 1e3);
  }
}

/** The mapped type of every field of an index (`conflict` where its indices disagree). */
export async function fieldTypes(index: string, options: Pick<StoreOptions, 'elasticsearch' | 'timeoutMs'>): Promise<Record<string, string>> {
  const clock = requestClock(options.timeoutMs);
  let response: estypes.FieldCapsResponse;
  try {
    // a new partition's mapping is the template's, which its older neighbours have as well
    response = await leavingNewPartitionsOut(index, options, clock, (expressions) =>
      options.elasticsearch.fieldCaps({ index: expressions, fields: '*', ignore_unavailable: true, allow_no_indices: true }, { requestTimeout: clock.remainingMs() }),
    );
  } catch (error) {
    throw storeError(error, options.timeoutMs);
  }
  const types: Record<string, string> = {};
  for (const [field, byType] of Object.entries(response.fields)) {
    const kinds = Object.keys(byType);
    types[field] = kinds.length === 1 ? kinds[0]! : 'conflict';
  }
  return types;
}
