import type { FastifyInstance, FastifyPluginAsync, onRouteHookHandler } from 'fastify';
import { routeNotFound } from '../http/error-handler.ts';
import { authPlugin, type AuthOptions } from './auth.ts';
import { endpointAdminPlugin, type EndpointAdminOptions } from './endpoint-admin.ts';
import { endpointsPlugin, type EndpointsOptions } from './endpoints.ts';
import { rateLimitPlugin, type RateLimitOptions } from './rate-limit.ts';

/** Where the API scope is registered; /health, /ready, /metrics, /openapi.json and /docs live outside it. */
export const API_PREFIX = '/api/';

export interface ApiOptions {
  auth: AuthOptions;
  rateLimit: RateLimitOptions;
  endpoints: EndpointsOptions;
  admin: EndpointAdminOptions;
  /** More routes for the scope, behind its key and rate limit (a test's probe route). */
  routes?: FastifyPluginAsync;
}

/** Decorates the API scope's instance, and so the instances of the plugins in it: the root's guard tells their routes apart by it. */
const IN_API_SCOPE = 'inApiScope';

/**
 * The API routes in one encapsulated scope with the hooks only they need: an API key (or OPS_TOKEN on
 * the management routes), then the key's rate limit. Its own 404 handler answers an unknown path
 * under /api/ only after those hooks, so a caller without a valid key learns nothing of what exists.
 */
export const apiPlugin: FastifyPluginAsync<ApiOptions> = async (api, options) => {
  api.decorate(IN_API_SCOPE, true);
  await api.register(authPlugin, options.auth);
  await api.register(rateLimitPlugin, options.rateLimit);
  api.setNotFoundHandler(routeNotFound);
  await api.register(endpointsPlugin, options.endpoints);
  // a saved query is checked by the same pipeline that will answer it
  await api.register(endpointAdminPlugin, options.admin);
  if (options.routes) await api.register(options.routes);
};

/**
 * For the root instance, before any route: a route under /api/ declared outside the API scope (a
 * later plugin, a test's probe route) would be answered without a key, so declaring one fails.
 */
export function refuseApiRoutesOutsideScope(): onRouteHookHandler {
  return function refuseOutsideScope(this: FastifyInstance, route) {
    if (!route.url.startsWith(API_PREFIX) || this.hasDecorator(IN_API_SCOPE)) return;
    throw new Error(`${String(route.method)} ${route.url} is under ${API_PREFIX} but outside the API scope, where no key is asked: declare it in the scope`);
  };
}
