import type { FastifyPluginAsync, onRequestHookHandler } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import { REQUEST_ID_HEADER } from '../http/request-id.ts';

/**
 * Every answer carries the request's id (the caller's own `x-request-id` when sane, see
 * src/http/request-id.ts); fastify's request logger writes it as `reqId` on every line of the request.
 */
const requestId: FastifyPluginAsync = async (app) => {
  // a callback hook: an async one costs a promise on every request
  const sendRequestId: onRequestHookHandler = (request, reply, done) => {
    void reply.header(REQUEST_ID_HEADER, request.id);
    done();
  };
  app.addHook('onRequest', sendRequestId);
};

// not encapsulated: the hook applies to every route registered beside this plugin
export const requestIdPlugin = fastifyPlugin(requestId, { name: 'request-id', fastify: '5.x' });
