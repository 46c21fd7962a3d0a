import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '../../shared/logger.ts';
import { ApiError, RateLimited, RequestTooLarge, StoreUnavailable, type ErrorCode } from '../errors.ts';
import { drainRefusedBody } from './refused-body.ts';
import { REQUEST_ID_HEADER } from './request-id.ts';
import { ERROR_SCHEMA } from './route-schemas.ts';

export interface ErrorBody {
  error: { code: ErrorCode; message: string };
}

/**
 * The HTTP statuses each code is answered with, the usual one first (docs/errors.md is generated from
 * this): request_too_large is 414 for the request line and headers, bad_request 415 for another content type.
 */
export const HTTP_STATUSES = {
  bad_parameter: [400],
  invalid_pattern: [400],
  unsupported_pattern: [400],
  pattern_too_complex: [400],
  sql_syntax: [400],
  sandbox_violation: [400],
  unknown_table: [400],
  invalid_query: [400],
  unknown_field: [400],
  query_too_broad: [400],
  query_too_expensive: [400],
  lql_syntax: [400],
  invalid_cursor: [400],
  invalid_endpoint: [400],
  bad_request: [400, 415],
  unauthorized: [401],
  forbidden: [403],
  endpoint_not_found: [404],
  version_not_found: [404],
  route_not_found: [404],
  request_timeout: [408],
  name_taken: [409],
  endpoint_changed: [409],
  too_many_endpoints: [409],
  request_too_large: [413, 414],
  rate_limited: [429],
  internal_error: [500],
  store_unavailable: [503],
  not_ready: [503],
  query_timeout: [504],
} as const satisfies Record<ErrorCode, readonly [number, ...number[]]>;

function body(code: ErrorCode, message: string): ErrorBody {
  return { error: { code, message } };
}

/** The HTTP status of a domain error, by its code. */
export function statusOf(error: ApiError): number {
  if (error instanceof RequestTooLarge) return error.part === 'head' ? 414 : 413;
  return HTTP_STATUSES[error.code][0];
}

function headersOf(error: ApiError): Record<string, string> {
  const retryAfterSeconds = error instanceof RateLimited || error instanceof StoreUnavailable ? error.retryAfterSeconds : undefined;
  return retryAfterSeconds === undefined ? {} : { 'retry-after': String(retryAfterSeconds) };
}

/** The single place typed errors (and fastify's own) become the JSON error envelope. */
export function installErrorHandler(app: FastifyInstance): void {
  // the routes' response schemas answer failures in this envelope
  app.addSchema(ERROR_SCHEMA);
  app.setErrorHandler((thrown: FastifyError | Error, request, reply) => {
    void reply.header(REQUEST_ID_HEADER, request.id);
    const fastifyError = thrown as FastifyError;
    if (fastifyError.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      const error = new RequestTooLarge(fastifyError.message, 'body');
      // the client reads the 413 only once it has sent its body: what is left of it is read first
      return drainRefusedBody(request.raw).then(() => {
        void reply.code(statusOf(error)).send(body(error.code, error.message));
      });
    }
    const error = thrown;
    if (error instanceof ApiError) {
      void reply.code(statusOf(error)).headers(headersOf(error)).send(body(error.code, error.message));
      return;
    }
    if (fastifyError.validation) {
      void reply.code(400).send(body('bad_parameter', fastifyError.message));
      return;
    }
    if (fastifyError.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      void reply
        .code(415)
        .send(body('bad_request', 'unsupported content type: send the parameters as a JSON object (content-type: application/json) or in the query string'));
      return;
    }
    if (fastifyError.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
      void reply.code(fastifyError.statusCode ?? 400).send(body('bad_request', fastifyError.message));
      return;
    }
    // only fastify's own errors carry a status we trust; a library error's status is not the caller's fault
    const fromFastify = typeof fastifyError.code === 'string' && fastifyError.code.startsWith('FST_');
    if (fromFastify && fastifyError.statusCode !== undefined && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
      void reply.code(fastifyError.statusCode).send(body('bad_request', fastifyError.message));
      return;
    }
    request.log.error({ err: error }, 'unhandled error');
    void reply
      .code(500)
      .send(body('internal_error', `internal error; the service log has the details under request id ${request.id} (also in the x-request-id header)`));
  });

  app.setNotFoundHandler(routeNotFound);
}

/** The answer to a path no route matches; also the API scope's own, which answers only after its hooks. */
export function routeNotFound(request: FastifyRequest, reply: FastifyReply): void {
  // the path is not echoed: it is the caller's raw input
  void reply
    .code(404)
    .send(body('route_not_found', `no route for ${request.method} at this path; endpoints are served at GET or POST /api/endpoints/query/<uuid-or-name>`));
}

/**
 * Errors fastify's router raises before any route or hook runs (a malformed percent-escape in the
 * path, a path segment over the router's limit), in the envelope and without echoing the URL.
 */
export function frameworkErrorHandler(maxParamLength: number): (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => void {
  return (error, request, reply) => {
    void reply.header(REQUEST_ID_HEADER, request.id);
    if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
      void reply
        .code(414)
        .send(body('request_too_large', `a path segment is longer than ${maxParamLength} characters; endpoint names and UUIDs are far shorter`));
      return;
    }
    if (error.code === 'FST_ERR_BAD_URL') {
      void reply.code(400).send(body('bad_request', 'the URL path holds an invalid percent-escape (% must be followed by two hex digits of valid UTF-8)'));
      return;
    }
    request.log.error({ err: error }, 'router error');
    void reply
      .code(500)
      .send(body('internal_error', `internal error; the service log has the details under request id ${request.id} (also in the x-request-id header)`));
  };
}

/**
 * Errors Node's HTTP server raises before fastify sees a request (an oversized request line or
 * headers, a malformed request, headers or body not received within their timeouts), answered with
 * the same envelope and a request id of their own instead of fastify's default body.
 */
export function clientErrorHandler(
  limits: { maxHeadBytes: number; headersTimeoutMs: number; requestTimeoutMs: number },
  logger: Logger,
): (error: Error & { code?: string; rawPacket?: unknown }, socket: Socket) => void {
  return (error, socket) => {
    const requestId = randomUUID();
    logger.info({ reqId: requestId, code: error.code, remoteAddress: socket.remoteAddress }, 'client error before routing');
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const refusal: { status: number; reason: string; code: ErrorCode; message: string } =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? {
            status: 414,
            reason: 'URI Too Long',
            code: 'request_too_large',
            message: `the URL and headers exceed ${limits.maxHeadBytes / 1024} KiB; send long sql in a POST body instead`,
          }
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? {
              status: 408,
              reason: 'Request Timeout',
              code: 'request_timeout',
              message: `the request was not received in time: headers within ${limits.headersTimeoutMs} ms, the whole request within ${limits.requestTimeoutMs} ms`,
            }
          : { status: 400, reason: 'Bad Request', code: 'bad_request', message: 'the request could not be parsed as HTTP' };
    // the answer to a HEAD request must carry no body, or the client cannot parse it
    const head = Buffer.isBuffer(error.rawPacket) && error.rawPacket.subarray(0, 5).toString('latin1') === 'HEAD ';
    const payload = head ? '' : JSON.stringify(body(refusal.code, refusal.message));
    socket.end(
      `HTTP/1.1 ${refusal.status} ${refusal.reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n${REQUEST_ID_HEADER}: ${requestId}\r\nConnection: close\r\n\r\n${payload}`,
    );
  };
}
