import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { Authenticator } from '../../src/auth/authenticator.ts';
import type { KeyStore } from '../../src/auth/key-store.ts';
import { TokenBuckets } from '../../src/auth/token-bucket.ts';
import { installErrorHandler } from '../../src/http/error-handler.ts';
import { authPlugin } from '../../src/plugins/auth.ts';
import { rateLimitPlugin } from '../../src/plugins/rate-limit.ts';
import { ManualClock } from '../support/manual-clock.ts';

const BOOTSTRAP = 'bootstrap-key-for-plugin-tests-0123';

function pluginOptions() {
  const clock = new ManualClock();
  // only the bootstrap key is presented: the key store is never asked
  const authenticator = new Authenticator({ keyStore: {} as KeyStore, bootstrapKey: BOOTSTRAP, clock, cacheSeconds: 5 });
  const limits = { perMinute: 60, burst: 1 };
  return {
    auth: { authenticator, failures: new TokenBuckets(limits, clock), failuresPerMinute: 60, failureBurst: 1, failureMinMs: 0 },
    rateLimit: { buckets: new TokenBuckets(limits, clock), ...limits, endpointName: () => undefined },
  };
}

describe('the service plugins', () => {
  it('refuses a rate limit registered without the auth plugin, whose principal it spends', async () => {
    const app = Fastify();
    await expect(app.register(rateLimitPlugin, pluginOptions().rateLimit)).rejects.toMatchObject({
      code: 'FST_ERR_PLUGIN_DEPENDENCY_NOT_REGISTERED',
      message: "The dependency 'auth' of plugin 'rate-limit' is not registered",
    });
    await app.close();
  });

  it('applies their hooks to the routes registered beside them', async () => {
    const options = pluginOptions();
    const app = Fastify();
    installErrorHandler(app);
    await app.register(authPlugin, options.auth);
    await app.register(rateLimitPlugin, options.rateLimit);
    app.get('/api/probe', async (request) => request.principal);
    const headers = { 'x-api-key': BOOTSTRAP };
    expect((await app.inject({ url: '/api/probe', headers })).json()).toMatchObject({ keyId: 'bootstrap' });
    expect((await app.inject({ url: '/api/probe', headers })).statusCode).toBe(429);
    await app.close();
  });
});
