import type { IncomingMessage } from 'node:http';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../auth/principal.ts';
import { answerEndpointQuery, type AnswerDependencies } from '../endpoints/answer.ts';
import type { EndpointCatalog } from '../endpoints/catalog.ts';
import { answerRowCount } from '../endpoints/answer-body.ts';
import { queryStats, STATS_HEADER, statsRequested, withStats } from '../endpoints/query-stats.ts';
import { mergedParameters, REDACT_HEADERS } from '../endpoints/request.ts';
import { StoreReads } from '../executor/store-reads.ts';
import { BadParameter, NotFound, RequestTooLarge, Unauthorized } from '../errors.ts';
import { parametersObject, parseJsonBody } from '../http/json-body.ts';
import { errorResponses, INTERNAL_ERROR } from '../http/route-schemas.ts';
import { ServerTiming } from '../http/server-timing.ts';
import { answerExport, type ExportDependencies } from '../export/answer-export.ts';
import { exportRequest } from '../export/export-request.ts';

export type EndpointsOptions = AnswerDependencies & {
  /** The most bytes a request body may have (GET bodies are read here, as fastify parses only POST's). */
  bodyLimit: number;
  /** The saved endpoints this replica serves. */
  catalog: EndpointCatalog;
  /** NDJSON and CSV exports (format=ndjson|csv): the per-key row budget and the cursor signer. */
  exporting: ExportDependencies;
};

declare module 'fastify' {
  interface FastifyRequest {
    /** The phases of a query route's request (Server-Timing); undefined until its handler or its error handler asks. */
    serverTiming: ServerTiming | undefined;
  }
}

interface EndpointRoute {
  Params: { endpoint: string };
}

// true or false in any letter case: the handler checks the values and names what was wrong
const STATS_DESCRIPTION = '`true` adds a `stats` object beside `result`: what this request read and where it ran.';
const REDACT_DESCRIPTION = '`true` replaces every IPv4 and IPv6 address in the result with REDACTED, for this request only.';

/**
 * The fixed part of the query route: the path, the headers and the failures. The query string and
 * body are each endpoint's own (src/openapi/document.ts documents them per endpoint); the answer is
 * sent as bytes built (and cached) beforehand, so no 200 schema re-serializes it.
 */
const QUERY_SCHEMA = {
  tags: ['endpoints'],
  params: {
    type: 'object',
    properties: { endpoint: { type: 'string', description: "The saved endpoint's name or UUID" } },
  },
  headers: {
    type: 'object',
    properties: {
      [REDACT_HEADERS[0]]: { type: 'string', description: REDACT_DESCRIPTION },
      [REDACT_HEADERS[1]]: {
        type: 'string',
        description: `Alias of ${REDACT_HEADERS[0]}, as the reference implementation names it; sent beside it, both must agree.`,
      },
      [STATS_HEADER]: { type: 'string', description: `${STATS_DESCRIPTION} The same as the stats parameter; sent beside it, both must agree.` },
    },
  },
  response: errorResponses({
    400: 'Bad parameter or query; the message names what was wrong',
    401: 'Missing, unknown or revoked API key',
    403: 'The key may not query this endpoint or project',
    404: 'Unknown endpoint',
    413: 'Request body too large',
    414: 'URL too long',
    429: 'The API key spent its rate limit, its export budget or its share of the query engine; the Retry-After header says how many seconds to wait',
    500: INTERNAL_ERROR,
    503: 'Elasticsearch unavailable, or the query engine busy (then with a Retry-After header)',
    504: 'Query exceeded the time limit',
  }),
};

