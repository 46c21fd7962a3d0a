import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyPluginAsync, onRequestHookHandler } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import type { OpsAccess } from '../../shared/ops-access.ts';
import { OPERATOR_PRINCIPAL, type Authenticator } from '../auth/authenticator.ts';
import type { Principal } from '../auth/principal.ts';
import type { RateDecision, TokenBuckets } from '../auth/token-bucket.ts';
import { RateLimited, Unauthorized } from '../errors.ts';
import { authFailuresTotal } from '../metrics.ts';

export interface AuthOptions {
  authenticator: Authenticator;
  /** Failed authentications per client address (a token bucket each). */
  failures: TokenBuckets;
  failuresPerMinute: number;
  failureBurst: number;
  /** Every refusal takes at least this long, whichever path refused it. */
  failureMinMs: number;
  /** OPS_TOKEN's check when one is configured: it stands for an operator on the endpoint management routes. */
  operatorToken?: OpsAccess;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** OPS_TOKEN stands for an operator on this route (the endpoint management routes mark theirs). */
    operatorTokenAccepted?: boolean;
  }
}

/**
 * Authenticates every request in the scope it is registered in (the API scope: its routes and its 404s
 * alike, so an unknown endpoint is only revealed to a valid key) and sets request.principal. Scope and project checks belong to the
 * endpoint route, which knows the endpoint.
 *
 * Against guessing: a refusal is answered no sooner than failureMinMs after the request started,
 * so an unknown key id (a store look-up) and a known id with a wrong secret (often cached) cost the
 * same from outside; and an address that keeps failing gets 429 for a while, valid key or not.
 */
function authenticationHook(options: AuthOptions): onRequestHookHandler {
  const refusal = (decision: Extract<RateDecision, { kind: 'limited' }>) => {
    authFailuresTotal.inc({ outcome: 'rate_limited' });
    return new RateLimited(
      `too many failed authentications from this address: ${options.failuresPerMinute} per minute with bursts of ${options.failureBurst}; retry in ${decision.retryAfterSeconds} s`,
      decision.retryAfterSeconds,
    );
  };
  /** What the caller hears of a failed authentication, no sooner than failureMinMs after `started`. */
  const refused = async (error: unknown, address: string, started: number): Promise<Error> => {
    if (!(error instanceof Unauthorized)) return error instanceof Error ? error : new Error(String(error));
    authFailuresTotal.inc({ outcome: 'unauthorized' });
    const decision = options.failures.take(address);
    const wait = started + options.failureMinMs - performance.now();
    if (wait > 0) await sleep(wait);
    return decision.kind === 'limited' ? refusal(decision) : error;
  };
  // a callback hook: a key verified lately is accepted without a promise, as on every cached answer
  const authenticate: onRequestHookHandler = (request, _reply, done) => {
    const blocked = options.failures.peek(request.ip);
    if (blocked.kind === 'limited') return done(refusal(blocked));
    if (options.operatorToken && request.routeOptions.config.operatorTokenAccepted && options.operatorToken(request.headers.authorization)) {
      request.principal = OPERATOR_PRINCIPAL;
      return done();
    }
    const started = performance.now();
    const accept = (principal: Principal) => {
      request.principal = principal;
      request.authMs = performance.now() - started;
      done();
    };
    const refuse = (error: unknown) =>
      void refused(error, request.ip, started).then((answer) => {
        request.authMs = performance.now() - started;
        done(answer);
      });
    let outcome: Principal | Promise<Principal>;
    try {
      outcome = options.authenticator.authenticate(request.headers);
    } catch (error) {
      return refuse(error);
    }
    if (outcome instanceof Promise) outcome.then(accept, refuse);
    else accept(outcome);
  };
  return authenticate;
}

const auth: FastifyPluginAsync<AuthOptions> = async (app, options) => {
  app.decorateRequest('principal', null as unknown as Principal);
  app.decorateRequest('authMs', undefined);
  app.addHook('onRequest', authenticationHook(options));
};

// not encapsulated: the hook applies to the routes registered beside this plugin
export const authPlugin = fastifyPlugin(auth, { name: 'auth', fastify: '5.x' });
