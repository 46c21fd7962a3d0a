import type { ConnectionOptions } from 'node:tls';
import type { Client } from '@elastic/elasticsearch';
import fastifySwagger from '@fastify/swagger';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import { partitionPeriodOf, type Config } from '../shared/config.ts';
import { SOURCE_NAMES } from '../shared/sources.ts';
import type { Logger } from '../shared/logger.ts';
import { opsAccess } from '../shared/ops-access.ts';
import { Authenticator } from './auth/authenticator.ts';
import { KeyStore } from './auth/key-store.ts';
import { withoutSecrets } from './auth/log-secrets.ts';
import { TokenBuckets } from './auth/token-bucket.ts';
import { SystemClock, type Clock } from './cache/clock.ts';
import { ResultCache } from './cache/result-cache.ts';
import { EmbeddedEngine } from './executor/engine/embedded-engine.ts';
import { FieldCatalogs } from './executor/field-catalogs.ts';
import { HeldEvents } from './executor/held-events.ts';
import type { AnswerDependencies } from './endpoints/answer.ts';
import { EndpointCatalog } from './endpoints/catalog.ts';
import { EndpointManagement } from './endpoints/management.ts';
import { isCacheKeyOf } from './endpoints/request.ts';
import { EndpointStore } from './endpoints/store.ts';
import { CachedLane, serverWithLane } from './http/cached-lane.ts';
import { clientErrorHandler, frameworkErrorHandler, installErrorHandler } from './http/error-handler.ts';
import { parseJsonBody } from './http/json-body.ts';
import { requestIdOf } from './http/request-id.ts';
import { RequestLog } from './http/request-log.ts';
import { RequestLogger } from './http/request-logger.ts';
import { CursorSigner } from './export/cursor.ts';
import { RowBudget } from './export/row-budget.ts';
import { apiPlugin, API_PREFIX, refuseApiRoutesOutsideScope } from './plugins/api.ts';
import { healthPlugin } from './plugins/health.ts';
import { metricsPlugin, RequestCounts } from './plugins/metrics.ts';
import { SWAGGER_OPTIONS } from './openapi/document.ts';
import { openApiPlugin } from './plugins/openapi.ts';
import { readyPlugin } from './plugins/ready.ts';
import { requestIdPlugin } from './plugins/request-id.ts';
import { ParsedQueryCache } from './sql/parsed-query-cache.ts';
import { SqlParserThread } from './sql/parser-pool.ts';

export interface ServerDependencies {
  config: Config;
  logger: Logger;
  /** Writes one line per answered request; default: through `logger`. */
  accessLogger?: Logger;
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
  /** More routes under /api/, behind the key and the rate limit (a test's probe route); none is declared outside. */
  apiRoutes?: FastifyPluginAsync;
}

/** How requests are planned, from the configuration: shared by the service and the commands that check saved queries. */
export function planningSettings(config: Config) {
  return {
    partitionPeriods: Object.fromEntries(SOURCE_NAMES.map((source) => [source, partitionPeriodOf(config, source)])),
    regexLimits: {
      maxDeterminizedStates: config.SANDBOX_MAX_REGEX_STATES,
      maxPerRequest: config.SANDBOX_MAX_REGEX_PER_QUERY,
      maxTotalChars: config.SANDBOX_MAX_REGEX_CHARS,
    },
    sandboxLimits: { maxScanEvents: config.SANDBOX_MAX_SCAN_EVENTS, maxScans: config.SANDBOX_MAX_SCANS },
  };
}

/** Longest path segment the router matches: endpoint names and UUIDs are far shorter. */
const MAX_PARAM_LENGTH = 512;

