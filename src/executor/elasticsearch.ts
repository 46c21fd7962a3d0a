import { errors, type Client, type estypes } from '@elastic/elasticsearch';
import { BadParameter, QueryTimeout, QueryTooExpensive, StoreUnavailable } from '../errors.ts';

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

/** What Elasticsearch's refusal means for the caller: the query's fault (400), the store's state (503), or time (504). */
export function storeError(error: unknown, timeoutMs: number): Error {
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
    if (error.statusCode === 400 && PATTERN_REFUSALS.test(text)) {
      return new BadParameter('project: the pattern is too long or too complex for the log store; simplify it', 'pattern_too_complex');
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

/** One search request; with fieldTypes below, the only places the query path talks to Elasticsearch, and where failures get their meaning. */
export async function search(request: estypes.SearchRequest, options: StoreOptions): Promise<estypes.SearchResponse<Record<string, unknown>>> {
  const started = process.hrtime.bigint();
  try {
    // a shard that failed (one still recovering after a restart, say) fails the search: a partial answer would pass for whole, and be cached
    return await options.elasticsearch.search<Record<string, unknown>>({ ...request, allow_partial_search_results: false }, { requestTimeout: options.timeoutMs, maxRetries: 0 });
  } catch (error) {
    throw storeError(error, options.timeoutMs);
  } finally {
    options.observe?.(Number(process.hrtime.bigint() - started) / 1e9);
  }
}

/** The mapped type of every field of an index (`conflict` where its indices disagree). */
export async function fieldTypes(index: string, options: Pick<StoreOptions, 'elasticsearch' | 'timeoutMs'>): Promise<Record<string, string>> {
  let response: estypes.FieldCapsResponse;
  try {
    response = await options.elasticsearch.fieldCaps({ index, fields: '*', ignore_unavailable: true, allow_no_indices: true }, { requestTimeout: options.timeoutMs, maxRetries: 0 });
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
