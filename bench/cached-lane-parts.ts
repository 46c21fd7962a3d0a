import { answerHelp } from '../shared/command-help.ts';
import { cachedBenchStore } from './cached-bench-store.ts';
import { IncomingMessage, type OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { PerformanceObserver } from 'node:perf_hooks';
import { Writable } from 'node:stream';
import { loadConfig } from '../shared/config.ts';
import { createLogger } from '../shared/logger.ts';
import { Authenticator } from '../src/auth/authenticator.ts';
import { TokenBuckets } from '../src/auth/token-bucket.ts';
import { SystemClock } from '../src/cache/clock.ts';
import { ResultCache } from '../src/cache/result-cache.ts';
import { RequestCounts } from '../src/plugins/metrics.ts';
import { AnsweredLine } from '../src/http/request-log.ts';
import { requestIdOf } from '../src/http/request-id.ts';
import { timingEntry } from '../src/http/server-timing.ts';
import { buildServer } from '../src/server.ts';

answerHelp(`Usage: npx tsx bench/cached-lane-parts.ts [--requests 20000] [--rounds 3] 2>/dev/null
A cached answer's parts, each timed on its own in this process: the whole lane (fake sockets, no network), node's
header block and body write with the lane's headers and with the bare route's two, the key check, the request id,
the access line, the metrics, the cache and bucket look-ups; and scavenges per 100k requests. Needs KAFKA_BROKERS and
ELASTICSEARCH_URL. Run it with the service's node flags to see them: node --max-semi-space-size=4 --optimize-for-size --import tsx ...`);

/**
 * The cached lane's cost split into its parts, without sockets: each part runs REQUESTS times in a
 * loop and its microseconds per call are the median of ROUNDS rounds, the parts taking turns. A
 * request is an IncomingMessage and a ServerResponse on a socket whose writes are dropped, handed to
 * the service's own HTTP server (the lane answers before fastify). The access line goes to stderr
 * (send it to /dev/null): its writes are part of the lane's cost as the service pays it.
 *
 *   KAFKA_BROKERS=... ELASTICSEARCH_URL=... npx tsx bench/cached-lane-parts.ts 2>/dev/null
 */
const argument = (name: string, fallback: number) => Number(process.argv[process.argv.indexOf(name) + 1] ?? 0) || fallback;
const REQUESTS = argument('--requests', 20_000);
const ROUNDS = argument('--rounds', 3);
const PATH = '/api/endpoints/query/usage.api-counts?interval=daily&project=bench';
const REQUEST_ID = '0f3c1c62-57d5-4a0e-9d3b-1c2f4e5a6b7c';

/** A connected-looking socket that drops what is written: node's HTTP writes cost what they cost, without a syscall. */
function droppingSocket(): Socket {
  const socket = new Socket({ writable: false, readable: false });
  const sink = new Writable({ writev: (_chunks, done) => done(), write: (_chunk, _encoding, done) => done() });
  Object.assign(socket, { write: sink.write.bind(sink), cork: () => {}, uncork: () => {}, writable: true });
  return socket;
}

function request(socket: Socket, headers: Record<string, string>): IncomingMessage {
  const message = new IncomingMessage(socket);
  message.method = 'GET';
  message.url = PATH;
  message.headers = { host: '127.0.0.1', ...headers };
  return message;
}

let lastResponse: ServerResponse | undefined;

function response(message: IncomingMessage, socket: Socket): ServerResponse {
  const sent = new ServerResponse(message);
  // as the server does once a response is answered: the socket is free for the next one
  lastResponse?.detachSocket(socket);
  sent.assignSocket(socket);
  lastResponse = sent;
  return sent;
}

/** A few turns of the event loop: the access line's gathered lines are written, and GC entries reach the observer. */
const settled = () => new Promise((resolve) => setTimeout(resolve, 20));

let scavenges = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) if ((entry as unknown as { detail?: { kind?: number } }).detail?.kind === 1) scavenges += 1;
}).observe({ entryTypes: ['gc'] });