export async function buildServer(deps: ServerDependencies): Promise<FastifyInstance> {
  const { config } = deps;
  const logger = withoutSecrets(deps.logger);
  const accessLogger = deps.accessLogger ?? logger;
  // made once the catalog, keys and cache it reads exist; the server is made first
  let cachedLane: CachedLane | undefined;
  const app: FastifyInstance = Fastify({
    serverFactory: config.HTTP_CACHED_LANE ? serverWithLane(() => cachedLane) : undefined,
    loggerInstance: logger as FastifyBaseLogger,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    bodyLimit: config.HTTP_MAX_BODY_BYTES,
    // sandboxed SQL arrives in the query string: HTTP_MAX_HEADER_BYTES is well beyond the 16 KiB clients send.
    // Node checks the headers and request timeouts every connectionsCheckingInterval, so it is kept well below them.
    http: {
      maxHeaderSize: config.HTTP_MAX_HEADER_BYTES,
      headersTimeout: config.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: Math.min(1000, Math.ceil(config.HTTP_HEADERS_TIMEOUT_MS / 4)),
    },
    requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
    keepAliveTimeout: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    connectionTimeout: config.HTTP_CONNECTION_TIMEOUT_MS,
    genReqId: requestIdOf,
    childLoggerFactory: (parent, bindings, options) => new RequestLogger(parent, bindings, options),
    logController: new RequestLog(accessLogger),
    frameworkErrors: frameworkErrorHandler(MAX_PARAM_LENGTH),
    clientErrorHandler: clientErrorHandler(
      { maxHeadBytes: config.HTTP_MAX_HEADER_BYTES, headersTimeoutMs: config.HTTP_HEADERS_TIMEOUT_MS, requestTimeoutMs: config.HTTP_REQUEST_TIMEOUT_MS },
      logger,
    ),
  });
  installErrorHandler(app);
  app.addHook('onRoute', refuseApiRoutesOutsideScope());
  // first, so the OpenAPI document is generated from every route's schema
  await app.register(fastifySwagger, SWAGGER_OPTIONS);
  // our own JSON parser: errors that say what is wrong (a `__proto__` key is named, not called "not JSON")
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, text, done) => {
    try {
      done(null, parseJsonBody(text as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  const clock = deps.clock ?? new SystemClock();
  const warming = { maxEntries: deps.config.CACHE_WARM_MAX_ENTRIES, concurrency: deps.config.CACHE_WARM_CONCURRENCY };
  const resultCache = deps.resultCache ?? new ResultCache({ maxBytes: deps.config.CACHE_MAX_BYTES, clock, logger: deps.logger, warming });
  app.addHook('onClose', async () => resultCache.close());
  const endpointStore = new EndpointStore(deps.elasticsearch, config.INDEX_PREFIX, config.ELASTICSEARCH_INDEX_REPLICAS);
  const catalog = new EndpointCatalog({
    store: endpointStore,
    logger: deps.logger,
    refreshSeconds: config.ENDPOINT_REFRESH_SECONDS,
    // a changed or deleted endpoint's results are dropped; its warming stops with them, a new version warms by its own settings
    onChange: (id) => resultCache.drop((key) => isCacheKeyOf(key, id)),
  });
  await catalog.start();
  app.addHook('onClose', async () => catalog.close());
  const authenticator =
    deps.authenticator ??
    new Authenticator({
      keyStore: new KeyStore(deps.elasticsearch, deps.config.INDEX_PREFIX, deps.config.ELASTICSEARCH_INDEX_REPLICAS, deps.config.QUERY_TIMEOUT_MS),
      bootstrapKey: deps.config.BOOTSTRAP_API_KEY,
      clock,
      cacheSeconds: deps.config.API_KEY_CACHE_SECONDS,
      missCacheSeconds: deps.config.API_KEY_MISS_CACHE_SECONDS,
    });
  const limits = { perMinute: deps.config.RATE_LIMIT_PER_MINUTE, burst: deps.config.RATE_LIMIT_BURST };
  // request id and metrics hooks first, so they apply to every route registered after them (the API scope adds auth and rate limit)
  await app.register(requestIdPlugin);
  const allowedOps = opsAccess(config.OPS_TOKEN);
  // labels come from this replica's last view of the store: a label never waits for Elasticsearch
  const endpointName = (idOrName: string) => catalog.known(idOrName)?.record.name;
  const counts = new RequestCounts(config.METRICS_MAX_ENDPOINT_LABELS, config.METRICS_MAX_KEY_LABELS);
  await app.register(metricsPlugin, { allowed: allowedOps, endpointName, counts });
  const failureLimits = { perMinute: config.AUTH_FAILURES_PER_MINUTE, burst: config.AUTH_FAILURE_BURST };
  const auth = {
    authenticator,
    failures: new TokenBuckets(failureLimits, clock),
    failuresPerMinute: failureLimits.perMinute,
    failureBurst: failureLimits.burst,
    failureMinMs: config.AUTH_FAILURE_MIN_MS,
    // without OPS_TOKEN only an admin key manages endpoints (opsAccess would let anyone in)
    operatorToken: config.OPS_TOKEN === undefined ? undefined : allowedOps,
  };
  const rateLimit = { buckets: new TokenBuckets(limits, clock), ...limits, endpointName };
  if (config.HTTP_CACHED_LANE) {
    const lane = new CachedLane({ catalog, resultCache, authenticator, authFailures: auth.failures, rateLimits: rateLimit.buckets, counts, accessLogger });
    cachedLane = lane;
    app.addHook('preClose', async () => lane.close());
  }
  await app.register(readyPlugin, { elasticsearch: deps.elasticsearch, indexPrefix: deps.config.INDEX_PREFIX });
  await app.register(openApiPlugin, { endpoints: async () => (await catalog.list()).filter((entry) => entry.record.enabled).map((entry) => entry.definition) });
  await app.register(healthPlugin, { elasticsearch: deps.elasticsearch, kafkaBrokers: deps.kafkaBrokers, kafkaTls: deps.kafkaTls, allowed: allowedOps });
  const sqlParser = new SqlParserThread(config.SANDBOX_PARSE_TIMEOUT_MS, config.SANDBOX_PARSER_IDLE_MS);
  app.addHook('onClose', async () => sqlParser.close());
  const parsedQueries = new ParsedQueryCache((text, options) => sqlParser.parse(text, options));
  // DuckDB runs in child processes started on the first sandboxed query, not with every server
  let engine: Promise<EmbeddedEngine> | undefined;
  const startedEngine = () =>
    (engine ??= EmbeddedEngine.start({
      memoryLimit: config.SANDBOX_ENGINE_MEMORY_LIMIT,
      threads: config.SANDBOX_ENGINE_THREADS,
      poolSize: config.SANDBOX_ENGINE_PROCESSES,
      perKey: config.SANDBOX_ENGINE_PER_KEY,
      maxWaitingPerKey: config.SANDBOX_ENGINE_QUEUE_PER_KEY,
      maxWaiting: config.SANDBOX_ENGINE_QUEUE_MAX,
      maxResultBytes: config.SANDBOX_MAX_RESULT_BYTES,
      logger: deps.logger,
    }).catch((error: unknown) => {
      engine = undefined;
      throw error;
    }));
  app.addHook('onClose', async () => {
    if (engine) await (await engine.catch(() => undefined))?.close();
  });
  const planning = planningSettings(config);
  const answering: AnswerDependencies = {
    elasticsearch: deps.elasticsearch,
    indexPrefix: deps.config.INDEX_PREFIX,
    partitionPeriods: planning.partitionPeriods,
    regexLimits: planning.regexLimits,
    queryTimeoutMs: deps.config.QUERY_TIMEOUT_MS,
    clock,
    resultCache,
    sandbox: {
      limits: planning.sandboxLimits,
      maxTranslatedChars: deps.config.SANDBOX_MAX_TRANSLATED_CHARS,
      maxValueBytes: config.SANDBOX_MAX_RESULT_BYTES,
      fieldCatalogs: new FieldCatalogs(deps.elasticsearch, deps.config.FIELD_CATALOG_SECONDS * 1000, clock, deps.config.QUERY_TIMEOUT_MS),
      engine: startedEngine,
      parseSql: (text, options) => parsedQueries.get(text, options),
      heldEvents: new HeldEvents(config.SANDBOX_MAX_HELD_EVENTS, config.SANDBOX_MAX_HELD_BYTES),
    },
  };
  const exporting = { budget: new RowBudget(config.EXPORT_ROWS_PER_MINUTE, clock), cursors: new CursorSigner(config.EXPORT_CURSOR_SECRET), logger };
  const endpoints = { ...answering, catalog, bodyLimit: config.HTTP_MAX_BODY_BYTES, exporting };
  const admin = { management: new EndpointManagement({ store: endpointStore, catalog, check: answering }) };
  await app.register(apiPlugin, { prefix: API_PREFIX, auth, rateLimit, endpoints, admin, routes: deps.apiRoutes });
  return app;
}
