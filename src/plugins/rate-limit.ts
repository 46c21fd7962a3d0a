import type { FastifyPluginAsync, onRequestHookHandler } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import type { TokenBuckets } from '../auth/token-bucket.ts';
import { RateLimited } from '../errors.ts';
import { httpRateLimitedTotal } from '../metrics.ts';
import { endpointLabel, type EndpointNameOf } from './metrics.ts';

export interface RateLimitOptions {
  buckets: TokenBuckets;
  perMinute: number;
  burst: number;
  /** For the metrics label of a refused request. */
  endpointName: EndpointNameOf;
}

/**
 * Spends one token of the caller's key on every request the auth hook authenticated (the /api/
 * routes), before the route runs; /health, /ready, /metrics and the docs carry no key and are
 * never limited. Registered right after the auth plugin so its hook runs after authentication.
 */
function rateLimitHook(options: RateLimitOptions): onRequestHookHandler {
  // a callback hook: an async one costs a promise on every request
  const spendToken: onRequestHookHandler = (request, reply, done) => {
    if (!request.principal) return done();
    const decision = options.buckets.take(request.principal.keyId);
    if (decision.kind === 'unlimited') return done();
    void reply.header('x-ratelimit-limit', String(decision.limit));
    if (decision.kind === 'allowed') {
      void reply.header('x-ratelimit-remaining', String(decision.remaining));
      return done();
    }
    void reply.header('x-ratelimit-remaining', '0');
    httpRateLimitedTotal.inc({ endpoint: endpointLabel(request, options.endpointName) });
    done(
      new RateLimited(
        `rate limit exceeded for this API key: ${options.perMinute} requests per minute with bursts of ${options.burst}; retry in ${decision.retryAfterSeconds} s`,
        decision.retryAfterSeconds,
      ),
    );
  };
  return spendToken;
}

const rateLimit: FastifyPluginAsync<RateLimitOptions> = async (app, options) => {
  app.addHook('onRequest', rateLimitHook(options));
};

// not encapsulated, and after the auth plugin: its hook spends the tokens of the principal the auth hook set
export const rateLimitPlugin = fastifyPlugin(rateLimit, { name: 'rate-limit', fastify: '5.x', dependencies: ['auth'] });