/** GET and POST /api/endpoints/query/:endpoint, by UUID or name (docs/design/SPEC.md 4), for every endpoint in the store. */
export const endpointsPlugin: FastifyPluginAsync<EndpointsOptions> = async (app, options) => {
  // each request's phases, written into its answer's (or its error's) Server-Timing header; a decoration, not a map looked up per request
  app.decorateRequest('serverTiming', undefined);
  const timingOf = (request: FastifyRequest) => {
    if (request.serverTiming === undefined) {
      request.serverTiming = new ServerTiming();
      if (request.authMs !== undefined) request.serverTiming.add('auth', request.authMs);
    }
    return request.serverTiming;
  };
  const sendTiming = (request: FastifyRequest, reply: FastifyReply) => {
    const header = timingOf(request).header();
    if (header !== undefined) void reply.header('server-timing', header);
  };

  async function handle(request: FastifyRequest<EndpointRoute>, reply: FastifyReply) {
    const principal = request.principal as Principal | null | undefined;
    // fail closed should the auth hook ever be missing
    if (!principal) throw new Unauthorized('missing API key: send it in the X-API-KEY header or as Authorization: Bearer <key>');
    const entry = await options.catalog.find(request.params.endpoint);
    // a disabled endpoint is not served, as if it did not exist; the name is not echoed: it is the caller's raw input
    if (!entry?.record.enabled)
      throw new NotFound('no endpoint with this name or UUID; ask an operator for the names (GET /api/endpoints)', 'endpoint_not_found');
    const endpoint = entry.definition;
    const body = parametersObject(request.method === 'GET' ? await getBody(request, options.bodyLimit) : request.body);
    const redactHeaders = Object.fromEntries(REDACT_HEADERS.map((name) => [name, request.headers[name.toLowerCase()]]));
    const timing = timingOf(request);
    const supplied = mergedParameters(request.query, body);
    const statsAsked = statsRequested(supplied, request.headers[STATS_HEADER.toLowerCase()]);
    const asked = exportRequest(supplied);
    if (asked) {
      if (statsAsked) throw new BadParameter("statistics come in the JSON answer's stats object: ask for them without format=ndjson or csv");
      const counted = (rows: number, streamedBytes?: number) => {
        request.answeredRows = rows;
        request.answeredBytes = streamedBytes;
      };
      const exported = await answerExport({ endpoint, principal, supplied, redactHeaders, timing }, asked, options, options.exporting, counted);
      sendTiming(request, reply);
      return reply.headers(exported.headers).send(exported.body);
    }
    const reads = statsAsked ? new StoreReads() : undefined;
    const answer = await answerEndpointQuery({ endpoint, principal, supplied, redactHeaders, timing, reads }, options);
    const rows = answerRowCount(answer.body) ?? 0;
    request.answeredRows = rows;
    // statistics are this request's own: built beside the (perhaps cached) answer, never into it
    const stats =
      reads && queryStats({ elapsedMs: reply.elapsedTime, rows, cache: answer.cache, ageSeconds: answer.ageSeconds, reads, indexPrefix: options.indexPrefix });
    const sent = stats ? withStats(answer.body, stats) : answer.body;
    sendTiming(request, reply);
    return reply.header('x-cache', answer.cache).header('age', String(answer.ageSeconds)).header('content-type', 'application/json; charset=utf-8').send(sent);
  }

  // an answer sets its header as it is sent; an error (here, in a hook or the parser) gets it here: no hook runs on an answer
  const onError = (request: FastifyRequest, reply: FastifyReply, _error: Error, done: () => void) => {
    sendTiming(request, reply);
    done();
  };
  const route = { onError, config: { endpointQuery: true }, schema: QUERY_SCHEMA };
  app.get<EndpointRoute>('/endpoints/query/:endpoint', route, handle);
  app.post<EndpointRoute>('/endpoints/query/:endpoint', route, handle);
};

/**
 * Some clients send the parameters (long `sql` among them) as a JSON body on GET, which fastify
 * does not parse; read it here with the same bound as a POST body. No body: undefined.
 */
async function getBody(request: FastifyRequest, limit: number): Promise<unknown> {
  const raw: IncomingMessage = request.raw;
  const declared = Number(raw.headers['content-length'] ?? 0);
  if (!(declared > 0) && raw.headers['transfer-encoding'] === undefined) return undefined;
  if (declared > limit) throw new RequestTooLarge(`the request body is ${declared} bytes, more than ${limit}`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of raw) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new RequestTooLarge(`the request body is more than ${limit} bytes`);
    chunks.push(chunk as Buffer);
  }
  if (size === 0) return undefined;
  if (!/^application\/json\b/i.test(raw.headers['content-type'] ?? '')) {
    throw new BadParameter('a GET body must be JSON (content-type: application/json) holding the parameters', 'bad_request');
  }
  return parseJsonBody(Buffer.concat(chunks).toString('utf8'));
}
