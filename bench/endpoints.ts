import { randomBytes } from 'node:crypto';
import { loadConfig, type Config } from '../shared/config.ts';
import { ensureEventIndex, type StoredEvent } from '../shared/event-index.ts';
import { createLogger } from '../shared/logger.ts';
import { legacyIndexName } from '../shared/partitions.ts';
import { SOURCE_NAMES } from '../shared/sources.ts';
import { buildServer } from '../src/server.ts';
import { bulkLoad, withBenchStore } from './query-store.ts';
import { measureHttp, percentile } from './latency.ts';

/**
 * p50 / p99 latency of both saved endpoints over real HTTP, cached and uncached, at concurrency 1
 * and 16, over an edge index of 1,000,000 events spread over the last 7 days (100 projects, 1 or 2
 * request records each). Uncached runs use a server whose result cache holds nothing
 * (CACHE_MAX_BYTES=0), and give each usage request its own pattern (a never-matching alternative
 * `|zq<n>zq` appended) so concurrent calls are not folded into one query by the cache's single flight.
 *
 *   npm run bench:endpoints [-- --events 1000000]
 *
 * Starts its own Kafka and Elasticsearch unless KAFKA_BROKERS and ELASTICSEARCH_URL are set.
 */
const EVENTS = Number(process.argv[process.argv.indexOf('--events') + 1] ?? 0) || 1_000_000;
const PROJECTS = 100;
const BOOTSTRAP = `bench-bootstrap-${randomBytes(16).toString('hex')}`;
const AREAS = ['rest', 'storage', 'auth', 'realtime', 'graphql', 'functions'];
const WEEK_MS = 7 * 24 * 3600 * 1000;

const project = (n: number) => `proj${String(n).padStart(3, '0')}`;

function benchEvent(n: number, now: number): StoredEvent {
  const projectNumber = n % PROJECTS;
  const micros = (now - Math.floor(((n * 7919) % EVENTS) / EVENTS * WEEK_MS)) * 1000 + (n % 1000);
  const records = Array.from({ length: n % 5 === 0 ? 2 : 1 }, (_, r) => {
    const area = AREAS[(n + r) % AREAS.length]!;
    const path = `/${area}/v1/table${n % 50}`;
    return { url: `https://${project(projectNumber)}.supabase.co${path}?id=eq.${n % 997}`, path, method: 'GET', headers: { cf_connecting_ip: `203.0.113.${n % 250}` } };
  });
  return {
    id: `bench-${n}`,
    timestamp: `${new Date(Math.floor(micros / 1000)).toISOString().slice(0, 23)}${String(micros % 1000).padStart(3, '0')}Z`,
    event_message: `GET | 200 | 203.0.113.${n % 250} | ${records[0]!.url}`,
    project: project(projectNumber),
    metadata: { request: records, response: { status_code: 200, origin_time: n % 300 } },
  };
}

const CASES: [string, string][] = [
  ['usage.api-counts hourly', `/api/endpoints/query/usage.api-counts?interval=hourly&project=${encodeURIComponent('proj042\\.supabase\\.co')}`],
  ['usage.api-counts minutely', `/api/endpoints/query/usage.api-counts?interval=minutely&project=${encodeURIComponent('proj042\\.supabase\\.co')}`],
  ['usage.api-counts daily', `/api/endpoints/query/usage.api-counts?interval=daily&project=${encodeURIComponent('proj042\\.supabase\\.co')}`],
  ['logs.all, no bounds', '/api/endpoints/query/logs.all?project=proj042'],
  ['logs.all, 1-day window', '/api/endpoints/query/logs.all?project=proj042&iso_timestamp_start=START&iso_timestamp_end='],
];

const headers = { 'x-api-key': BOOTSTRAP };

async function main(): Promise<void> {
  const base = loadConfig(process.env);
  const now = Date.now();
  const table: string[] = [];
  await withBenchStore(base, 'endpoints', async ({ elasticsearch, kafkaBrokers, indexPrefix: prefix }) => {
    await Promise.all(SOURCE_NAMES.map((source) => ensureEventIndex(elasticsearch, legacyIndexName(prefix, source), 0)));
    await bulkLoad(elasticsearch, legacyIndexName(prefix, 'edge_logs'), EVENTS, (n) => benchEvent(n, now));
    const dayAgo = new Date(now - 24 * 3600 * 1000).toISOString();
    for (const cached of [true, false]) {
      // one key sends every request and the service's own speed is measured: no per-key rate limit
      const config: Config = { ...base, INDEX_PREFIX: prefix, BOOTSTRAP_API_KEY: BOOTSTRAP, LOG_LEVEL: 'silent', CACHE_MAX_BYTES: cached ? base.CACHE_MAX_BYTES : 0, QUERY_TIMEOUT_MS: 120_000, RATE_LIMIT_PER_MINUTE: 0 };
      const app = await buildServer({ config, logger: createLogger('bench', 'silent'), elasticsearch, kafkaBrokers });
      const address = await app.listen({ host: '127.0.0.1', port: 0 });
      try {
        for (const [label, path] of CASES) {
          const url = `${address}${path.replace('START', dayAgo)}`;
          const urlFor = cached || !label.startsWith('usage') ? () => url : (i: number) => `${url}${encodeURIComponent(`|zq${i}zq`)}`;
          // logs.all is never cached: its one row set is measured once, under "uncached"
          if (cached && label.startsWith('logs.all')) continue;
          await measureHttp({ url: urlFor, headers, requests: 3, concurrency: 1 }); // warm up: JIT, Lucene structures, and the cached result
          for (const concurrency of [1, 16]) {
            // uncached: enough requests that p99 is not just the slowest one
            const requests = cached ? 2000 : concurrency === 1 ? 200 : 320;
            const latencies = await measureHttp({ url: urlFor, headers, requests, concurrency });
            table.push(`| ${label} | ${cached ? 'cached' : 'uncached'} | ${concurrency} | ${requests} | ${percentile(latencies, 50).toFixed(1)} | ${percentile(latencies, 99).toFixed(1)} |`);
            console.error(table[table.length - 1]);
          }
        }
      } finally {
        await app.close();
      }
    }
  });
  console.log(`\n${EVENTS.toLocaleString('en')} edge events over 7 days, ${PROJECTS} projects; HTTP on 127.0.0.1 with the bootstrap key\n`);
  console.log('| case | cache | concurrency | requests | p50 ms | p99 ms |\n|---|---|---|---|---|---|');
  for (const row of table) console.log(row);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.stack : error);
  process.exit(1);
});
