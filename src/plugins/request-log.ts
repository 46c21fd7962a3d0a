import type { FastifyPluginAsync } from 'fastify';

/** Paths probes and scrapers call every few seconds: logged at debug, so the log shows the API's traffic. */
const OPERATIONAL_PATHS = new Set(['/health', '/ready', '/metrics']);

/**
 * One log line per answered request (fastify's own pair of lines is turned off): method, path without
 * the query string (it may carry long SQL), status and time.
 */
const requestLog: FastifyPluginAsync = async (app) => {
  app.addHook('onResponse', async (request, reply) => {
    const path = request.url.split('?', 1)[0]!;
    const level = OPERATIONAL_PATHS.has(path) ? 'debug' : 'info';
    request.log[level]({ method: request.method, path, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request answered');
  });
};

// the hook must see routes registered outside this plugin, as fastify-plugin would arrange
export const requestLogPlugin = Object.assign(requestLog, { [Symbol.for('skip-override')]: true });
