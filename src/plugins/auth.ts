import type { FastifyPluginAsync } from 'fastify';
import type { Authenticator } from '../auth/authenticator.ts';
import type { Principal } from '../auth/principal.ts';

export interface AuthOptions {
  authenticator: Authenticator;
}

/** Routes under this prefix need an API key; /health, /ready, /metrics and the docs do not. */
const PROTECTED_PREFIX = '/api/';

/**
 * Authenticates every request under /api/ (matched routes and 404s alike, so an unknown endpoint is
 * only revealed to a valid key) and sets request.principal. Scope and project checks belong to the
 * endpoint route, which knows the endpoint.
 */
const auth: FastifyPluginAsync<AuthOptions> = async (app, options) => {
  app.decorateRequest('principal', null as unknown as Principal);
  app.addHook('onRequest', async (request) => {
    if (!request.url.startsWith(PROTECTED_PREFIX)) return;
    request.principal = await options.authenticator.authenticate(request.headers);
  });
};

// the hook must apply to routes registered outside this plugin, as fastify-plugin would arrange
export const authPlugin = Object.assign(auth, { [Symbol.for('skip-override')]: true });