async function main(): Promise<void> {
  const base = loadConfig(process.env);
  const store = await cachedBenchStore(base, 'lane');
  const { elasticsearch, keys, headers, config, kafkaBrokers } = store;
  const logger = createLogger('query-service', 'info');
  // as src/main.ts makes it
  const accessLogger = createLogger('query-service', 'info', { redact: false, buffered: true });
  const clock = new SystemClock();
  const resultCache = new ResultCache({ maxBytes: config.CACHE_MAX_BYTES, clock, logger });
  const authenticator = new Authenticator({ keyStore: keys, bootstrapKey: undefined, clock, cacheSeconds: config.API_KEY_CACHE_SECONDS });
  try {
    const app = await buildServer({ config, logger, accessLogger, elasticsearch, kafkaBrokers: kafkaBrokers, clock, resultCache, authenticator });
    const first = await app.inject({ method: 'GET', url: PATH, headers });
    if (first.statusCode !== 200) throw new Error(`status ${first.statusCode}: ${first.body}`);
    const socket = droppingSocket();
    // the lane answers a request it proved; a request it hands on reaches fastify, whose answer is not a HIT
    const probe = response(request(socket, headers), socket);
    app.server.emit('request', probe.req, probe);
    // writeHead with an object stores nothing getHeader reads: the header block as written is the check
    if (!(probe as unknown as { _header: string })._header.includes('x-cache: HIT')) throw new Error('the lane did not answer the probe');
    const cacheKeyOf = [...(resultCache as unknown as { entries: Map<string, unknown> }).entries.keys()][0];
    const body = first.rawPayload;
    const limits = new TokenBuckets({ perMinute: 100_000_000, burst: 100_000_000 }, clock);
    const counts = new RequestCounts(config.METRICS_MAX_ENDPOINT_LABELS, config.METRICS_MAX_KEY_LABELS).answered('usage.api-counts', 'bench');
    const line = new AnsweredLine(accessLogger);
    const laneHeaders = (): OutgoingHttpHeaders => ({
      'x-request-id': requestIdOf({ headers: {} }),
      'x-ratelimit-limit': '100000000',
      'x-ratelimit-remaining': '99999999',
      'server-timing': `${timingEntry('auth', 0.01)}, ${timingEntry('cache', 0.01)}`,
      'x-cache': 'HIT',
      age: '3',
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(body.length),
    });
    const parts: [string, () => void][] = [
      [
        'the lane, whole (request and response objects included)',
        () => {
          const message = request(socket, headers);
          const sent = response(message, socket);
          app.server.emit('request', message, sent);
        },
      ],
      ['node: request and response objects only', () => void response(request(socket, headers), socket)],
      [
        'node: objects + writeHead(8 lane headers) + end(body)',
        () => {
          const sent = response(request(socket, headers), socket);
          sent.writeHead(200, laneHeaders());
          sent.end(body);
        },
      ],
      [
        'node: objects + writeHead(2 bare headers) + end(body)',
        () => {
          const sent = response(request(socket, headers), socket);
          sent.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(body.length) });
          sent.end(body);
        },
      ],
      ['key check (authenticator.acceptedNow)', () => void authenticator.acceptedNow(headers)],
      ['request id (randomUUID)', () => void requestIdOf({ headers: {} })],
      ['Server-Timing value (two entries)', () => void `${timingEntry('auth', performance.now() % 1)}, ${timingEntry('cache', 0.01)}`],
      ['cache look-up', () => void resultCache.lookUp(cacheKeyOf!)],
      [
        'rate-limit peek + take',
        () => {
          limits.peek('bench');
          limits.take('bench');
        },
      ],
      ['metrics (six series)', () => counts.count(0.0001, 12, body.length)],
      [
        'access line (built only, as the lane builds it)',
        () =>
          void `{"level":30,"time":${Date.now()},"pid":1,"name":"query-service","reqId":"${REQUEST_ID}","method":"GET","path":"${PATH.slice(0, 38)}","status":200,"ms":0,"msg":"request answered"}\n`,
      ],
      ['access line (built, gathered, written)', () => line.write(REQUEST_ID, 'GET', '/api/endpoints/query/usage.api-counts', 200, 0)],
      [
        'performance.now() x4',
        () => {
          performance.now();
          performance.now();
          performance.now();
          performance.now();
        },
      ],
    ];
    const results = parts.map((): { micros: number[]; scavenges: number[] } => ({ micros: [], scavenges: [] }));
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const [position, [, run]] of parts.entries()) {
        // garbage collections are reported to the observer a little later: let the last part's arrive before counting this one's
        await settled();
        const before = scavenges;
        const started = performance.now();
        for (let i = 0; i < REQUESTS; i += 1) run();
        const micros = ((performance.now() - started) * 1000) / REQUESTS;
        await settled();
        results[position]!.micros.push(micros);
        results[position]!.scavenges.push(((scavenges - before) * 100_000) / REQUESTS);
      }
      console.error(`cached-lane-parts: round ${round + 1} of ${ROUNDS}`);
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const rows: [string, number, number][] = [];
    for (const [position, [name]] of parts.entries()) rows.push([name, median(results[position]!.micros), median(results[position]!.scavenges)]);
    console.log(`\nnode ${process.version} ${process.execArgv.join(' ')}; median of ${ROUNDS} rounds of ${REQUESTS.toLocaleString('en')} calls each\n`);
    console.log('| part | us per call | scavenges per 100k |\n|---|---|---|');
    for (const [name, micros, count] of rows) console.log(`| ${name} | ${micros.toFixed(2)} | ${count.toFixed(0)} |`);
    line.flush();
    await app.close();
  } finally {
    await store.drop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error instanceof Error ? error.stack : error);
    process.exit(1);
  },
);
