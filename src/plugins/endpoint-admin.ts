import type { FastifyPluginAsync, FastifyRequest, FastifySchemaCompiler } from 'fastify';
import type { Principal } from '../auth/principal.ts';
import { parsedInput, patchFields, type EndpointManagement } from '../endpoints/management.ts';
import { BadParameter, Forbidden, Unauthorized } from '../errors.ts';
import { ENDPOINT_INPUT_SCHEMA, ENDPOINT_PATCH_SCHEMA, ENDPOINT_RECORD_SCHEMA, ENDPOINT_VERSION_SCHEMA } from '../http/endpoint-schemas.ts';
import { errorResponses, INTERNAL_ERROR } from '../http/route-schemas.ts';

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

const ENDPOINT_PARAMS = {
  type: 'object',
  properties: { endpoint: { type: 'string', description: "The endpoint's name or UUID" } },
};

const FAILURES = {
  401: 'Missing credential: an admin API key, or Authorization: Bearer <OPS_TOKEN>',
  403: 'The key is not an admin key',
  429: 'The key spent its rate limit',
  500: INTERNAL_ERROR,
  503: 'Elasticsearch unavailable',
};

const NOT_FOUND = { 404: 'No endpoint with this name or UUID' };

const CHANGE_FAILURES = {
  400: 'The endpoint is invalid (invalid_endpoint names the field) or its SQL does not pass the sandbox checks',
  409: 'The name is taken, another save raced this one, or the store is full',
  413: 'Request body too large',
};

/** `{"endpoint": record}`: the management routes' answer about one endpoint. */
function endpointAnswer(status: 200 | 201, description: string, failures: Record<number, string>) {
  return {
    [status]: { description, type: 'object', required: ['endpoint'], properties: { endpoint: ENDPOINT_RECORD_SCHEMA } },
    ...errorResponses({ ...FAILURES, ...failures }),
  };
}

/**
 * A body is checked by the management's own check (the endpoint's zod schema with its refinements
 * and messages, the invalid_endpoint code); the JSON Schema beside it documents it. No body at all
 * (fastify passes null) is left to the handler, which says to send one. Path segments are strings.
 */
function bodyValidator(check: (body: unknown) => unknown): FastifySchemaCompiler<unknown> {
  return ({ httpPart }) => {
    if (httpPart !== 'body') return () => true;
    return (body) => {
      if (body === null) return true;
      try {
        check(body);
        return true;
      } catch (error) {
        return { error: error as Error };
      }
    };
  };
}

const endpointBody = bodyValidator(parsedInput);

const TAGS = ['management'];

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

  app.get(
    '/endpoints',
    {
      schema: {
        tags: TAGS,
        summary: 'List the endpoints',
        response: {
          200: {
            description: 'Every endpoint, enabled or not',
            type: 'object',
            required: ['endpoints'],
            properties: { endpoints: { type: 'array', items: ENDPOINT_RECORD_SCHEMA } },
          },
          ...errorResponses(FAILURES),
        },
      },
    },
    async () => ({ endpoints: await management.list() }),
  );
  app.post(
    '/endpoints',
    {
      schema: {
        tags: TAGS,
        summary: 'Create an endpoint',
        body: ENDPOINT_INPUT_SCHEMA,
        response: endpointAnswer(201, 'Created: the endpoint as stored, version 1', CHANGE_FAILURES),
      },
      validatorCompiler: endpointBody,
    },
    async (request, reply) => reply.code(201).send({ endpoint: await management.create(request.body) }),
  );
  app.get<EndpointRoute>(
    '/endpoints/:endpoint',
    {
      schema: { tags: TAGS, summary: 'Read an endpoint', params: ENDPOINT_PARAMS, response: endpointAnswer(200, 'The endpoint', NOT_FOUND) },
    },
    async (request) => ({ endpoint: await management.get(request.params.endpoint) }),
  );
  app.put<EndpointRoute>(
    '/endpoints/:endpoint',
    {
      schema: {
        tags: TAGS,
        summary: 'Replace an endpoint',
        params: ENDPOINT_PARAMS,
        body: ENDPOINT_INPUT_SCHEMA,
        response: endpointAnswer(200, 'The endpoint as stored, a new version', { ...CHANGE_FAILURES, ...NOT_FOUND }),
      },
      validatorCompiler: endpointBody,
    },
    async (request) => ({ endpoint: await management.replace(request.params.endpoint, request.body) }),
  );
  app.patch<EndpointRoute>(
    '/endpoints/:endpoint',
    {
      schema: {
        tags: TAGS,
        summary: 'Change fields of an endpoint',
        params: ENDPOINT_PARAMS,
        body: ENDPOINT_PATCH_SCHEMA,
        response: endpointAnswer(200, 'The endpoint as stored, a new version', { ...CHANGE_FAILURES, ...NOT_FOUND }),
      },
      // the fields are checked once merged with the stored endpoint, by the management; here only that they are an object
      validatorCompiler: bodyValidator(patchFields),
    },
    async (request) => ({ endpoint: await management.patch(request.params.endpoint, request.body) }),
  );
  app.delete<EndpointRoute>(
    '/endpoints/:endpoint',
    {
      schema: {
        tags: TAGS,
        summary: 'Delete an endpoint',
        params: ENDPOINT_PARAMS,
        response: endpointAnswer(200, 'The deleting version; its history stays', NOT_FOUND),
      },
    },
    async (request) => ({ endpoint: await management.remove(request.params.endpoint) }),
  );
  app.get<EndpointRoute>(
    '/endpoints/:endpoint/versions',
    {
      schema: {
        tags: TAGS,
        summary: "An endpoint's versions",
        params: { type: 'object', properties: { endpoint: { type: 'string', description: "The endpoint's UUID" } } },
        response: {
          200: {
            description: 'Every version, deleted or not, oldest first',
            type: 'object',
            required: ['versions'],
            properties: { versions: { type: 'array', items: ENDPOINT_VERSION_SCHEMA } },
          },
          ...errorResponses({ ...FAILURES, ...NOT_FOUND }),
        },
      },
    },
    async (request) => ({ versions: await management.versions(request.params.endpoint) }),
  );
  app.post<VersionRoute>(
    '/endpoints/:endpoint/versions/:version/restore',
    {
      schema: {
        tags: TAGS,
        summary: 'Restore a version',
        params: {
          type: 'object',
          properties: {
            endpoint: { type: 'string', description: "The endpoint's UUID" },
            version: { type: 'string', description: 'A version number, from 1' },
          },
        },
        response: endpointAnswer(200, 'The restored endpoint as stored, a new version', {
          ...CHANGE_FAILURES,
          404: 'No endpoint with this UUID, or no such version to restore',
        }),
      },
    },
    async (request) => ({
      endpoint: await management.restore(request.params.endpoint, versionNumber(request.params.version)),
    }),
  );
};
