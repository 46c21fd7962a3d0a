import type { FastifyPluginAsync } from 'fastify';
import { REQUEST_ID_HEADER } from '../http/request-id.ts';

/**
 * Every answer carries the request's id (the caller's own `x-request-id` when sane, see
 * src/http/request-id.ts); fastify's request logger writes it as `reqId` on every line of the request.
 */
const requestId: FastifyPluginAsync = async (app) => {
  app.addHook('onRequest', async (request, reply) => {
    void reply.header(REQUEST_ID_HEADER, request.id);
  });
};

// the hook must apply to routes registered outside this plugin, as fastify-plugin would arrange
export const requestIdPlugin = Object.assign(requestId, { [Symbol.for('skip-override')]: true });
