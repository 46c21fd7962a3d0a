import { errors, type Client, type estypes } from '@elastic/elasticsearch';
import type { CompiledQuery } from './compiler/compile.ts';
import { BadParameter, QueryTimeout, StoreUnavailable } from './errors.ts';
import { logRows } from './rows/logs.ts';
import { usageRows } from './rows/usage.ts';

export interface ExecutorOptions {
  elasticsearch: Client;
  /** A query still running after this long is abandoned (Elasticsearch cancels it when the connection closes). */
  timeoutMs: number;
  /** Observes the time spent in Elasticsearch, in seconds. */
  observe?: (seconds: number) => void;
}

/** Elasticsearch's reasons for refusing a regexp that the translator let through (too long, too many states). */
const PATTERN_REFUSALS = /too_complex_to_determinize|max_regex_length|maxDeterminizedStates|determinizing/i;

function storeError(error: unknown, timeoutMs: number): Error {
  if (error instanceof errors.TimeoutError) {
    return new QueryTimeout(`the query took longer than ${timeoutMs} ms and was stopped; narrow the time window or the pattern`);
  }
  if (error instanceof errors.ConnectionError || error instanceof errors.NoLivingConnectionsError) {
    return new StoreUnavailable(`the log store (Elasticsearch) is unreachable: ${error.message}`);
  }
  if (error instanceof errors.ResponseError) {
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

/** Runs a compiled query on Elasticsearch and formats the rows; the only module of the route that talks to the store. */
export async function executeQuery(query: CompiledQuery, options: ExecutorOptions): Promise<unknown[]> {
  const started = process.hrtime.bigint();
  let response: estypes.SearchResponse<Record<string, unknown>>;
  try {
    response = await options.elasticsearch.search<Record<string, unknown>>(query.search, { requestTimeout: options.timeoutMs, maxRetries: 0 });
  } catch (error) {
    throw storeError(error, options.timeoutMs);
  } finally {
    options.observe?.(Number(process.hrtime.bigint() - started) / 1e9);
  }
  const rows = query.kind === 'events' ? logRows(response.hits.hits) : usageRows(response.aggregations as Record<string, unknown> | undefined, query.columns);
  return rows.slice(0, query.limit);
}
