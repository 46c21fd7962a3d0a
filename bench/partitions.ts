import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { eventPartitioning } from '../ingest/event-partition.ts';
import { loadConfig, repositoryRoot, type Config } from '../shared/config.ts';
import type { StoredEvent } from '../shared/event-index.ts';
import { createLogger } from '../shared/logger.ts';
import { legacyIndexName } from '../shared/partitions.ts';
import { formatMicros } from '../shared/stored-timestamp.ts';
import { buildServer } from '../src/server.ts';
import { percentile } from './latency.ts';
import { bulkLoad, withBenchStore } from './query-store.ts';
import { answerHelp } from '../shared/command-help.ts';

answerHelp(`Usage: npm run bench:partitions [-- --events 3000000] [--days 30] [--requests 300]
Time partitions against one index per source: the same edge events over --days days loaded both ways,
logs.all and usage.api-counts answered by one query service per layout, --requests requests each.
Uses KAFKA_BROKERS and ELASTICSEARCH_URL when both are set, else starts its own stack.`);

/**
 * Time partitions against one index per source, side by side: the same edge events (3,000,000 over
 * 30 days by default, 100 projects) are bulk-loaded twice, once into daily partitions and once into
 * a single index, and two query services (one per layout, same process) answer logs.all and
 * usage.api-counts with a one-hour window. Requests alternate between the layouts, so both see the
 * same machine load; neither is cached (logs.all never is; each usage request has its own pattern).
 *
 *   npm run bench:partitions [-- --events 3000000 --days 30 --requests 300]
 *
 * Starts its own Kafka and Elasticsearch unless KAFKA_BROKERS and ELASTICSEARCH_URL are set. The
 * events are loaded straight into Elasticsearch (not through Kafka), for speed.
 */
const argument = (name: string, fallback: number) => Number(process.argv[process.argv.indexOf(`--${name}`) + 1] ?? 0) || fallback;
const EVENTS = argument('events', 3_000_000);
const DAYS = argument('days', 30);
const REQUESTS = argument('requests', 300);
const PROJECTS = 100;
const HOUR_MS = 3_600_000;
const BOOTSTRAP = `bench-bootstrap-${randomBytes(16).toString('hex')}`;
const AREAS = ['rest', 'storage', 'auth', 'realtime'];

const project = (n: number) => `proj${String(n).padStart(3, '0')}`;

/** Event n of the run: spread evenly (in a scrambled order) over the `DAYS` days before `end`. */
function edgeEvent(n: number, end: number): StoredEvent {
  const spanMicros = DAYS * 24 * HOUR_MS * 1000;
  const micros = end * 1000 - 1 - Math.floor((((n * 7919) % EVENTS) / EVENTS) * spanMicros) - (n % 1000);
  const projectNumber = n % PROJECTS;
  const area = AREAS[n % AREAS.length]!;
  const url = `https://${project(projectNumber)}.supabase.co/${area}/v1/table${n % 50}?id=eq.${n % 997}`;
  const metadata = { request: [{ url, path: `/${area}/v1/table${n % 50}`, method: 'GET' }], response: { status_code: 200, origin_time: n % 300 } };
  return {
    id: `bench-${n}`,
    timestamp: formatMicros(micros),
    event_message: `GET | 200 | ${url}`,
    project: project(projectNumber),
    metadata,
    shape: { version: 1, arrays: ['request'], multi: [] },
  };
}

interface Row {
  endpoint: string;
  layout: string;
  requests: number;
  p50: number;
  p90: number;
  p99: number;
}

