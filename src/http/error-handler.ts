import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance } from 'fastify';
import {
  ApiError,
  Forbidden,
  NotFound,
  NotReady,
  QueryTimeout,
  RateLimited,
  RequestTooLarge,
  StoreUnavailable,
  Unauthorized,
} from '../errors.ts';

export interface ErrorBody {
  error: { code: string; message: string };
}

function body(code: string, message: string): ErrorBody {
  return { error: { code, message } };
}

/** The HTTP status of each domain error; everything else a caller did wrong is a 400. */
export function statusOf(error: ApiError): number {
  if (error instanceof Unauthorized) return 401;
  if (error instanceof Forbidden) return 403;
  if (error instanceof NotFound) return 404;
  if (error instanceof RequestTooLarge) return error.part === 'head' ? 414 : 413;
  if (error instanceof RateLimited) return 429;
  if (error instanceof StoreUnavailable || error instanceof NotReady) return 503;
  if (error instanceof QueryTimeout) return 504;
  return 400;
}

function headersOf(error: ApiError): Record<string, string> {
  return error instanceof RateLimited ? { 'retry-after': String(error.retryAfterSeconds) } : {};
}

/** The single place typed errors (and fastify's own) become the JSON error envelope. */
export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((thrown: FastifyError | Error, request, reply) => {
    const fastifyError = thrown as FastifyError;
    const error = fastifyError.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? new RequestTooLarge(fastifyError.message, 'body') : thrown;
    if (error instanceof ApiError) {
      void reply.code(statusOf(error)).headers(headersOf(error)).send(body(error.code, error.message));
      return;
    }
    if (fastifyError.validation) {
      void reply.code(400).send(body('bad_parameter', fastifyError.message));
      return;
    }
    if (fastifyError.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || fastifyError.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
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
    void reply.code(500).send(body('internal_error', 'internal error; the request id is in the x-request-id header and the service log'));
  });

  app.setNotFoundHandler((request, reply) => {
    void reply.code(404).send(body('route_not_found', `no route ${request.method} ${request.url.split('?')[0]}; endpoints are served at /api/endpoints/query/<uuid-or-name>`));
  });
}

/**
 * Errors Node's HTTP parser raises before fastify sees a request (an oversized request line or
 * headers, a malformed request), answered with the same envelope instead of fastify's default body.
 */
export function clientErrorHandler(maxHeadBytes: number): (error: Error & { code?: string }, socket: Socket) => void {
  return (error, socket) => {
    if (!socket.writable) return;
    const refusal =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? { status: 414, reason: 'URI Too Long', code: 'request_too_large', message: `the URL and headers exceed ${maxHeadBytes / 1024} KiB; send long sql in a POST body instead` }
        : { status: 400, reason: 'Bad Request', code: 'bad_request', message: 'the request could not be parsed as HTTP' };
    const payload = JSON.stringify(body(refusal.code, refusal.message));
    socket.end(
      `HTTP/1.1 ${refusal.status} ${refusal.reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(payload)}\r\nConnection: close\r\n\r\n${payload}`,
    );
  };
}
