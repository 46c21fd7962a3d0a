import type { FastifyPluginAsync, FastifyRequest, onResponseHookHandler } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import { OPS_TOKEN_REQUIRED, type OpsAccess } from '../../shared/ops-access.ts';
import { Unauthorized } from '../errors.ts';
import { errorResponses, OPERATOR_TOKEN } from '../http/route-schemas.ts';
import {
  BoundedLabel,
  endpointBytesReturnedTotal,
  endpointRequestDurationSeconds,
  endpointRequestsTotal,
  endpointRowsReturnedTotal,
  httpRequestDurationSeconds,
  httpRequestsTotal,
  metricsRegistry,
} from '../metrics.ts';
import { seriesResets, type HistogramSeries } from '../metrics-series.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Rows of the answer the query route sent; undefined for an error or another route. */
    answeredRows: number | undefined;
    /** Body bytes of a streamed answer (an export page), which has no content-length. */
    answeredBytes: number | undefined;
  }
  interface FastifyContextConfig {
    /** The route answers a saved endpoint's query: labelled by the endpoint's name, counted in per-endpoint usage. */
    endpointQuery?: boolean;
  }
}

/**
 * The `endpoint` label: the saved endpoint's name on the query route (whether called by UUID or
 * name), else the route pattern; a fixed value for unknown endpoints and unmatched URLs keeps the
 * label set small whatever callers send. `nameOf` resolves a path segment to an endpoint's name.
 */
export type EndpointNameOf = (idOrName: string) => string | undefined;

export function endpointLabel(request: FastifyRequest, nameOf: EndpointNameOf, route = request.routeOptions): string {
  if (route.url === undefined) return 'unmatched';
  if (route.config.endpointQuery) {
    const idOrName = Object.values((request.params ?? {}) as Record<string, string>)[0] ?? '';
    return nameOf(idOrName) ?? 'unknown_endpoint';
  }
  return route.url;
}

/** Key id label of a request no key was resolved for (refused before or at authentication). */
const NO_KEY = 'none';

/**
 * The series one answered request moves: every route's request count and latency, and the query
 * route's per-endpoint usage. Counted by the onResponse hook below, and by the cached lane
 * (src/http/cached-lane.ts) for the answers it sends itself, so both move the same series.
 */
export class RequestCounts {
  private readonly endpointLabels: BoundedLabel;
  private readonly keyLabels: BoundedLabel;

  /** Distinct endpoints and key ids per-endpoint usage is labelled by (METRICS_MAX_ENDPOINT_LABELS, METRICS_MAX_KEY_LABELS). */
  constructor(maxEndpointLabels: number, maxKeyLabels: number) {
    this.endpointLabels = new BoundedLabel(maxEndpointLabels);
    this.keyLabels = new BoundedLabel(maxKeyLabels);
  }

  /** Any route's request: `endpoint` is its label (endpointLabel). */
  request(endpoint: string, status: string, seconds: number): void {
    httpRequestsTotal.inc({ endpoint, status });
    httpRequestDurationSeconds.observe({ endpoint }, seconds);
  }

  /** The query route's usage, by endpoint and key id (NO_KEY when none was resolved). */
  usage(endpoint: string, keyId: string | undefined, status: string, seconds: number, rows: number, bytes: number): void {
    const usage = { endpoint: this.endpointLabels.valueOf(endpoint), key_id: this.keyLabels.valueOf(keyId ?? NO_KEY) };
    endpointRequestsTotal.inc({ endpoint: usage.endpoint, key_id: usage.key_id, status });
    endpointRequestDurationSeconds.observe(usage, seconds);
    endpointRowsReturnedTotal.inc(usage, rows);
    endpointBytesReturnedTotal.inc(usage, bytes);
  }

