import { stringify } from 'node:querystring';
import { errors, type Client, type estypes, type UndiciConnection } from '@elastic/elasticsearch';

/**
 * A search sent as one plain HTTP request on a connection of the client's pool (its node, keep-alive
 * sockets, TLS and credentials), instead of through the client's transport: its request ids,
 * diagnostic events, serializer and retry bookkeeping cost 100-190 us of CPU a search in paired
 * in-process runs, as much as the rest of the search's own work in the service (issue 20). The
 * request is the one the client sends (the same path, query string and JSON body); its failures
 * are reported as the client's (TimeoutError, ConnectionError, RequestAbortedError). The caller
 * asks the client again where it would retry: a connection failure (another node) and a 502-504.
 */

/** The parameters the client sends in the query string, as the search API of @elastic/elasticsearch 8 does for these. */
const URL_PARAMETERS = new Set(['allow_no_indices', 'allow_partial_search_results', 'expand_wildcards', 'filter_path', 'ignore_unavailable', 'preference']);

/**
 * The parameters the client sends in the body (the sandbox's checks for irregular events stop early: terminate_after); a request
 * holding any other is left to the client.
 */
const BODY_PARAMETERS = new Set(['_source', 'aggs', 'query', 'search_after', 'size', 'sort', 'terminate_after', 'track_total_hits']);

/** What the store answered: its status and the body's text, not parsed. */
export interface PlainAnswer {
  statusCode: number;
  text: string;
}

/** The path, query string and JSON body the client sends for `request`; undefined when it holds a parameter not placed here. */
export function plainSearchRequest(request: estypes.SearchRequest): { path: string; querystring: string; body: string } | undefined {
  if (request.index === undefined) return undefined;
  const query: Record<string, string> = {};
  const body: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(request)) {
    if (key === 'index' || value === undefined) continue;
    if (URL_PARAMETERS.has(key)) query[key] = Array.isArray(value) ? value.join(',') : String(value);
    else if (BODY_PARAMETERS.has(key)) body[key] = value;
    else return undefined;
  }
  return { path: `/${encodeURIComponent(request.index.toString())}/_search`, querystring: stringify(query), body: JSON.stringify(body) };
}

/** undici's codes for a request its timeouts stopped (the client's TimeoutError) and one its signal aborted. */
const TIMED_OUT = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
const ABORTED = new Set(['UND_ERR_ABORTED', 'ABORT_ERR']);

/** An undici failure as the client reports it. */
function clientError(error: unknown): Error {
  const code = (error as { code?: string; name?: string } | undefined)?.code;
  if (code !== undefined && TIMED_OUT.has(code)) return new errors.TimeoutError('Request timed out');
  if ((code !== undefined && ABORTED.has(code)) || (error as Error | undefined)?.name === 'AbortError')
    return new errors.RequestAbortedError('Request aborted');
  return new errors.ConnectionError(error instanceof Error ? error.message : String(error));
}

/**
 * `request` sent on the undici pool of a connection the client's pool offers, with that connection's
 * headers (credentials); undefined when the client should send it: the request holds parameters
 * plainSearchRequest does not place, the connection is not undici's, or it failed before an answer
 * (the client tries the other nodes and marks this one dead). The time limit is undici's, as for the
 * client's own default timeout: until the answer's headers (Elasticsearch writes a search's answer
 * whole once it is ready), then between its chunks, checked on undici's coarse clock (up to about a
 * second late). A refusal (status 400 and up) is the caller's to read.
 */
export async function plainSearch(
  client: Client,
  request: estypes.SearchRequest,
  transport: { requestTimeout: number; signal?: AbortSignal },
): Promise<PlainAnswer | undefined> {
  const sent = plainSearchRequest(request);
  const connection = sent && client.transport.getConnection({ requestId: 0, context: null });
  const pool = connection && 'pool' in connection ? (connection as UndiciConnection).pool : undefined;
  if (!sent || !connection || !pool) return undefined;
  const response = await pool
    .request({
      method: 'POST',
      // a node URL with a path (behind a proxy) is the prefix of every request, as the client sends it
      path: `${connection.url.pathname.replace(/\/$/, '')}${sent.path}?${sent.querystring}`,
      headers: { ...connection.headers, 'content-type': 'application/json' },
      body: sent.body,
      headersTimeout: transport.requestTimeout,
      bodyTimeout: transport.requestTimeout,
      signal: transport.signal,
    })
    .catch((error: unknown) => {
      const failure = clientError(error);
      if (failure instanceof errors.ConnectionError) return undefined;
      throw failure;
    });
  if (!response) return undefined;
  try {
    return { statusCode: response.statusCode, text: await response.body.text() };
  } catch (error) {
    throw clientError(error);
  }
}

/** The error the client throws for a refusal (status 400 and up), with the store's body parsed where it is JSON. */
export function refusal(statusCode: number, text: string): errors.ResponseError {
  // a refusal that is not JSON (a proxy's page) is kept as its text
  const body = parsedJson(text) ?? text;
  const request = { params: { method: 'POST', path: '/_search' }, options: {}, id: 0 };
  return new errors.ResponseError({
    body,
    statusCode,
    headers: {},
    warnings: null,
    meta: { context: null, name: 'plain-search', request, connection: null, attempts: 0, aborted: false },
  });
}

/** `text` parsed as JSON; undefined where it is not JSON. */
export function parsedJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