async function main(): Promise<void> {
  const base = loadConfig(process.env);
  // the data ends now, so usage.api-counts' own window (the last hour) holds events
  const end = Date.now();
  const rows: Row[] = [];
  await withBenchStore(base, 'partitions', async ({ elasticsearch, kafkaBrokers, indexPrefix }) => {
    const layouts = { partitioned: `${indexPrefix}daily-`, single: `${indexPrefix}single-` };
    const partitioning = eventPartitioning(layouts.partitioned, 'edge_logs', 'daily', 36_500);
    console.error(`loading ${EVENTS.toLocaleString('en')} events over ${DAYS} days into daily partitions, then into one index`);
    const partitions = await bulkLoad(
      elasticsearch,
      (event) => partitioning.indexOf(event),
      EVENTS,
      (n) => edgeEvent(n, end),
    );
    await bulkLoad(elasticsearch, legacyIndexName(layouts.single, 'edge_logs'), EVENTS, (n) => edgeEvent(n, end));
    console.error(`${partitions.length} partitions, 1 single index`);

    const services: Record<string, string> = {};
    const apps = [];
    for (const [layout, prefix] of Object.entries(layouts)) {
      const config: Config = {
        ...base,
        INDEX_PREFIX: prefix,
        BOOTSTRAP_API_KEY: BOOTSTRAP,
        LOG_LEVEL: 'silent',
        CACHE_MAX_BYTES: 0,
        QUERY_TIMEOUT_MS: 120_000,
        RATE_LIMIT_PER_MINUTE: 0,
      };
      const app = await buildServer({ config, logger: createLogger('bench', 'silent'), elasticsearch, kafkaBrokers });
      services[layout] = await app.listen({ host: '127.0.0.1', port: 0 });
      apps.push(app);
    }
    try {
      const cases: Record<string, (i: number) => string> = {
        // a different hour of the 30 days each time, one project
        'logs.all, 1-hour window': (i) => {
          const start = end - 1 - (((i * 7237) % (DAYS * 24 - 1)) + 1) * HOUR_MS;
          return `/api/endpoints/query/logs.all?project=${project(i % PROJECTS)}&iso_timestamp_start=${new Date(start).toISOString()}&iso_timestamp_end=${new Date(start + HOUR_MS).toISOString()}`;
        },
        // the last hour (the endpoint's own window); a never-matching alternative keeps each request out of the cache
        'usage.api-counts hourly (last hour)': (i) =>
          `/api/endpoints/query/usage.api-counts?interval=hourly&project=${encodeURIComponent(`${project(i % PROJECTS)}\\.supabase\\.co|zq${i}zq`)}`,
      };
      for (const [label, pathOf] of Object.entries(cases)) {
        const latencies: Record<string, number[]> = { partitioned: [], single: [] };
        for (let i = 1; i <= REQUESTS + 5; i += 1) {
          // alternate which layout goes first, so neither always meets a warmer cache
          const order = i % 2 === 0 ? ['partitioned', 'single'] : ['single', 'partitioned'];
          for (const layout of order) {
            const started = process.hrtime.bigint();
            const response = await fetch(`${services[layout]}${pathOf(i)}`, { headers: { 'x-api-key': BOOTSTRAP } });
            const body = await response.text();
            if (response.status !== 200) throw new Error(`${layout} ${label}: ${response.status} ${body.slice(0, 300)}`);
            // the first five are warm-up (JIT, Lucene structures)
            if (i > 5) latencies[layout]!.push(Number(process.hrtime.bigint() - started) / 1e6);
          }
          if (i % 100 === 0) console.error(`${label}: ${i} / ${REQUESTS + 5}`);
        }
        for (const [layout, values] of Object.entries(latencies)) {
          values.sort((a, b) => a - b);
          rows.push({
            endpoint: label,
            layout,
            requests: values.length,
            p50: percentile(values, 50),
            p90: percentile(values, 90),
            p99: percentile(values, 99),
          });
        }
      }
    } finally {
      for (const app of apps) await app.close();
    }
  });

  const lines = [
    `${EVENTS.toLocaleString('en')} edge events over ${DAYS} days (${PROJECTS} projects), daily partitions against one index; concurrency 1, uncached, HTTP on 127.0.0.1`,
    '',
    '| endpoint | layout | requests | p50 ms | p90 ms | p99 ms | p50 single / partitioned |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const row of rows) {
    const single = rows.find((other) => other.endpoint === row.endpoint && other.layout === 'single')!;
    const ratio = row.layout === 'partitioned' ? (single.p50 / row.p50).toFixed(2) : '';
    lines.push(`| ${row.endpoint} | ${row.layout} | ${row.requests} | ${row.p50.toFixed(1)} | ${row.p90.toFixed(1)} | ${row.p99.toFixed(1)} | ${ratio} |`);
  }
  console.log(`\n${lines.join('\n')}`);
  const results = path.join(repositoryRoot, 'bench', 'results');
  mkdirSync(results, { recursive: true });
  const file = path.join(results, `partitions-${new Date().toISOString().slice(0, 10)}.json`);
  writeFileSync(file, `${JSON.stringify({ events: EVENTS, days: DAYS, projects: PROJECTS, rows }, null, 2)}\n`);
  console.error(`results written to ${path.relative(repositoryRoot, file)}`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.stack : error);
  process.exit(1);
});
