import type { Readable } from 'node:stream';
import { errors, type Client, type estypes, type TransportResult } from '@elastic/elasticsearch';
import { BadParameter, InvalidQuery, QueryTimeout, QueryTooExpensive, StoreUnavailable } from '../errors.ts';
import { expressionReads, partitionStartOf } from '../../shared/partitions.ts';
import { regexpQueriesIn } from '../planner/regex-budget.ts';
import { parsedJson, plainSearch, refusal, type PlainAnswer } from './plain-search.ts';
import type { StoreReads } from './store-reads.ts';

export interface StoreOptions {
  elasticsearch: Client;
  /** A search still running after this long is abandoned (Elasticsearch cancels it when the connection closes). */
  timeoutMs: number;
  /** Observes the time spent in Elasticsearch, in seconds. */
  observe?: (seconds: number) => void;
  /** Aborts the search (the request's other scans failed or read too much): its connection is closed, and Elasticsearch cancels it. */
  signal?: AbortSignal;
  /** Wall-clock time, epoch milliseconds (default Date.now): partitions are created and named by it. */
  now?: () => number;
  /**
   * When the whole request's answer is due, on performance.now()'s clock: a search gets what is left
   * of it (at most timeoutMs), so a request of many pages and scans is bounded as one.
   */
  deadline?: number;
  /** Where a caller who asked for statistics collects what the searches read; an aggregation then counts its hits exactly. */
  reads?: StoreReads;
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

/** Refusals with status 400 that describe the store's state (an operator closed an index), which no change to the query would fix. */
const STATE_REFUSALS = ['index_closed_exception'];

/** How much of Elasticsearch's reason a caller is told. */
const MAX_REASON_LENGTH = 300;

/**
 * Elasticsearch's reason for refusing a query, as a caller may read it: the first root cause,
 * with the names and ids of the indices it mentions replaced (they are the deployment's, not the caller's).
 */
export function refusalReason(body: unknown): string {
  const root = body as { error?: { reason?: string; root_cause?: StoreFailureCause[] } } | undefined;
  let reason = root?.error?.root_cause?.[0]?.reason ?? root?.error?.reason ?? 'no reason given';
  const internal = new Set<string>();
  const pending: unknown[] = [body];
  for (let visited = 0; visited < pending.length && visited < 1000; visited += 1) {
    const node = pending[visited];
    if (typeof node !== 'object' || node === null) continue;
    for (const [key, value] of Object.entries(node)) {
      if ((key === 'index' || key === 'index_uuid') && typeof value === 'string' && value !== '') internal.add(value);
      else pending.push(value);
    }
  }
  // longest first, so a name is never left half replaced by a shorter one inside it
  for (const name of [...internal].sort((a, b) => b.length - a.length)) reason = reason.split(name).join('(index)');
  return reason.length > MAX_REASON_LENGTH ? `${reason.slice(0, MAX_REASON_LENGTH)}...` : reason;
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
  const what = quoted
    ? `is too complex for the log store (building its automaton takes more than ${quoted[2]} steps)`
    : 'is too long or too complex for the log store';
  const fix = 'simplify it: fewer repeats of . or of a class, fewer alternatives';
  const origin = refused?.origin;
  if (origin) return new BadParameter(`${origin.parameter}: the pattern ${JSON.stringify(origin.pattern)} ${what}; ${fix}`, 'pattern_too_complex');
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
      return new QueryTooExpensive(
        `the query needs more memory than the log store allows one request (${breaker.reason ?? 'circuit breaker'}); narrow the time window, the pattern or the grouping`,
      );
    }
    const buckets = findStoreCause(error.body, 'too_many_buckets_exception');
    if (buckets) {
      return new QueryTooExpensive(
        `the query would create too many buckets (${buckets.reason ?? 'too many buckets'}); use coarser buckets or a narrower time window`,
      );
    }
    const text = JSON.stringify(error.body ?? '');
    if (error.statusCode === 400 && PATTERN_REFUSALS.test(text)) return patternRefusal(error.body, request);
    if (isShardNotStarted(error)) {
      return new StoreUnavailable('part of the log store is not available yet (a shard of an index being created or recovering); retry shortly');
    }
    // a query the store cannot parse or apply (a regex on a number, a clause it does not accept): the caller's to change
    if (error.statusCode === 400 && !STATE_REFUSALS.some((type) => findStoreCause(error.body, type))) {
      return new InvalidQuery(`the log store refused the query: ${refusalReason(error.body)}; change the query`);
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
 * A search over a partition whose primary has no started copy fails whole with no_shard_available
 * (searches never accept partial results here). A partition that cannot hold an event yet is left
 * out and the search made again at once: one whose primary has never started (no event is written
 * before it does), or one whose period has not begun (the worker creates it ahead of its period;
 * only an event stamped ahead of the clock could be in it). Any other missing shard (a node
 * restarting with events on it) is waited for within this budget, then the caller hears 503: an
 * answer without its events would be wrong.
 */
export const SHARD_START_RETRY_MS = 1000;

/** Partitions left out of one request at most: each is named in the URL, which Elasticsearch caps at 4 KB. */
const MAX_LEFT_OUT = 20;

/** A refusal for missing shards answered by a listing that finds every shard started is made again at once, this many times. */
const MAX_STALE_REFUSALS = 3;

/** Whether Elasticsearch refused a search only because a shard has no started copy (searches never accept partial results here). */
export function isShardNotStarted(error: unknown): boolean {
  if (!(error instanceof errors.ResponseError)) return false;
  // a shard still recovering refuses field_caps with this, as a 404
  if (findStoreCause(error.body, 'illegal_index_shard_state_exception') !== undefined) return true;
  if (error.statusCode !== 503) return false;
  return (
    findStoreCause(error.body, 'no_shard_available_action_exception') !== undefined ||
    /Search rejected due to missing shards/.test(JSON.stringify(error.body ?? ''))
  );
}

/** A primary shard without a started copy. */
export interface UnstartedPrimary {
  index: string;
  /** Its in-sync copies are none: it has never started, so it holds nothing. */
  neverStarted: boolean;
}

/**
 * Of the indices whose primary has no started copy: those a search leaves out at once (they
 * cannot hold an event yet) and those it has to wait for. `nowMs` is the wall clock the worker
 * names partitions by.
 */
export function partitionsWithoutEvents(unstarted: readonly UnstartedPrimary[], nowMs: number): { leaveOut: string[]; waitFor: string[] } {
  const indices = [...new Set(unstarted.map((primary) => primary.index))];
  const empty = (index: string) =>
    (partitionStartOf(index) ?? -Infinity) > nowMs || unstarted.every((primary) => primary.index !== index || primary.neverStarted);
  return { leaveOut: indices.filter(empty), waitFor: indices.filter((index) => !empty(index)) };
}

function indexExpressions(index: estypes.Indices): string[] {
  return (Array.isArray(index) ? index : index.split(',')).map((expression) => expression.trim()).filter((expression) => expression !== '');
}

/**
 * The primaries without a started copy among the indices `expressions` reads (exclusions left
 * aside: they only narrow the list), and whether each has ever started: the in-sync copies the
 * cluster keeps, asked only for those.
 */
async function unstartedPrimaries(expressions: readonly string[], options: StoreOptions, timeoutMs: number): Promise<UnstartedPrimary[]> {
  const included = expressions.filter((expression) => !expression.startsWith('-'));
  const rows = await options.elasticsearch.cat.shards(
    // every name as a wildcard: a concrete name that does not exist would fail the listing
    { index: included.map((expression) => (expression.endsWith('*') ? expression : `${expression}*`)), format: 'json', h: 'index,shard,prirep,state' },
    { requestTimeout: timeoutMs },
  );
  const unstarted = (rows as Array<Record<string, string | undefined>>).filter(
    (row) => row.prirep === 'p' && row.index !== undefined && row.state !== 'STARTED' && row.state !== 'RELOCATING' && expressionReads(included, row.index),
  );
  if (unstarted.length === 0) return [];
  const state = await options.elasticsearch.cluster.state(
    {
      metric: 'metadata',
      index: [...new Set(unstarted.map((row) => row.index!))],
      ignore_unavailable: true,
      filter_path: 'metadata.indices.*.in_sync_allocations',
    },
    { requestTimeout: timeoutMs },
  );
  const inSync = (state as { metadata?: { indices?: Record<string, { in_sync_allocations?: Record<string, string[]> }> } }).metadata?.indices ?? {};
  // an index gone since the listing (retention) holds nothing any more either
  return unstarted.map((row) => ({ index: row.index!, neverStarted: (inSync[row.index!]?.in_sync_allocations?.[row.shard ?? '0'] ?? []).length === 0 }));
}

/** The time one call to the store may take: its own timeout, or what is left of the request's, if less. */
function timeLeft(options: StoreOptions): number {
  if (options.deadline === undefined) return options.timeoutMs;
  const left = options.deadline - performance.now();
  if (left <= 0)
    throw new QueryTimeout(
      `the query ran out of its time limit (QUERY_TIMEOUT_MS, ${options.timeoutMs} ms) before the log store was asked; narrow the time window or the query`,
    );
  return Math.min(options.timeoutMs, left);
}

/** Time spent on one request so far, and what is left of its timeout (at least 1 ms, as a request timeout must be). */
function requestClock(timeoutMs: number): { elapsedMs(): number; remainingMs(): number } {
  const started = process.hrtime.bigint();
  const elapsedMs = () => Number(process.hrtime.bigint() - started) / 1e6;
  return { elapsedMs, remainingMs: () => Math.max(1, Math.round(timeoutMs - elapsedMs())) };
}

/**
 * `expressions` without `indices`: a name listed as itself is dropped, one a remaining wildcard
 * reads is excluded after it; undefined when nothing would be left to read.
 */
function leavingOut(expressions: readonly string[], indices: readonly string[]): string[] | undefined {
  const kept = expressions.filter((expression) => !indices.includes(expression));
  const included = kept.filter((expression) => !expression.startsWith('-'));
  // never an empty list: Elasticsearch reads every index for one
  if (included.length === 0) return undefined;
  return [...kept, ...indices.filter((name) => expressionReads(included, name)).map((name) => `-${name}`)];
}

/**
 * Runs `attempt` over the index expressions of one request. When it fails because a shard has no
 * started copy: partitions that cannot hold an event yet are left out at once; a refusal the shard
 * listing no longer bears out (the shard started meanwhile) is made again at once; any other
 * missing shard is waited for within SHARD_START_RETRY_MS, then the failure stands.
 */
async function leavingNewPartitionsOut<T>(
  index: estypes.Indices,
  options: StoreOptions,
  clock: ReturnType<typeof requestClock>,
  attempt: (expressions: string[]) => Promise<T>,
): Promise<T> {
  let expressions = indexExpressions(index);
  for (let pause = 50, leftOut = 0, stale = 0; ; ) {
    try {
      return await attempt(expressions);
    } catch (error) {
      if (!isShardNotStarted(error)) throw error;
      const unstarted = await unstartedPrimaries(expressions, options, clock.remainingMs());
      const { leaveOut, waitFor } = partitionsWithoutEvents(unstarted, (options.now ?? Date.now)());
      const narrowed = leaveOut.length > 0 && leftOut + leaveOut.length <= MAX_LEFT_OUT ? leavingOut(expressions, leaveOut) : undefined;
      if (narrowed) {
        leftOut += leaveOut.length;
        expressions = narrowed;
        continue;
      }
      if (leaveOut.length === 0 && waitFor.length === 0 && stale < MAX_STALE_REFUSALS) {
        stale += 1;
        continue;
      }
      if (clock.elapsedMs() + pause > Math.min(SHARD_START_RETRY_MS, options.timeoutMs)) throw error;
      await new Promise((resolve) => setTimeout(resolve, pause));
      pause *= 2;
    }
  }
}

/**
 * One search request; with fieldTypes below, the only places the query path talks to Elasticsearch, and where failures get their meaning.
 * Sent as a plain request on the client's connection and parsed with JSON.parse, as the client parses (its prototype-poisoning
 * protection is off); the client sends it where the plain request cannot, again where it would retry (a connection that failed,
 * a 502-504), and where the answer is not JSON, so that one is read as the client reads it.
 */
export async function search(request: estypes.SearchRequest, options: StoreOptions): Promise<estypes.SearchResponse<Record<string, unknown>>> {
  return searchWith(request, options, async (sent, transport) => {
    const byClient = () => options.elasticsearch.search<Record<string, unknown>>(sent, transport);
    const answer = await plainSearch(options.elasticsearch, sent, transport);
    if (!answer || isRetried(answer.statusCode)) return byClient();
    if (answer.statusCode >= 400) throw refusal(answer.statusCode, answer.text);
    return (parsedJson(answer.text) as estypes.SearchResponse<Record<string, unknown>> | undefined) ?? byClient();
  });
}

/** The statuses the client asks again (another node, another moment): a gateway's 502-504. */
function isRetried(statusCode: number): boolean {
  return statusCode === 502 || statusCode === 503 || statusCode === 504;
}

/**
 * One search whose answer is the store's response text, not parsed: for answers written from the
 * text (logs.all's rows, src/executor/rows/log-row-text.ts); not for a run collecting statistics, which
 * read the parsed response. Sent as a plain request on the client's connection (plain-search.ts);
 * the client sends it instead where that cannot, and again where it would retry: a connection that
 * failed (it tries the other nodes) and a 502-504. Failures mean what they mean for search.
 */
export async function searchText(request: estypes.SearchRequest, options: StoreOptions): Promise<string> {
  return searchWith(request, options, async (sent, transport) => {
    const answer = (await plainSearch(options.elasticsearch, sent, transport)) ?? (await clientSearchText(sent, transport, options));
    if (isRetried(answer.statusCode)) {
      return JSON.stringify(await options.elasticsearch.search(sent, transport));
    }
    if (answer.statusCode >= 400) throw refusal(answer.statusCode, answer.text);
    return answer.text;
  });
}

/** The search's text through the client (its transport, retries and node choice). */
async function clientSearchText(
  sent: estypes.SearchRequest,
  transport: { requestTimeout: number; signal?: AbortSignal },
  options: StoreOptions,
): Promise<PlainAnswer> {
  // the service registers no tracer, so the client's span around each request records nothing and only costs
  const raw = { ...transport, asStream: true, meta: true, openTelemetry: { enabled: false } };
  const response = (await options.elasticsearch.search(sent, raw)) as unknown as TransportResult<Readable>;
  return { statusCode: response.statusCode ?? 200, text: await bodyText(response.body) };
}

async function bodyText(body: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of body) chunks.push(chunk as Buffer);
  } catch (error) {
    // the connection failed or the search was aborted mid-answer: as the client reports either
    throw new errors.ConnectionError(error instanceof Error ? error.message : String(error));
  }
  return Buffer.concat(chunks).toString('utf8');
}

