import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from '../../shared/logger.ts';

/** Paths probes and scrapers call every few seconds: logged at debug, so the log shows the API's traffic. */
const OPERATIONAL_PATHS = new Set(['/health', '/ready', '/metrics']);

/**
 * fastify's per-request logging as one line per answered request instead of an "incoming" and a
 * "completed" line: method, path without the query string (it may carry long SQL), status, time.
 */
export class RequestLog extends LogController {
  /** `access` writes the line of an answered request (known fields only, so it may skip censoring); failures go to the request's own logger. */
  constructor(private readonly access: Logger) {
    super();
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const query = request.url.indexOf('?');
    const path = query === -1 ? request.url : request.url.slice(0, query);
    const status = reply.statusCode;
    const ms = Math.round(reply.elapsedTime);
    if (error) reply.log.error({ method: request.method, path, status, ms, err: error }, 'request failed');
    // the answered line built once, in the fields' order, without a spread per request
    else this.access[OPERATIONAL_PATHS.has(path) ? 'debug' : 'info']({ reqId: request.id, method: request.method, path, status, ms }, 'request answered');
  }
}
