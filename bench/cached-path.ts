import { answerHelp } from '../shared/command-help.ts';
import { cachedBenchStore } from './cached-bench-store.ts';
import path from 'node:path';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { loadConfig } from '../shared/config.ts';
import { createLogger } from '../shared/logger.ts';
import { Authenticator } from '../src/auth/authenticator.ts';
import { TokenBuckets } from '../src/auth/token-bucket.ts';
import { SystemClock } from '../src/cache/clock.ts';
import { installErrorHandler } from '../src/http/error-handler.ts';
import { requestIdOf } from '../src/http/request-id.ts';
import { RequestLog } from '../src/http/request-log.ts';
import { RequestLogger } from '../src/http/request-logger.ts';
import { authPlugin } from '../src/plugins/auth.ts';
import { metricsPlugin, RequestCounts } from '../src/plugins/metrics.ts';
import { rateLimitPlugin } from '../src/plugins/rate-limit.ts';
import { requestIdPlugin } from '../src/plugins/request-id.ts';
import { buildServer } from '../src/server.ts';
import { percentile } from './latency.ts';

answerHelp(`Usage: npx tsx bench/cached-path.ts [--requests 2000] [--rounds 15] [--baseline <checkout>]
Where a cached answer's time goes, one cost at a time, beside a bare fastify route sending the same bytes.
Needs KAFKA_BROKERS and ELASTICSEARCH_URL.`);

/**
 * Where a cached answer's time goes, one cost at a time: a bare fastify route sending the cached
 * bytes, then the same route with each of our layers added in the order a request meets them
 * (fastify's options as ours: the access log line and the request id; the request-id header; the
 * metrics hook; the auth hook with a stored key, verified once and then cached; the rate-limit hook
 * and its headers), and last our whole service answering the cached usage.api-counts. Requests
 * are injected (no sockets), one after another, so each row's CPU is the layer's own plus the
 * injection's, the same for every row; the layers take turns, a batch each per round, so a change
 * in the machine's load falls on all of them. The access line goes where LOG_LEVEL=info sends it,
 * stderr (redirect it to a file as the benchmark does).
 *
 * With --baseline <checkout> (the code before a change, with node_modules), that checkout's service
 * (its access line written as its src/main.ts writes it) takes its turns too, as the last row.
 *
 *   KAFKA_BROKERS=... ELASTICSEARCH_URL=... npx tsx bench/cached-path.ts [--requests 2000] [--rounds 15] [--baseline <checkout>] 2>/tmp/cached-path.log
 */
const argument = (name: string, fallback: number) => Number(process.argv[process.argv.indexOf(name) + 1] ?? 0) || fallback;
const REQUESTS = argument('--requests', 2_000);
const ROUNDS = argument('--rounds', 15);
const BASELINE = process.argv.includes('--baseline') ? process.argv[process.argv.indexOf('--baseline') + 1] : undefined;
const PATH = '/api/endpoints/query/usage.api-counts?interval=daily&project=bench';

interface Layer {
  name: string;
  build(): Promise<FastifyInstance>;
}

/** Microseconds per request of one batch of REQUESTS sequential injections. */
async function batchMicros(app: FastifyInstance, headers: Record<string, string>): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < REQUESTS; i += 1) await app.inject({ method: 'GET', url: PATH, headers });
  return ((performance.now() - started) * 1000) / REQUESTS;
}

