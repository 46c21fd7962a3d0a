import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Principal } from '../auth/principal.ts';
import type { EndpointManagement } from '../endpoints/management.ts';
import { BadParameter, Forbidden, Unauthorized } from '../errors.ts';

export interface EndpointAdminOptions {
  management: EndpointManagement;
}

interface EndpointRoute {
  Params: { endpoint: string };
}

interface VersionRoute {
  Params: { endpoint: string; version: string };
}

/** Only an operator manages endpoints: a query key, whatever it may query, is refused. */
function assertOperator(request: FastifyRequest): void {
  const principal = request.principal as Principal | null | undefined;
  // fail closed should the auth hook ever be missing
  if (!principal) throw new Unauthorized('missing credential: send an admin API key, or Authorization: Bearer <OPS_TOKEN>');
  if (principal.admin !== true) {
    throw new Forbidden(
      'managing endpoints needs an operator credential: an API key created with npm run keys -- create --admin, or Authorization: Bearer <OPS_TOKEN>',
    );
  }
}

function versionNumber(text: string): number {
  if (!/^[1-9]\d{0,8}$/.test(text)) {
    throw new BadParameter(`a version is a whole number from 1 (see GET /api/endpoints/<id>/versions); got ${JSON.stringify(text.slice(0, 20))}`);
  }
  return Number(text);
}

/**
 * The endpoint management API (issue 22): create, list, read, replace, change, delete, and each
 * endpoint's versions with restore. Every route needs an operator credential.
 */
export const endpointAdminPlugin: FastifyPluginAsync<EndpointAdminOptions> = async (app, options) => {
  const { management } = options;
  app.addHook('onRoute', (route) => {
    route.config = { ...route.config, operatorTokenAccepted: true };
  });
  app.addHook('onRequest', async (request) => assertOperator(request));

  app.get('/endpoints', async () => ({ endpoints: await management.list() }));
  app.post('/endpoints', async (request, reply) => reply.code(201).send({ endpoint: await management.create(request.body) }));
  app.get<EndpointRoute>('/endpoints/:endpoint', async (request) => ({ endpoint: await management.get(request.params.endpoint) }));
  app.put<EndpointRoute>('/endpoints/:endpoint', async (request) => ({ endpoint: await management.replace(request.params.endpoint, request.body) }));
  app.patch<EndpointRoute>('/endpoints/:endpoint', async (request) => ({ endpoint: await management.patch(request.params.endpoint, request.body) }));
  app.delete<EndpointRoute>('/endpoints/:endpoint', async (request) => ({ endpoint: await management.remove(request.params.endpoint) }));
  app.get<EndpointRoute>('/endpoints/:endpoint/versions', async (request) => ({ versions: await management.versions(request.params.endpoint) }));
  app.post<VersionRoute>('/endpoints/:endpoint/versions/:version/restore', async (request) => ({
    endpoint: await management.restore(request.params.endpoint, versionNumber(request.params.version)),
  }));
};
