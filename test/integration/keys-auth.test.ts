import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { pino } from 'pino';
import { createElasticsearchClient } from '../../shared/elasticsearch.ts';
import { Authenticator, BOOTSTRAP_PRINCIPAL } from '../../src/auth/authenticator.ts';
import { KeyStore } from '../../src/auth/key-store.ts';
import { buildServer } from '../../src/server.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { testConfig, uniqueName } from '../support/stack.ts';

const BOOTSTRAP = 'bootstrap-key-for-tests-0123456789';
const KEY_CACHE_SECONDS = 5;

/** A probe route in the API scope (/api/test/principal): shows what the auth hook hands to the routes there. */
const principalRoute: FastifyPluginAsync = async (api) => {
  api.get('/test/principal', async (request) => request.principal);
};

describe('API keys against real Elasticsearch', () => {
  // this file sends many wrong keys on purpose: the per-address failure limit is tested in hostile-requests
  const config = testConfig({ INDEX_PREFIX: `${uniqueName('keys')}-`, BOOTSTRAP_API_KEY: BOOTSTRAP, AUTH_FAILURES_PER_MINUTE: '0' });
  const elasticsearch = createElasticsearchClient({ url: inject('elasticsearchUrl') });
  const store = new KeyStore(elasticsearch, config.INDEX_PREFIX, 0);
  const clock = new ManualClock();
  const logLines: string[] = [];
  let app: FastifyInstance;

  beforeAll(async () => {
    const logger = pino({ level: 'trace' }, { write: (line: string) => void logLines.push(line) });
    const authenticator = new Authenticator({ keyStore: store, bootstrapKey: BOOTSTRAP, clock, cacheSeconds: KEY_CACHE_SECONDS });
    app = await buildServer({ config, logger, elasticsearch, kafkaBrokers: config.KAFKA_BROKERS!, clock, authenticator, apiRoutes: principalRoute });
  });

  afterAll(async () => {
    await app.close();
    await elasticsearch.indices.delete({ index: store.index, ignore_unavailable: true });
    await elasticsearch.close();
  });

  const principal = (headers: Record<string, string>) => app.inject({ method: 'GET', url: '/api/test/principal', headers });

  it('answers 401 naming the missing key and how to send it', async () => {
    const response = await principal({});
    expect(response.statusCode).toBe(401);
    expect(response.json().error.code).toBe('unauthorized');
    expect(response.json().error.message).toMatch(/^missing API key: .*X-API-KEY.*Authorization: Bearer/);
  });

  it('answers 401 for an unknown key, well-formed or not', async () => {
    for (const key of ['lpk_0123456789abcdef_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'not-a-key']) {
      const response = await principal({ 'x-api-key': key });
      expect(response.statusCode).toBe(401);
      expect(response.json().error).toMatchObject({ code: 'unauthorized', message: expect.stringMatching(/^invalid API key/) });
    }
  });

  it('answers 401 for a known key id with the wrong secret', async () => {
    const { key } = await store.create({ account: 'acme', endpoints: 'all', projects: null });
    const forged = key.slice(0, -4) + (key.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    const response = await principal({ 'x-api-key': forged });
    expect(response.statusCode).toBe(401);
    expect(response.json().error.message).toMatch(/^invalid API key/);
  });

  it('refuses a wrong secret for a key id verified moments ago, and still accepts the right one', async () => {
    const { key } = await store.create({ account: 'acme', endpoints: 'all', projects: null });
    expect((await principal({ 'x-api-key': key })).statusCode).toBe(200);
    expect((await principal({ 'x-api-key': key })).statusCode).toBe(200);
    for (const forged of [key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A'), `${key.slice(0, -2)}`]) {
      const response = await principal({ 'x-api-key': forged });
      expect(response.statusCode).toBe(401);
      expect(response.json().error.message).toMatch(/^invalid API key/);
    }
    expect((await principal({ 'x-api-key': key })).statusCode).toBe(200);
  });

  it('takes BOOTSTRAP_API_KEY for the bootstrap principal and nothing close to it', async () => {
    for (const near of [`${BOOTSTRAP}x`, BOOTSTRAP.slice(0, -1), BOOTSTRAP.toUpperCase()]) {
      expect((await principal({ 'x-api-key': near })).statusCode).toBe(401);
    }
    expect((await principal({ 'x-api-key': BOOTSTRAP })).json()).toEqual(BOOTSTRAP_PRINCIPAL);
  });

  it('gives routes the principal of a valid key, from X-API-KEY or Authorization: Bearer', async () => {
    const { key, record } = await store.create({ account: 'acme', endpoints: ['usage.api-counts'], projects: ['p1', 'p2'] });
    const expected = { keyId: record.keyId, account: 'acme', endpoints: ['usage.api-counts'], projects: ['p1', 'p2'] };
    const viaHeader = await principal({ 'x-api-key': key });
    const viaBearer = await principal({ authorization: `Bearer ${key}` });
    expect(viaHeader.statusCode).toBe(200);
    expect(viaHeader.json()).toEqual(expected);
    expect(viaBearer.json()).toEqual(expected);
  });

  it('accepts BOOTSTRAP_API_KEY with every endpoint and every project', async () => {
    const response = await principal({ 'x-api-key': BOOTSTRAP });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual(BOOTSTRAP_PRINCIPAL);
    expect(response.json()).toMatchObject({ endpoints: 'all', projects: null });
  });

  it('refuses an Authorization header of another scheme', async () => {
    const response = await principal({ authorization: `Basic ${Buffer.from(`user:${BOOTSTRAP}`).toString('base64')}` });
    expect(response.statusCode).toBe(401);
    expect(response.json().error.message).toMatch(/Bearer <key>/);
  });

  it('stores only a hash of the key', async () => {
    const { key, record } = await store.create({ account: 'hash-check', endpoints: 'all', projects: null });
    const stored = await elasticsearch.get({ index: store.index, id: record.keyId });
    const text = JSON.stringify(stored._source);
    expect(text).not.toContain(key);
    expect(text).not.toContain(key.split('_').slice(2).join('_'));
    expect(stored._source).toMatchObject({ key_id: record.keyId, account: 'hash-check', key_sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const listed = await store.list();
    expect(listed.find((r) => r.keyId === record.keyId)).toEqual(record);
    expect(JSON.stringify(listed)).not.toMatch(/[0-9a-f]{64}/);
  });

  it('refuses a revoked key once the short verification cache has lapsed', async () => {
    const { key, record } = await store.create({ account: 'soon-revoked', endpoints: 'all', projects: null });
    expect((await principal({ 'x-api-key': key })).statusCode).toBe(200);
    await store.revoke(record.keyId);
    // the documented bound: a verified key is trusted for up to API_KEY_CACHE_SECONDS
    expect((await principal({ 'x-api-key': key })).statusCode).toBe(200);
    await clock.advance(KEY_CACHE_SECONDS * 1000);
    const response = await principal({ 'x-api-key': key });
    expect(response.statusCode).toBe(401);
    expect(response.json().error.message).toMatch(new RegExp(`API key \\(id ${record.keyId}\\) was revoked`));
  });

  it('refuses a revoked key at once when it was not verified recently', async () => {
    const { key, record } = await store.create({ account: 'revoked', endpoints: 'all', projects: null });
    const revoked = await store.revoke(record.keyId);
    expect(revoked?.revokedAt).toEqual(expect.any(String));
    expect((await principal({ 'x-api-key': key })).statusCode).toBe(401);
    expect((await store.list()).find((r) => r.keyId === record.keyId)?.revokedAt).toBe(revoked?.revokedAt);
  });

  it('answers revoke of an unknown id with null', async () => {
    expect(await store.revoke('0000000000000000')).toBeNull();
  });

  it('checks the key before revealing that an /api/ route does not exist', async () => {
    expect((await app.inject({ method: 'GET', url: '/api/nowhere' })).statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/api/nowhere', headers: { 'x-api-key': BOOTSTRAP } })).statusCode).toBe(404);
  });

  it('asks for a key on percent-encoded paths that reach /api/ routes', async () => {
    const response = await app.inject({ method: 'GET', url: '/%61pi/test/principal' });
    expect(response.statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/%61pi/nowhere' })).statusCode).toBe(401);
  });

  it('does not ask for a key outside /api/', async () => {
    expect((await app.inject({ method: 'GET', url: '/openapi.json' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(200);
  });

  it('never writes a key to the log', async () => {
    const { key } = await store.create({ account: 'quiet', endpoints: 'all', projects: null });
    await principal({ 'x-api-key': key });
    await principal({ authorization: `Bearer ${key}` });
    await principal({ 'x-api-key': BOOTSTRAP });
    await principal({ 'x-api-key': `${key}-wrong` });
    const log = logLines.join('');
    expect(log).toContain('request answered');
    // the secret is everything after `lpk_<16 hex digits>_`: base64url, so it may hold `_` itself
    expect(log).not.toContain(key.slice('lpk_'.length + 16 + 1));
    expect(log).not.toContain(BOOTSTRAP);
  });

  it('answers 503, not 401, when Elasticsearch cannot be asked', async () => {
    const unreachable = createElasticsearchClient({ url: 'http://127.0.0.1:1' });
    const authenticator = new Authenticator({ keyStore: new KeyStore(unreachable, config.INDEX_PREFIX, 0), bootstrapKey: BOOTSTRAP, clock, cacheSeconds: 5 });
    const down = await buildServer({
      config,
      logger: pino({ level: 'silent' }),
      elasticsearch: unreachable,
      kafkaBrokers: [],
      clock,
      authenticator,
      apiRoutes: principalRoute,
    });
    const { key } = await store.create({ account: 'acme', endpoints: 'all', projects: null });
    const response = await down.inject({ method: 'GET', url: '/api/test/principal', headers: { 'x-api-key': key } });
    const bootstrap = await down.inject({ method: 'GET', url: '/api/test/principal', headers: { 'x-api-key': BOOTSTRAP } });
    await down.close();
    await unreachable.close();
    expect(response.statusCode).toBe(503);
    expect(response.json().error.code).toBe('store_unavailable');
    expect(bootstrap.statusCode).toBe(200);
  });
});