async function main(): Promise<void> {
  const base = loadConfig(process.env);
  const store = await cachedBenchStore(base, 'cached');
  const { elasticsearch, keys, headers, config, kafkaBrokers } = store;
  const logger = createLogger('query-service', 'info');
  const accessLogger = createLogger('query-service', 'info', { redact: false, buffered: true });
  const clock = new SystemClock();
  const rows: string[][] = [];
  try {
    const ours = await buildServer({ config, logger, accessLogger, elasticsearch, kafkaBrokers, clock });
    const body = (await ours.inject({ method: 'GET', url: PATH, headers })).rawPayload;
    const bare = () => {
      const app = Fastify({ logger: false });
      app.get('/api/endpoints/query/:endpoint', (_request, reply) => void reply.header('content-type', 'application/json; charset=utf-8').send(body));
      return app;
    };
    // the request-scoped options src/server.ts gives fastify, and its error envelope (the /metrics route's schema refers to it)
    const withOurOptions = () => {
      const app = Fastify({
        loggerInstance: logger as FastifyBaseLogger,
        genReqId: requestIdOf,
        childLoggerFactory: (parent, bindings, options) => new RequestLogger(parent, bindings, options),
        logController: new RequestLog(accessLogger),
      });
      installErrorHandler(app);
      return app;
    };
    const oursOptions = () => {
      const app = withOurOptions();
      app.get('/api/endpoints/query/:endpoint', (_request, reply) => void reply.header('content-type', 'application/json; charset=utf-8').send(body));
      return app;
    };
    const authenticator = new Authenticator({ keyStore: keys, bootstrapKey: undefined, clock, cacheSeconds: config.API_KEY_CACHE_SECONDS });
    const limits = { perMinute: config.RATE_LIMIT_PER_MINUTE, burst: config.RATE_LIMIT_BURST };
    // each layer adds one plugin of the service to the one before, registered in the service's order
    const plugins: [string, (app: FastifyInstance) => Promise<unknown>][] = [
      ['+ request-id header hook', async (app) => app.register(requestIdPlugin)],
      [
        '+ metrics hook (onResponse)',
        async (app) =>
          app.register(metricsPlugin, {
            allowed: () => true,
            endpointName: () => 'usage.api-counts',
            counts: new RequestCounts(config.METRICS_MAX_ENDPOINT_LABELS, config.METRICS_MAX_KEY_LABELS),
          }),
      ],
      [
        '+ auth hook (stored key, cached)',
        async (app) =>
          app.register(authPlugin, {
            authenticator,
            failures: new TokenBuckets({ perMinute: 10, burst: 10 }, clock),
            failuresPerMinute: 10,
            failureBurst: 10,
            failureMinMs: 0,
          }),
      ],
      [
        '+ rate-limit hook and headers',
        async (app) =>
          app.register(rateLimitPlugin, {
            buckets: new TokenBuckets(limits, clock),
            perMinute: limits.perMinute,
            burst: limits.burst,
            endpointName: () => 'usage.api-counts',
          }),
      ],
    ];
    const layers: Layer[] = [
      { name: 'bare route, same bytes', build: async () => bare() },
      { name: '+ our fastify options (access line, request id, request logger)', build: async () => oursOptions() },
      ...plugins.map(
        ([name], position): Layer => ({
          name,
          build: async () => {
            const app = withOurOptions();
            for (const [, add] of plugins.slice(0, position + 1)) await add(app);
            app.get('/api/endpoints/query/:endpoint', (_request, reply) => void reply.header('content-type', 'application/json; charset=utf-8').send(body));
            return app;
          },
        }),
      ),
      { name: 'our service: route, catalog, parameters, cache hit, Server-Timing', build: async () => ours },
    ];
    if (BASELINE !== undefined) {
      const baseline = (await import(path.join(BASELINE, 'src/server.ts'))) as typeof import('../src/server.ts');
      const syncAccess = createLogger('query-service', 'info', { redact: false });
      const build = () => baseline.buildServer({ config, logger, accessLogger: syncAccess, elasticsearch, kafkaBrokers, clock });
      layers.push({ name: `the baseline's service (${BASELINE})`, build });
    }
    const apps: FastifyInstance[] = [];
    for (const layer of layers) {
      const app = await layer.build();
      const first = await app.inject({ method: 'GET', url: PATH, headers });
      if (first.statusCode !== 200 || !first.rawPayload.equals(body))
        throw new Error(`${layer.name}: status ${first.statusCode}, ${first.rawPayload.length} bytes`);
      await batchMicros(app, headers);
      apps.push(app);
    }
    const batches = layers.map((): number[] => []);
    for (let round = 0; round < ROUNDS; round += 1) {
      // every other round in reverse order, so no layer always follows the same one
      const turn = round % 2 === 0 ? [...apps.entries()] : [...apps.entries()].reverse();
      for (const [position, app] of turn) batches[position]!.push(await batchMicros(app, headers));
      console.error(`cached-path: round ${round + 1} of ${ROUNDS}`);
    }
    const medians = batches.map((values) =>
      percentile(
        values.sort((a, b) => a - b),
        50,
      ),
    );
    medians.forEach((micros, position) => {
      const before = medians[position - 1];
      rows.push([
        layers[position]!.name,
        String(body.length),
        micros.toFixed(1),
        before === undefined ? '' : (micros - before).toFixed(1),
        (medians[0]! / micros).toFixed(2),
      ]);
    });
    for (const app of apps) await app.close();
  } finally {
    await store.drop();
  }
  console.log(`\nmedian of ${ROUNDS} rounds; each round, each layer answers ${REQUESTS.toLocaleString('en')} injected GET requests one after another\n`);
  console.log('| layer | body bytes | us per request | added us | bare / this |\n|---|---|---|---|---|');
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.stack : error);
  process.exit(1);
});
