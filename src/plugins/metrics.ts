import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { OPS_TOKEN_REQUIRED, type OpsAccess } from '../../shared/ops-access.ts';
import { Unauthorized } from '../errors.ts';
import { httpRequestDurationSeconds, httpRequestsTotal, metricsRegistry } from '../metrics.ts';

const QUERY_ROUTE_PREFIX = '/api/endpoints/query/';

/**
 * The `endpoint` label: the saved endpoint's name on the query route (whether called by UUID or
 * name), else the route pattern; a fixed value for unknown endpoints and unmatched URLs keeps the
 * label set small whatever callers send. `nameOf` resolves a path segment to an endpoint's name.
 */
export type EndpointNameOf = (idOrName: string) => string | undefined;

export function endpointLabel(request: FastifyRequest, nameOf: EndpointNameOf): string {
  const route = request.routeOptions.url;
  if (route === undefined) return 'unmatched';
  if (route.startsWith(QUERY_ROUTE_PREFIX)) {
    const idOrName = Object.values((request.params ?? {}) as Record<string, string>)[0] ?? '';
    return nameOf(idOrName) ?? 'unknown_endpoint';
  }
  return route;
}

/** /metrics in Prometheus text format (behind the operator token when one is set), and request counts and latency for every route. */
const metrics: FastifyPluginAsync<{ allowed: OpsAccess; endpointName: EndpointNameOf }> = async (app, options) => {
  app.addHook('onResponse', async (request, reply) => {
    const endpoint = endpointLabel(request, options.endpointName);
    httpRequestsTotal.inc({ endpoint, status: String(reply.statusCode) });
    httpRequestDurationSeconds.observe({ endpoint }, reply.elapsedTime / 1000);
  });

  app.get('/metrics', async (request, reply) => {
    if (!options.allowed(request.headers.authorization)) throw new Unauthorized(OPS_TOKEN_REQUIRED);
    void reply.header('content-type', metricsRegistry.contentType);
    return metricsRegistry.metrics();
  });
};

// the hook must see routes registered outside this plugin, as fastify-plugin would arrange
export const metricsPlugin = Object.assign(metrics, { [Symbol.for('skip-override')]: true });
