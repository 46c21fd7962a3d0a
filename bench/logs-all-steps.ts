import { answerHelp } from '../shared/command-help.ts';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import type { estypes } from '@elastic/elasticsearch';
import { findEndpoint } from '../queries/index.ts';
import { loadConfig, type Config } from '../shared/config.ts';
import { createLogger } from '../shared/logger.ts';
import { encodeAnswer } from '../src/endpoints/answer-body.ts';
import { validateParameters } from '../src/endpoints/request.ts';
import { search, searchText } from '../src/executor/elasticsearch.ts';
import { writtenRows } from '../src/executor/rows/log-row-text.ts';
import { columnRows } from '../src/executor/rows/logs.ts';
import { planEndpointQuery } from '../src/planner/index.ts';
import { buildServer } from '../src/server.ts';
import { percentile } from './latency.ts';
import { BENCH_PROJECT, loadEdgeEvents } from './query-data.ts';
import { searchHttpRequest } from './query-phase.ts';
import { withBenchStore } from './query-store.ts';

answerHelp(`Usage: npx tsx bench/logs-all-steps.ts [--events 20000] [--requests 200] [--baseline <checkout>]
logs.all's steps timed one by one beside its direct request. Needs KAFKA_BROKERS and ELASTICSEARCH_URL.`);

/**
 * Where logs.all's time goes beside its direct request, one step at a time, each the p50 of
 * sequential runs: the plan's search sent as raw HTTP (the benchmark's direct side), sent through the
 * Elasticsearch client, through our store wrapper (src/executor/elasticsearch.ts), then with the rows
 * made (columnRows) and encoded, the store's text (searchText: a plain request on the client's undici pool,
 * src/executor/plain-search.ts) and the rows written from it as it is read (writtenRows, the service's path since issue 20's text
 * rows), then our service over HTTP (auth, route, plan, execution, answer).
 *
 * With --baseline <checkout> (the code before a change, with node_modules), that checkout's service
 * takes its turns too, as the last row.
 *
 *   KAFKA_BROKERS=... ELASTICSEARCH_URL=... npx tsx bench/logs-all-steps.ts [--events 20000] [--requests 200] [--baseline <checkout>]
 */
const argument = (name: string, fallback: number) => Number(process.argv[process.argv.indexOf(name) + 1] ?? 0) || fallback;
const EVENTS = argument('--events', 20_000);
const REQUESTS = argument('--requests', 200);
const BOOTSTRAP = `bench-bootstrap-${randomBytes(16).toString('hex')}`;
const BASELINE = process.argv.includes('--baseline') ? process.argv[process.argv.indexOf('--baseline') + 1] : undefined;

// one kept-alive connection per step, as autocannon holds: fetch here took twice the client's time for the same search
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** One request over a kept-alive connection; its body as text, which a status other than 200 fails. */
function send(
  url: string,
  options: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string },
  onHeaders?: (headers: http.IncomingHttpHeaders) => void,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: options.method, headers: options.headers, agent }, (response) => {
      onHeaders?.(response.headers);
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        response.statusCode === 200 ? resolve(Buffer.concat(chunks).toString()) : reject(new Error(`${url}: status ${response.statusCode}`)),
      );
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(options.body);
  });
}

/**
 * Each step's p50, the steps run in turn (one run of each, REQUESTS times) so a change in the machine's
 * load falls on all of them; every other turn in reverse order, as a step measured right after another
 * came out slower (the same service 13.5 ms after, 13.0 ms before, the other).
 */
async function interleavedP50(steps: [string, () => Promise<unknown>][]): Promise<[string, number][]> {
  for (let i = 0; i < 20; i += 1) for (const [, work] of steps) await work();
  const latencies = steps.map((): number[] => []);
  for (let i = 0; i < REQUESTS; i += 1) {
    const turn = i % 2 === 0 ? [...steps.entries()] : [...steps.entries()].reverse();
    for (const [position, [, work]] of turn) {
      const started = performance.now();
      await work();
      latencies[position]!.push(performance.now() - started);
    }
  }
  return steps.map(([name], position) => [
    name,
    percentile(
      latencies[position]!.sort((a, b) => a - b),
      50,
    ),
  ]);
}

