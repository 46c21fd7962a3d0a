import { SERVER_SECRET_LOG_PATHS, type Logger } from '../../shared/logger.ts';

/** Where a key could surface in a log line if a header object were ever logged. */
export const SECRET_LOG_PATHS = ['req.headers["x-api-key"]', 'req.headers.authorization', 'headers["x-api-key"]', 'headers.authorization'];

/**
 * The service logger with API keys censored. Fastify's request serializer already leaves headers
 * out; this holds if someone logs a request or its headers anyway. A child's redaction replaces its
 * parent's, so the server credentials are named again.
 */
export function withoutSecrets(logger: Logger): Logger {
  return logger.child({}, { redact: { paths: [...SERVER_SECRET_LOG_PATHS, ...SECRET_LOG_PATHS], censor: '[redacted]' } });
}