type SearchSender<T> = (sent: estypes.SearchRequest, transport: { requestTimeout: number; signal?: AbortSignal }) => Promise<T>;

async function searchWith<T>(request: estypes.SearchRequest, options: StoreOptions, send: SearchSender<T>): Promise<T> {
  const clock = requestClock(timeLeft(options));
  const { reads } = options;
  // statistics report an aggregation's events in scope: counted only when asked, as counting costs the store
  const sent = reads && request.aggs ? { ...request, track_total_hits: true } : request;
  let named: estypes.Indices | undefined;
  // a shard without a started copy must fail the search: by default Elasticsearch would answer 200 without that shard's events
  const attempt = (index: estypes.Indices | undefined) => {
    named = index;
    return send({ ...sent, index, allow_partial_search_results: false }, { requestTimeout: clock.remainingMs(), signal: options.signal });
  };
  try {
    // every search the planner makes names its indices
    const response = request.index === undefined ? await attempt(undefined) : await leavingNewPartitionsOut(request.index, options, clock, attempt);
    reads?.searched(sent, named === undefined ? [] : indexExpressions(named), response);
    return response;
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
      options.elasticsearch.fieldCaps(
        { index: expressions, fields: '*', ignore_unavailable: true, allow_no_indices: true },
        { requestTimeout: clock.remainingMs() },
      ),
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
