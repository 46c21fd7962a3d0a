import type { FastifyError, FastifyInstance } from 'fastify';
import { ApiError } from '../errors.ts';

export interface ErrorBody {
  error: { code: string; message: string };
}

function body(code: string, message: string): ErrorBody {
  return { error: { code, message } };
}

/** The single place typed errors (and fastify's own) become the JSON error envelope. */
export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | Error, request, reply) => {
    if (error instanceof ApiError) {
      void reply.code(error.status).headers(error.headers).send(body(error.code, error.message));
      return;
    }
    const fastifyError = error as FastifyError;
    if (fastifyError.validation) {
      void reply.code(400).send(body('bad_parameter', fastifyError.message));
      return;
    }
    if (fastifyError.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      void reply.code(413).send(body('request_too_large', fastifyError.message));
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
