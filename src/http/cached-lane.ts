import { createServer, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { FastifyServerFactory } from 'fastify';
import type { Logger } from '../../shared/logger.ts';
import type { Authenticator } from '../auth/authenticator.ts';
import type { Principal } from '../auth/principal.ts';
import type { TokenBuckets } from '../auth/token-bucket.ts';
import type { ResultCache } from '../cache/result-cache.ts';
import { answerRowCount } from '../endpoints/answer-body.ts';
import type { CatalogEntry, EndpointCatalog } from '../endpoints/catalog.ts';
import { STATS_HEADER, statsRequested } from '../endpoints/query-stats.ts';
import {
  assertEndpointAllowed,
  cacheKey,
  mergedParameters,
  REDACT_HEADERS,
  redactionRequested,
  sandboxRequest,
  validateParameters,
} from '../endpoints/request.ts';
import { exportRequest } from '../export/export-request.ts';
import type { AnsweredCounts, RequestCounts } from '../plugins/metrics.ts';
import { plainQuery } from './lane-query.ts';
import { AnsweredLine } from './request-log.ts';
import { REQUEST_ID_HEADER, requestIdOf } from './request-id.ts';
import { timingEntry } from './server-timing.ts';

const QUERY_PATH = '/api/endpoints/query/';
/** A path segment the router passes on as it is (no escapes, no further segment), no longer than its maxParamLength. */
const PLAIN_SEGMENT = /^[A-Za-z0-9._~-]{1,512}$/;
const STATS_HEADER_NAME = STATS_HEADER.toLowerCase();
const REDACT_HEADER_NAMES = REDACT_HEADERS.map((name) => name.toLowerCase());
/** Proofs remembered, and the longest URL remembered: a bound on what callers' URLs can hold in memory (about 2 MB of text). */
const MAX_PROOFS = 1000;
const MAX_PROVEN_URL = 2048;

export interface CachedLaneOptions {
  catalog: EndpointCatalog;
  resultCache: ResultCache;
  authenticator: Authenticator;
  /** The auth hook's failed-authentication buckets: an address refused there is left to it. */
  authFailures: TokenBuckets;
  /** The rate-limit hook's buckets: a hit spends the same token the full path would. */
  rateLimits: TokenBuckets;
  counts: RequestCounts;
  /** Where fastify's RequestLog writes the answered line. */
  accessLogger: Logger;
}

/**
 * What a URL proved for one principal, sent without redaction or stats headers: everything but the
 * key's freshness, the buckets and the cache, which are checked on every request. It holds while the
 * catalog serves the same entry (a changed endpoint is a new entry) and the same principal asks (a
 * remembered key's principal is one object).
 */
interface Proof {
  segment: string;
  entry: CatalogEntry;
  principal: Principal;
  key: string;
  /** The access line's path: the URL without its query string. */
  path: string;
  /** The series its hits move, found on its first hit. */
  counts?: AnsweredCounts;
}

/**
 * Answers the cache hits of the query route before fastify sees the request, and hands every other
 * request to fastify untouched. A hit is answered only when every check the full path makes can be
 * made here without waiting and passes: GET without a body, a plain path and query string, a key
 * verified lately (or the bootstrap key) from an address not blocked for failed attempts, an enabled
 * endpoint in the key's scope, valid parameters without stats or an export, a token in the key's
 * rate-limit bucket, and a live cached answer. It then does what the full path does for that
 * request: the same status, headers and bytes, the token spent, the cache hit, the request and usage
 * series, and the access line. Anything it does not prove goes through fastify, which decides it.
 */
export class CachedLane {
  private closing = false;
  private readonly proofs = new Map<string, Proof>();
  private readonly answeredLine: AnsweredLine;

  constructor(private readonly options: CachedLaneOptions) {
    this.answeredLine = new AnsweredLine(options.accessLogger);
  }

  /** From fastify's preClose: fastify then answers 503 to new requests, so the lane stops answering. */
  close(): void {
    this.closing = true;
    this.answeredLine.flush();
  }

  /** Whether the lane answered the request; false: nothing was sent or counted, and fastify must handle it. */
  answer(request: IncomingMessage, response: ServerResponse): boolean {
    const started = performance.now();
    if (this.closing || request.method !== 'GET') return false;
    const url = request.url ?? '';
    if (!url.startsWith(QUERY_PATH) || url.includes('#')) return false;
    const { headers } = request;
    const declared = headers['content-length'];
    if ((declared !== undefined && declared !== '0') || headers['transfer-encoding'] !== undefined) return false;
    const { options } = this;
    if (options.authFailures.peek(request.socket.remoteAddress ?? '').kind === 'limited') return false;
    const authStarted = performance.now();
    const principal = options.authenticator.acceptedNow(headers);
    const authMs = performance.now() - authStarted;
    if (principal === undefined) return false;
    const proof = this.proofOf(url, headers, principal);
    if (proof === undefined || options.rateLimits.peek(principal.keyId).kind === 'limited') return false;
    const cacheStarted = performance.now();
    const cached = options.resultCache.lookUp(proof.key);
    const cacheMs = performance.now() - cacheStarted;
    // expired since the checks: the full path looks again, misses and runs the query
    if (cached === undefined) return false;
    const decision = options.rateLimits.take(principal.keyId);
    const body = cached.body;
    const reqId = requestIdOf(request);
    // in the order the full path sets them: request id hook, rate-limit hook, then the route
    const sent: OutgoingHttpHeaders = { [REQUEST_ID_HEADER]: reqId };
    if (decision.kind !== 'unlimited') sent['x-ratelimit-limit'] = String(decision.limit);
    if (decision.kind === 'allowed') sent['x-ratelimit-remaining'] = String(decision.remaining);
    sent['server-timing'] = `${timingEntry('auth', Math.max(0, authMs))}, ${timingEntry('cache', Math.max(0, cacheMs))}`;
    sent['x-cache'] = 'HIT';
    sent.age = String(cached.ageSeconds);
    sent['content-type'] = 'application/json; charset=utf-8';
    sent['content-length'] = String(body.length);
    response.writeHead(200, sent);
    response.end(body);
    const elapsedMs = performance.now() - started;
    proof.counts ??= options.counts.answered(proof.entry.record.name, principal.keyId);
    proof.counts.count(elapsedMs / 1000, answerRowCount(body) ?? 0, body.length);
    this.answeredLine.write(reqId, 'GET', proof.path, 200, Math.round(elapsedMs));
    return true;
  }

  /** The proof of a request whose key is accepted, remembered or made anew; undefined: the full path decides. Nothing is spent or counted. */
  private proofOf(url: string, headers: IncomingHttpHeaders, principal: Principal): Proof | undefined {
    const plain = headers[STATS_HEADER_NAME] === undefined && headers[REDACT_HEADER_NAMES[0]!] === undefined && headers[REDACT_HEADER_NAMES[1]!] === undefined;
    const remembered = plain ? this.proofs.get(url) : undefined;
    if (remembered !== undefined && remembered.principal === principal && this.options.catalog.known(remembered.segment) === remembered.entry)
      return remembered;
    const proof = this.proved(url, headers, principal);
    if (proof === undefined || !plain || url.length > MAX_PROVEN_URL) return proof;
    if (this.proofs.size >= MAX_PROOFS && !this.proofs.has(url)) this.proofs.clear();
    this.proofs.set(url, proof);
    return proof;
  }

  /** Every check of the full path that is not about time: path, parameters, endpoint, scope, redaction; then the cache key. */
  private proved(url: string, headers: IncomingHttpHeaders, principal: Principal): Proof | undefined {
    const query = url.indexOf('?');
    const segment = url.slice(QUERY_PATH.length, query === -1 ? url.length : query);
    if (!PLAIN_SEGMENT.test(segment)) return undefined;
    const parameters = plainQuery(query === -1 ? '' : url.slice(query + 1));
    if (parameters === undefined) return undefined;
    const entry = this.options.catalog.known(segment);
    if (!entry?.record.enabled) return undefined;
    const endpoint = entry.definition;
    if (endpoint.cache === null) return undefined;
    try {
      assertEndpointAllowed(principal, endpoint);
      const supplied = mergedParameters(parameters, undefined);
      if (statsRequested(supplied, headers[STATS_HEADER_NAME]) || exportRequest(supplied)) return undefined;
      const redact = redactionRequested(
        { [REDACT_HEADERS[0]]: headers[REDACT_HEADER_NAMES[0]!], [REDACT_HEADERS[1]]: headers[REDACT_HEADER_NAMES[1]!] },
        endpoint,
      );
      const callerQuery = endpoint.sandboxable ? sandboxRequest(supplied) : undefined;
      const key = cacheKey(endpoint, validateParameters(endpoint, supplied), redact, principal, callerQuery);
      return { segment, entry, principal, key, path: url.slice(0, QUERY_PATH.length + segment.length) };
    } catch {
      // a refusal is the full path's to word, count and log
      return undefined;
    }
  }
}

/**
 * fastify's serverFactory: the HTTP server fastify would make (its options applied as fastify applies
 * them), whose requests meet the lane first. `lane` is read per request: the server is made before
 * the catalog and the cache the lane needs.
 */
export function serverWithLane(lane: () => CachedLane | undefined): FastifyServerFactory {
  return (handler, options) => {
    const server: Server = createServer(options.http ?? {}, (request, response) => {
      if (lane()?.answer(request, response) !== true) handler(request, response);
    });
    server.keepAliveTimeout = options.keepAliveTimeout as number;
    server.requestTimeout = options.requestTimeout as number;
    server.setTimeout(options.connectionTimeout as number);
    if ((options.maxRequestsPerSocket as number) > 0) server.maxRequestsPerSocket = options.maxRequestsPerSocket as number;
    return server;
  };
}
