import type { Client } from '@elastic/elasticsearch';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { findEndpoint } from '../../queries/index.ts';
import type { Principal } from '../auth/principal.ts';
import type { ResultCache } from '../cache/result-cache.ts';
import { compileEndpoint, type CompiledQuery } from '../compiler/compile.ts';
import {
  assertEndpointAllowed,
  assertNoSandboxQuery,
  cacheKey,
  mergedParameters,
  redactionRequested,
  validateParameters,
} from '../endpoints/request.ts';
import { NotFound, Unauthorized } from '../errors.ts';
import { executeQuery } from '../executor.ts';
import { elasticsearchQuerySeconds } from '../metrics.ts';
import { redactPii } from '../redaction.ts';

export interface EndpointsOptions {
  elasticsearch: Client;
  indexPrefix: string;
  queryTimeoutMs: number;
  /** Current time in epoch milliseconds; injected so look-back windows are exact in tests. */
  clock: { now(): number };
  resultCache: ResultCache;
}

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
    assertEndpointAllowed(principal, endpoint);
    const supplied = mergedParameters(request.query, request.body);
    assertNoSandboxQuery(supplied);
    const parameters = validateParameters(endpoint, supplied);
    const redact = redactionRequested(request.headers['svc-endpoint-redact-pii'], endpoint);
    const compile = () => compileEndpoint(endpoint, parameters, { now: options.clock.now(), projects: principal.projects, indexPrefix: options.indexPrefix });
    // compiled up front so bad parameters and forbidden projects fail before any cache lookup; that
    // query serves the first run, and each warming run compiles anew to measure its window from its own time
    let firstQuery: CompiledQuery | undefined = compile();
    const run = async () => {
      const query = firstQuery ?? compile();
      firstQuery = undefined;
      const rows = await executeQuery(query, {
        elasticsearch: options.elasticsearch,
        timeoutMs: options.queryTimeoutMs,
        observe: (seconds) => elasticsearchQuerySeconds.observe({ endpoint: endpoint.name }, seconds),
      });
      return redact ? redactPii(rows) : rows;
    };
    if (endpoint.cache === null) {
      const rows = await run();
      return reply.header('x-cache', 'BYPASS').header('age', '0').send({ result: rows });
    }
    const cached = await options.resultCache.fetch({ key: cacheKey(endpoint, parameters, redact, principal), policy: endpoint.cache, run });
    return reply.header('x-cache', cached.status).header('age', String(cached.ageSeconds)).send({ result: cached.rows });
  }

  app.get<EndpointRoute>('/api/endpoints/query/:endpoint', handle);
  app.post<EndpointRoute>('/api/endpoints/query/:endpoint', handle);
};
