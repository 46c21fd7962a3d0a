/**
 * `npm run bench:event-loop` (second part; alone: `npx tsx bench/hostile-requests.ts`): the costliest
 * sandboxed requests issue 18 found, each sent over HTTP to a fresh query-service process, with the
 * service's event loop watched from outside (a /health poll every 20 ms from a worker thread: a
 * blocked loop answers it late) and its peak RSS read from /proc. Then one key floods the engine while
 * a second key asks an ordinary question once a second. Uses KAFKA_BROKERS / ELASTICSEARCH_URL, or a
 * stack of its own; loads its own events under a prefix of its own and deletes them afterwards.
 */
import { Worker } from 'node:worker_threads';
import { loadConfig } from '../shared/config.ts';
import { KeyStore } from '../src/auth/key-store.ts';
import { percentile } from './latency.ts';
import type { StoredEvent } from '../shared/event-index.ts';
import { partitionIndexName } from '../shared/partitions.ts';
import { microsecondsFromStoredTimestamp } from '../shared/stored-timestamp.ts';
import { edgeEvent } from './query-data.ts';
import { bulkLoad, withBenchStore } from './query-store.ts';
import { startBenchProcess, type BenchProcess } from './service-process.ts';

const BOOTSTRAP_KEY = 'bench-hostile-requests-bootstrap-key-0123456789';
/** More edge events than one request may scan (SANDBOX_MAX_SCAN_EVENTS, 100,000 by default). */
const EDGE_EVENTS = 150_000;
const REQUEST_TIMEOUT_MS = 90_000;
const FLOOD_SECONDS = 30;

interface HostileInput {
  name: string;
  /** The finding of issue 18 it stands for. */
  finding: number;
  params: Record<string, string>;
}

const nestedSubstr = (depth: number): string => (depth === 0 ? 'id' : `substr(${nestedSubstr(depth - 1)},1)`);
const INPUTS: HostileInput[] = [
  { finding: 1, name: 'parse_timestamp with %E*S x22 (124 bytes)', params: { sql: `select parse_timestamp('${'%E*S'.repeat(22)}', 'x') as t` } },
  {
    finding: 2,
    name: '256 columns of substr nested 8 deep (23.5 KB)',
    params: { sql: `select ${Array.from({ length: 256 }, (_, i) => `${nestedSubstr(8)} as c${i}`).join(', ')} from edge_logs limit 1` },
  },
  { finding: 3, name: '3,000,000 rows (generate_array of 3,000,000)', params: { sql: 'select x from unnest(generate_array(1, 3000000)) as x' } },
  {
    finding: 3,
    name: '3,000,000 rows (a cross join of 3,000 x 1,000)',
    params: { sql: 'select a * 1000 + b as x from unnest(generate_array(1, 3000)) as a cross join unnest(generate_array(1, 1000)) as b' },
  },
  { finding: 3, name: '300 rows of a 1 MB string', params: { sql: "select repeat('x', 1000000) as s from unnest(generate_array(1, 300)) as x" } },
  {
    finding: 5,
    name: '64 scans of edge_logs in one union all',
    params: { sql: Array.from({ length: 64 }, () => 'select id from edge_logs').join(' union all ') },
  },
  {
    finding: 5,
    name: '32 scans of edge_logs in one union all',
    params: { sql: Array.from({ length: 32 }, () => 'select id from edge_logs').join(' union all ') },
  },
  {
    finding: 6,
    name: 'OR list of 100 record-field comparisons',
    params: {
      sql: `select id from edge_logs cross join unnest(metadata) as m cross join unnest(m.request) as r where ${Array.from({ length: 100 }, (_, i) => `r.path = '/p${i}'`).join(' or ')}`,
    },
  },
  { finding: 6, name: 'LQL regex on a field holding records', params: { lql: 'f:edge_logs m.request:~"ne-1"' } },
  {
    finding: 10,
    name: 'LQL with 99 regex clauses (and f:, the 100-clause limit)',
    params: { lql: `f:edge_logs ${Array.from({ length: 99 }, (_, i) => `m.request.path:~"^/rest/v1/[a-z]+(x|y)*${i}"`).join(' ')}` },
  },
];

