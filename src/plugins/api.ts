import type { FastifyPluginAsync, onRouteHookHandler } from 'fastify';
import { routeNotFound } from '../http/error-handler.ts';
import { authenticationHook, authPlugin, type AuthOptions } from './auth.ts';
import { endpointAdminPlugin, type EndpointAdminOptions } from './endpoint-admin.ts';
import { endpointsPlugin, type EndpointsOptions } from './endpoints.ts';
import { rateLimitHook, rateLimitPlugin, type RateLimitOptions } from './rate-limit.ts';

/** Where the API scope is registered; /health, /ready, /metrics, /openapi.json and /docs live outside it. */
export const API_PREFIX = '/api/';

export interface ApiOptions {
  auth: AuthOptions;
  rateLimit: RateLimitOptions;
  endpoints: EndpointsOptions;
  admin: EndpointAdminOptions;
}

/**
 * The API routes in one encapsulated scope with the hooks only they need: an API key (or OPS_TOKEN on
 * the management routes), then the key's rate limit. Its own 404 handler answers an unknown path
 * under /api/ only after those hooks, so a caller without a valid key learns nothing of what exists.
 */
export const apiPlugin: FastifyPluginAsync<ApiOptions> = async (api, options) => {
  await api.register(authPlugin, options.auth);
  await api.register(rateLimitPlugin, options.rateLimit);
  api.setNotFoundHandler(routeNotFound);
  await api.register(endpointsPlugin, options.endpoints);
  // a saved query is checked by the same pipeline that will answer it
  await api.register(endpointAdminPlugin, options.admin);
};

/**
 * For the root instance, after the API scope: a route under /api/ declared outside the scope (a later
 * plugin, a test's probe route) gets the scope's hooks all the same, so no path under /api/ is ever
 * answered without a key.
 */
export function apiHooksOutsideScope(options: Pick<ApiOptions, 'auth' | 'rateLimit'>): onRouteHookHandler {
  const hooks = [authenticationHook(options.auth), rateLimitHook(options.rateLimit)];
  return (route) => {
    if (!route.url.startsWith(API_PREFIX)) return;
    const own = route.onRequest === undefined ? [] : [route.onRequest].flat();
    route.onRequest = [...hooks, ...own];
  };
}
