import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Authenticator } from '../auth/authenticator.ts';
import type { Principal } from '../auth/principal.ts';

export interface AuthOptions {
  authenticator: Authenticator;
}

/** Routes under this prefix need an API key; /health, /ready, /metrics and the docs do not. */
const PROTECTED_PREFIX = '/api/';

/**
 * Judged on the matched route pattern as well as the URL: the router matches percent-encoded paths
 * (`/%61pi/...` reaches `/api/...`), so the raw URL alone would let such a request through.
 */
export function needsKey(request: FastifyRequest): boolean {
  if (request.routeOptions.url?.startsWith(PROTECTED_PREFIX)) return true;
  const path = request.url.split('?')[0]!;
  let decoded = path;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    // a malformed escape: judge the raw path
  }
  return path.startsWith(PROTECTED_PREFIX) || decoded.startsWith(PROTECTED_PREFIX);
}

/**
 * Authenticates every request under /api/ (matched routes and 404s alike, so an unknown endpoint is
 * only revealed to a valid key) and sets request.principal. Scope and project checks belong to the
 * endpoint route, which knows the endpoint.
 */
const auth: FastifyPluginAsync<AuthOptions> = async (app, options) => {
  app.decorateRequest('principal', null as unknown as Principal);
  app.addHook('onRequest', async (request) => {
    if (!needsKey(request)) return;
    request.principal = await options.authenticator.authenticate(request.headers);
  });
};

// the hook must apply to routes registered outside this plugin, as fastify-plugin would arrange
export const authPlugin = Object.assign(auth, { [Symbol.for('skip-override')]: true });
