import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { findEndpoint } from '../../queries/index.ts';
import type { Principal } from '../auth/principal.ts';
import { answerEndpointQuery, type AnswerDependencies } from '../endpoints/answer.ts';
import { mergedParameters } from '../endpoints/request.ts';
import { NotFound, Unauthorized } from '../errors.ts';

export type EndpointsOptions = AnswerDependencies;

interface EndpointRoute {
  Params: { endpoint: string };
}

/** GET and POST /api/endpoints/query/:endpoint, by UUID or name (SPEC.md 4). */
export const endpointsPlugin: FastifyPluginAsync<EndpointsOptions> = async (app, options) => {
  async function handle(request: FastifyRequest<EndpointRoute>, reply: FastifyReply) {
    const principal = request.principal as Principal | null | undefined;
    // fail closed should the auth hook ever be missing
    if (!principal) throw new Unauthorized('missing API key: send it in the X-API-KEY header or as Authorization: Bearer <key>');
    const endpoint = findEndpoint(request.params.endpoint);
    if (!endpoint) {
      throw new NotFound(`no endpoint ${JSON.stringify(request.params.endpoint)}; known endpoints: usage.api-counts, logs.all (by name or UUID)`, 'endpoint_not_found');
    }
    const answer = await answerEndpointQuery(
      { endpoint, principal, supplied: mergedParameters(request.query, request.body), redactHeader: request.headers['svc-endpoint-redact-pii'] },
      options,
    );
    return reply.header('x-cache', answer.cache).header('age', String(answer.ageSeconds)).send({ result: answer.rows });
  }

  app.get<EndpointRoute>('/api/endpoints/query/:endpoint', handle);
  app.post<EndpointRoute>('/api/endpoints/query/:endpoint', handle);
};