/** A worker thread polling /health every 20 ms; the worst answer time while it ran is the loop's worst block. */
function watchHealth(address: string): { stop(): Promise<{ worstMs: number; polls: number; failed: number }> } {
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     let worst = 0, polls = 0, failed = 0, running = true;
     parentPort.on('message', () => { running = false; });
     (async () => {
       while (running) {
         const started = performance.now();
         try { const response = await fetch(workerData + '/health'); await response.arrayBuffer(); if (!response.ok) failed += 1; }
         catch { failed += 1; }
         worst = Math.max(worst, performance.now() - started); polls += 1;
         await new Promise((resolve) => setTimeout(resolve, 20));
       }
       parentPort.postMessage({ worstMs: worst, polls, failed });
     })();`,
    { eval: true, workerData: address },
  );
  return {
    stop: () =>
      new Promise((resolve) => {
        worker.once('message', (result) => void worker.terminate().then(() => resolve(result)));
        worker.postMessage('stop');
      }),
  };
}

interface Outcome {
  status: number | string;
  code?: string;
  bytes: number;
  ms: number;
}

async function ask(service: BenchProcess, key: string, params: Record<string, string>, project: string): Promise<Outcome> {
  const started = performance.now();
  try {
    const response = await fetch(`${service.address}/api/endpoints/query/logs.all`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ project, ...params }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const body = Buffer.from(await response.arrayBuffer());
    let code: string | undefined;
    if (response.status !== 200) code = (JSON.parse(body.toString('utf8')) as { error?: { code?: string } }).error?.code;
    return { status: response.status, code, bytes: body.length, ms: performance.now() - started };
  } catch (error) {
    const name = (error as Error).name === 'TimeoutError' ? `no answer in ${REQUEST_TIMEOUT_MS / 1000} s` : 'connection failed';
    return { status: name, bytes: 0, ms: performance.now() - started };
  }
}

const alive = (service: BenchProcess) => {
  try {
    process.kill(service.pid, 0);
    return true;
  } catch {
    return false;
  }
};

const config = loadConfig(process.env);
await withBenchStore(config, 'hostile', async (store) => {
  const endMs = Date.now();
  // every event in one project, so one request's scans can pass the scan limit
  const project = 'proj000';
  console.error(`loading ${EDGE_EVENTS.toLocaleString('en')} edge events of one project over the last 7 days`);
  const daily = (event: StoredEvent) =>
    partitionIndexName(store.indexPrefix, 'edge_logs', 'daily', Math.floor(microsecondsFromStoredTimestamp(event.timestamp) / 1000));
  await bulkLoad(store.elasticsearch, daily, EDGE_EVENTS, (n) => ({ ...edgeEvent(n, endMs), project }));
  const env = (extra: Record<string, string> = {}) => ({
    KAFKA_BROKERS: store.kafkaBrokers.join(','),
    ELASTICSEARCH_URL: store.elasticsearchUrl,
    INDEX_PREFIX: store.indexPrefix,
    BOOTSTRAP_API_KEY: BOOTSTRAP_KEY,
    RATE_LIMIT_PER_MINUTE: '0',
    LOG_LEVEL: 'warn',
    PORT: '0',
    ...extra,
  });
  const start = (extra?: Record<string, string>) => startBenchProcess({ script: 'src/main.ts', env: env(extra), announces: /^query: (http:\/\/\S+)$/ });

  console.log(`\nhostile sandboxed requests over HTTP, one fresh query service each (${EDGE_EVENTS.toLocaleString('en')} edge events)`);
  console.log('| finding | input | answer | bytes | service: worst /health wait | peak RSS | alive after |');
  console.log('|---|---|---|---|---|---|---|');
  for (const input of INPUTS) {
    console.error(`input: ${input.name}`);
    const service = await start();
    // a first ordinary query starts the engine and reads the field types, so they are not measured
    await ask(service, BOOTSTRAP_KEY, { sql: 'select count(*) as n from edge_logs' }, project);
    const watch = watchHealth(service.address);
    const outcome = await ask(service, BOOTSTRAP_KEY, input.params, project);
    const health = await watch.stop();
    const stillAlive = alive(service);
    const rss = stillAlive ? `${service.peakRssMb()} MB` : 'n/a (died)';
    const answer = `${outcome.status}${outcome.code ? ` ${outcome.code}` : ''} after ${(outcome.ms / 1000).toFixed(1)} s`;
    console.log(
      `| ${input.finding} | ${input.name} | ${answer} | ${outcome.bytes.toLocaleString('en')} | ${health.worstMs.toFixed(0)} ms (${health.failed} of ${health.polls} polls failed) | ${rss} | ${stillAlive ? 'yes' : 'no'} |`,
    );
    await service.stop();
  }

  console.error(`flood: one key keeps 8 engine queries running for ${FLOOD_SECONDS} s while another asks once a second`);
  const service = await start({ QUERY_TIMEOUT_MS: '10000' });
  const other = (await new KeyStore(store.elasticsearch, store.indexPrefix, 0).create({ account: 'bench-other', endpoints: 'all', projects: null })).key;
  await ask(service, BOOTSTRAP_KEY, { sql: 'select count(*) as n from edge_logs' }, project);
  const flood = { sql: 'select sum(mod(a * b, 7)) as n from unnest(generate_array(1, 100000)) as a cross join unnest(generate_array(1, 100000)) as b' };
  const ordinary = { sql: 'select id, timestamp, event_message from edge_logs order by timestamp desc limit 10' };
  const stopAt = performance.now() + FLOOD_SECONDS * 1000;
  const flooding: Outcome[] = [];
  const answered: Outcome[] = [];
  const flooder = async () => {
    while (performance.now() < stopAt) flooding.push(await ask(service, BOOTSTRAP_KEY, flood, project));
  };
  const asker = async () => {
    while (performance.now() < stopAt) {
      answered.push(await ask(service, other, ordinary, project));
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  };
  await Promise.all([...Array.from({ length: 8 }, flooder), asker()]);
  await service.stop();
  const tally = (outcomes: Outcome[]) => {
    const counts = new Map<string, number>();
    for (const outcome of outcomes)
      counts.set(
        `${outcome.status}${outcome.code ? ` ${outcome.code}` : ''}`,
        (counts.get(`${outcome.status}${outcome.code ? ` ${outcome.code}` : ''}`) ?? 0) + 1,
      );
    return [...counts].map(([answer, count]) => `${count} x ${answer}`).join(', ');
  };
  const latencies = (outcomes: Outcome[]) => {
    const sorted = outcomes.map((outcome) => outcome.ms).sort((a, b) => a - b);
    return `p50 ${(percentile(sorted, 50) / 1000).toFixed(2)} s, max ${(sorted.at(-1)! / 1000).toFixed(2)} s`;
  };
  console.log(`\none key flooding the engine (8 concurrent sums over a cross join of 100,000 x 100,000, QUERY_TIMEOUT_MS 10000) for ${FLOOD_SECONDS} s`);
  console.log('| key | requests | answers | latency |');
  console.log('|---|---|---|---|');
  console.log(`| flooding key | ${flooding.length} | ${tally(flooding)} | ${latencies(flooding)} |`);
  console.log(`| other key, the 10 newest events once a second | ${answered.length} | ${tally(answered)} | ${latencies(answered)} |`);
});