  /**
   * What `request` and `usage` count for a 200 of `endpoint` to `keyId`, as series found on the first
   * count and kept: the cached lane counts every hit of a proven URL this way, with no label objects
   * or series keys per request.
   */
  answered(endpoint: string, keyId: string): AnsweredCounts {
    return new AnsweredCounts(() => {
      const usage = { endpoint: this.endpointLabels.valueOf(endpoint), key_id: this.keyLabels.valueOf(keyId) };
      return {
        requests: httpRequestsTotal.seriesFor({ endpoint, status: OK }),
        duration: httpRequestDurationSeconds.seriesFor({ endpoint }),
        usageRequests: endpointRequestsTotal.seriesFor({ endpoint: usage.endpoint, key_id: usage.key_id, status: OK }),
        usageDuration: endpointRequestDurationSeconds.seriesFor(usage),
        rows: endpointRowsReturnedTotal.seriesFor(usage),
        bytes: endpointBytesReturnedTotal.seriesFor(usage),
      };
    });
  }
}

const OK = '200';

interface AnsweredSeries {
  requests: { value: number };
  duration: HistogramSeries;
  usageRequests: { value: number };
  usageDuration: HistogramSeries;
  rows: { value: number };
  bytes: { value: number };
}

/** The six series of one endpoint's 200s to one key (RequestCounts.answered), found again after a reset of the metrics. */
export class AnsweredCounts {
  private series: AnsweredSeries | undefined;
  private foundAt = -1;

  constructor(private readonly find: () => AnsweredSeries) {}

  /** One answer: what request(endpoint, '200', seconds) and usage(endpoint, keyId, '200', seconds, rows, bytes) count. */
  count(seconds: number, rows: number, bytes: number): void {
    if (this.series === undefined || this.foundAt !== seriesResets()) {
      this.series = this.find();
      this.foundAt = seriesResets();
    }
    const { series } = this;
    series.requests.value += 1;
    if (Number.isFinite(seconds)) {
      httpRequestDurationSeconds.observeIn(series.duration, seconds);
      endpointRequestDurationSeconds.observeIn(series.usageDuration, seconds);
    }
    series.usageRequests.value += 1;
    endpointRowsReturnedTotal.addIn(series.rows, rows);
    endpointBytesReturnedTotal.addIn(series.bytes, bytes);
  }
}

export interface MetricsOptions {
  allowed: OpsAccess;
  endpointName: EndpointNameOf;
  counts: RequestCounts;
}

const METRICS_SCHEMA = {
  summary: 'Prometheus metrics',
  description: 'Request counts and latencies, per-endpoint usage, Elasticsearch time. Needs Authorization: Bearer <OPS_TOKEN> when OPS_TOKEN is set.',
  tags: ['operations'],
  security: OPERATOR_TOKEN,
  response: {
    200: { description: 'Prometheus text exposition format', content: { 'text/plain': { schema: { type: 'string' } } } },
    ...errorResponses({ 401: 'OPS_TOKEN is set and the request does not carry it' }),
  },
};

/**
 * /metrics in Prometheus text format (behind the operator token when one is set), request counts and
 * latency for every route, and per-endpoint usage (by endpoint and key id) for the query route.
 */
const metrics: FastifyPluginAsync<MetricsOptions> = async (app, options) => {
  const { counts } = options;
  app.decorateRequest('answeredRows', undefined);
  app.decorateRequest('answeredBytes', undefined);
  // a callback hook: an async one costs a promise on every request
  const count: onResponseHookHandler = (request, reply, done) => {
    // fastify builds request.routeOptions anew on every read: read once
    const route = request.routeOptions;
    const endpoint = endpointLabel(request, options.endpointName, route);
    const status = String(reply.statusCode);
    const seconds = reply.elapsedTime / 1000;
    counts.request(endpoint, status, seconds);
    if (!route.config.endpointQuery) return done();
    const principal = request.principal as { keyId: string } | null;
    const bytes = Number(reply.getHeader('content-length') ?? request.answeredBytes ?? 0);
    counts.usage(endpoint, principal?.keyId, status, seconds, request.answeredRows ?? 0, bytes);
    done();
  };
  app.addHook('onResponse', count);

  app.get('/metrics', { schema: METRICS_SCHEMA }, async (request, reply) => {
    if (!options.allowed(request.headers.authorization)) throw new Unauthorized(OPS_TOKEN_REQUIRED);
    void reply.header('content-type', metricsRegistry.contentType);
    return metricsRegistry.metrics();
  });
};

// not encapsulated: the hook sees every route registered beside this plugin
export const metricsPlugin = fastifyPlugin(metrics, { name: 'metrics', fastify: '5.x' });