async function main(): Promise<void> {
  const base = loadConfig(process.env);
  const endMs = Date.now();
  const rows: [string, number][] = [];
  await withBenchStore(base, 'logs-steps', async ({ elasticsearch, elasticsearchUrl, kafkaBrokers, indexPrefix }) => {
    await loadEdgeEvents(elasticsearch, indexPrefix, 0, EVENTS, endMs);
    const logs = findEndpoint('logs.all')!;
    const params = { project: BENCH_PROJECT };
    const plan = planEndpointQuery(logs, validateParameters(logs, params), { now: Date.now(), projects: null, indexPrefix });
    const scan = plan.scans[0]!;
    if (scan.kind !== 'events') throw new Error('logs.all plans one event scan');
    const request: estypes.SearchRequest = { ...scan.search, size: scan.take.kind === 'limit' ? scan.take.rows : scan.search.size };
    const raw = searchHttpRequest(request);
    const columns = scan.columns.map((column) => column.name);
    const store = { elasticsearch, timeoutMs: 30_000 };
    const rowsOf = async () => columnRows((await search(request, store)).hits?.hits ?? [], columns);
    // the service's own account of each answer (Server-Timing), per phase
    const phases = new Map<string, number[]>();
    const phasesOf = (headers: http.IncomingHttpHeaders) => {
      for (const [, phase, ms] of String(headers['server-timing'] ?? '').matchAll(/(\w+);dur=([\d.]+)/g))
        phases.set(phase!, [...(phases.get(phase!) ?? []), Number(ms)]);
    };
    const config: Config = { ...base, INDEX_PREFIX: indexPrefix, BOOTSTRAP_API_KEY: BOOTSTRAP, LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: 0 };
    const logger = createLogger('query-service', 'silent');
    const app = await buildServer({
      config,
      logger,
      accessLogger: createLogger('query-service', 'info', { redact: false, buffered: true }),
      elasticsearch,
      kafkaBrokers,
    });
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    const baseline = BASELINE === undefined ? undefined : ((await import(path.join(BASELINE, 'src/server.ts'))) as typeof import('../src/server.ts'));
    // the baseline's access line as its src/main.ts wrote it
    const before = await baseline?.buildServer({
      config,
      logger,
      accessLogger: createLogger('query-service', 'info', { redact: false }),
      elasticsearch,
      kafkaBrokers,
    });
    const beforeAddress = await before?.listen({ host: '127.0.0.1', port: 0 });
    try {
      const url = `${address}/api/endpoints/query/logs.all?${new URLSearchParams(params)}`;
      const beforeUrl = `${beforeAddress}/api/endpoints/query/logs.all?${new URLSearchParams(params)}`;
      rows.push(
        ...(await interleavedP50([
          [
            "the plan's search as raw HTTP (the direct side)",
            () => send(`${elasticsearchUrl}${raw.path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: raw.body }),
          ],
          ['the same through the Elasticsearch client', () => elasticsearch.search(request)],
          ['through our store wrapper (search)', () => search(request, store)],
          ['+ rows made (columnRows)', rowsOf],
          ['+ answer encoded (encodeAnswer)', async () => encodeAnswer(await rowsOf(), { redact: false })],
          ["the store's text as a plain request (searchText)", () => searchText(request, store)],
          [
            '+ rows written from the text as it is read (writtenRows, encodeAnswer)',
            async () => encodeAnswer((await writtenRows(await searchText(request, store), false))?.rows ?? [], { redact: false }),
          ],
          ['our service over HTTP', () => send(url, { method: 'GET', headers: { 'x-api-key': BOOTSTRAP } }, phasesOf)],
          ...(before
            ? [
                [`the baseline's service over HTTP (${BASELINE})`, () => send(beforeUrl, { method: 'GET', headers: { 'x-api-key': BOOTSTRAP } })] as [
                  string,
                  () => Promise<unknown>,
                ],
              ]
            : []),
        ])),
      );
      for (const [phase, values] of phases)
        rows.push([
          `  of which Server-Timing ${phase}`,
          percentile(
            values.sort((a, b) => a - b),
            50,
          ),
        ]);
    } finally {
      await app.close();
      await before?.close();
    }
  });
  const direct = rows[0]![1];
  console.log(`\nlogs.all over ${EVENTS.toLocaleString('en')} edge events (project ${BENCH_PROJECT}); p50 of ${REQUESTS} sequential runs each\n`);
  console.log('| step | p50 ms | / direct |\n|---|---|---|');
  for (const [step, ms] of rows) console.log(`| ${step} | ${ms.toFixed(2)} | ${(ms / direct).toFixed(2)}x |`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.stack : error);
  process.exit(1);
});
