import type { ConnectionOptions } from 'node:tls';
import type { Client } from '@elastic/elasticsearch';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { partitionPeriodOf, type Config } from '../shared/config.ts';
import { SOURCE_NAMES } from '../shared/sources.ts';
import type { Logger } from '../shared/logger.ts';
import { ENDPOINTS } from '../queries/index.ts';
import { Authenticator } from './auth/authenticator.ts';
import { KeyStore } from './auth/key-store.ts';
import { withoutSecrets } from './auth/log-secrets.ts';
import { TokenBuckets } from './auth/token-bucket.ts';
import { SystemClock, type Clock } from './cache/clock.ts';
import { ResultCache } from './cache/result-cache.ts';
import { EmbeddedEngine } from './executor/engine/embedded-engine.ts';
import { FieldCatalogs } from './executor/field-catalogs.ts';
import { clientErrorHandler, installErrorHandler } from './http/error-handler.ts';
import { RequestLog } from './http/request-log.ts';
import { authPlugin } from './plugins/auth.ts';
import { endpointsPlugin } from './plugins/endpoints.ts';
import { healthPlugin } from './plugins/health.ts';
import { metricsPlugin } from './plugins/metrics.ts';
import { openApiPlugin } from './plugins/openapi.ts';
import { rateLimitPlugin } from './plugins/rate-limit.ts';
import { readyPlugin } from './plugins/ready.ts';
import { initSqlParser } from './sql/index.ts';

export interface ServerDependencies {
  config: Config;
  logger: Logger;
  elasticsearch: Client;
  kafkaBrokers: string[];
  /** TLS options for the brokers when they speak TLS (SSL, SASL_SSL); /health asks them over it. */
  kafkaTls?: ConnectionOptions;
  /** Time for the result cache, the key cache and rate limits; default: wall clock and node-schedule. */
  clock?: Clock;
  /** Default: one bounded by CACHE_MAX_BYTES. Closed with the server. */
  resultCache?: ResultCache;
  /** Default: keys in <INDEX_PREFIX>api-keys, plus BOOTSTRAP_API_KEY. */
  authenticator?: Authenticator;
}

/** Sandboxed SQL arrives in the query string: accept URLs (plus headers) well beyond the 16 KiB clients send. */
const MAX_REQUEST_HEAD_BYTES = 80 * 1024;
const MAX_BODY_BYTES = 1024 * 1024;

export async function buildServer(deps: ServerDependencies): Promise<FastifyInstance> {
  const app: FastifyInstance = Fastify({
    loggerInstance: withoutSecrets(deps.logger) as FastifyBaseLogger,
    routerOptions: { maxParamLength: 512 },
    bodyLimit: MAX_BODY_BYTES,
    http: { maxHeaderSize: MAX_REQUEST_HEAD_BYTES },
    requestIdHeader: 'x-request-id',
    logController: new RequestLog(),
    clientErrorHandler: clientErrorHandler(MAX_REQUEST_HEAD_BYTES),
  });
  installErrorHandler(app);
  const clock = deps.clock ?? new SystemClock();
  const resultCache = deps.resultCache ?? new ResultCache({ maxBytes: deps.config.CACHE_MAX_BYTES, clock, logger: deps.logger });
  app.addHook('onClose', async () => resultCache.close());
  const authenticator =
    deps.authenticator ??
    new Authenticator({
      keyStore: new KeyStore(deps.elasticsearch, deps.config.INDEX_PREFIX),
      bootstrapKey: deps.config.BOOTSTRAP_API_KEY,
      clock,
      cacheSeconds: deps.config.API_KEY_CACHE_SECONDS,
    });
  const limits = { perMinute: deps.config.RATE_LIMIT_PER_MINUTE, burst: deps.config.RATE_LIMIT_BURST };
  // metrics, auth and rate-limit hooks first (in that order), so they apply to every route registered after them
  await app.register(metricsPlugin);
  await app.register(authPlugin, { authenticator });
  await app.register(rateLimitPlugin, { buckets: new TokenBuckets(limits, clock), ...limits });
  await app.register(readyPlugin, { elasticsearch: deps.elasticsearch, indexPrefix: deps.config.INDEX_PREFIX });
  await app.register(openApiPlugin, { endpoints: ENDPOINTS });
  await app.register(healthPlugin, { elasticsearch: deps.elasticsearch, kafkaBrokers: deps.kafkaBrokers, kafkaTls: deps.kafkaTls });
  await initSqlParser();
  // DuckDB runs in child processes started on the first sandboxed query, not with every server
  let engine: Promise<EmbeddedEngine> | undefined;
  const startedEngine = () =>
    (engine ??= EmbeddedEngine.start({ memoryLimit: deps.config.SANDBOX_ENGINE_MEMORY_LIMIT, threads: deps.config.SANDBOX_ENGINE_THREADS, logger: deps.logger }).catch((error: unknown) => {
      engine = undefined;
      throw error;
    }));
  app.addHook('onClose', async () => {
    if (engine) await (await engine.catch(() => undefined))?.close();
  });
  await app.register(endpointsPlugin, {
    elasticsearch: deps.elasticsearch,
    indexPrefix: deps.config.INDEX_PREFIX,
    partitionPeriods: Object.fromEntries(SOURCE_NAMES.map((source) => [source, partitionPeriodOf(deps.config, source)])),
    queryTimeoutMs: deps.config.QUERY_TIMEOUT_MS,
    clock,
    resultCache,
    bodyLimit: MAX_BODY_BYTES,
    sandbox: {
      limits: { maxScanEvents: deps.config.SANDBOX_MAX_SCAN_EVENTS },
      fieldCatalogs: new FieldCatalogs(deps.elasticsearch, deps.config.FIELD_CATALOG_SECONDS * 1000, clock, deps.config.QUERY_TIMEOUT_MS),
      engine: startedEngine,
    },
  });
  return app;
}
