import { randomBytes } from 'node:crypto';
import { eventPartitioning } from '../ingest/event-partition.ts';
import { answerHelp } from '../shared/command-help.ts';
import { loadConfig, type Config } from '../shared/config.ts';
import type { StoredEvent } from '../shared/event-index.ts';
import { createLogger } from '../shared/logger.ts';
import { formatMicros } from '../shared/stored-timestamp.ts';
import { buildServer } from '../src/server.ts';
import { percentile } from './latency.ts';
import { bulkLoad, withBenchStore } from './query-store.ts';

/**
 * A dashboard's "last hour" sandboxed SQL over many daily partitions, with its WHERE on timestamp
 * narrowing the partitions searched and without (the same query with `OR id = <none>`, which the
 * planner must not derive bounds from and which matches the same events). Requests alternate, so
 * both see the same machine load; logs.all is never cached.
 *
 *   npm run bench:sandbox-partitions [-- --events 300000 --days 10 --requests 100]
 *
 * Starts its own stack unless KAFKA_BROKERS and ELASTICSEARCH_URL are set; loads straight into Elasticsearch.
 */
answerHelp(`Usage: npm run bench:sandbox-partitions [-- --events 300000] [--days 10] [--requests 100]
A "last hour" sandboxed SQL query over --days daily partitions, with its WHERE on timestamp narrowing the
partitions searched and without, alternating: p50 of each and the ratio.
Uses KAFKA_BROKERS and ELASTICSEARCH_URL when both are set, else starts its own stack.`);

const argument = (name: string, fallback: number) => Number(process.argv[process.argv.indexOf(`--${name}`) + 1] ?? 0) || fallback;
const EVENTS = argument('events', 300_000);
const DAYS = argument('days', 10);
const REQUESTS = argument('requests', 100);
const PROJECTS = 10;
const HOUR_MS = 3_600_000;
const BOOTSTRAP = `bench-bootstrap-${randomBytes(16).toString('hex')}`;

/** Event n: spread evenly (in a scrambled order) over the `DAYS` days before `end`. */
function edgeEvent(n: number, end: number): StoredEvent {
  const spanMicros = DAYS * 24 * HOUR_MS * 1000;
  const micros = end * 1000 - 1 - Math.floor((((n * 7919) % EVENTS) / EVENTS) * spanMicros) - (n % 1000);
  const url = `https://x.supabase.co/rest/v1/table${n % 50}`;
  return {
    id: `bench-${n}`,
    timestamp: formatMicros(micros),
    event_message: `GET | 200 | ${url}`,
    project: `proj${n % PROJECTS}`,
    metadata: { request: [{ url, path: `/rest/v1/table${n % 50}`, method: 'GET' }], response: { status_code: n % 7 === 0 ? 500 : 200 } },
    shape: { version: 1, arrays: ['request'], multi: [] },
  };
}

const LAST_HOUR = 'timestamp > timestamp_sub(current_timestamp(), interval 1 hour)';
const CASES: Record<string, (where: string) => string> = {
  'count, last hour': (where) => `select count(*) as n from edge_logs where ${where}`,
  'newest 100, last hour': (where) => `select id, timestamp, event_message from edge_logs where ${where} order by timestamp desc limit 100`,
};

async function main(): Promise<void> {
  const base = loadConfig(process.env);
  const end = Date.now();
  const lines: string[] = [];
  await withBenchStore(base, 'sandbox-partitions', async ({ elasticsearch, kafkaBrokers, indexPrefix }) => {
    const partitioning = eventPartitioning(indexPrefix, 'edge_logs', 'daily', 36_500);
    console.error(`loading ${EVENTS.toLocaleString('en')} events over ${DAYS} days into daily partitions`);
    const partitions = await bulkLoad(
      elasticsearch,
      (event) => partitioning.indexOf(event),
      EVENTS,
      (n) => edgeEvent(n, end),
    );
    const config: Config = {
      ...base,
      INDEX_PREFIX: indexPrefix,
      BOOTSTRAP_API_KEY: BOOTSTRAP,
      LOG_LEVEL: 'silent',
      CACHE_MAX_BYTES: 0,
      RATE_LIMIT_PER_MINUTE: 0,
    };
    const app = await buildServer({ config, logger: createLogger('bench', 'silent'), elasticsearch, kafkaBrokers });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    lines.push(`${EVENTS.toLocaleString('en')} edge events over ${DAYS} days in ${partitions.length} daily partitions; concurrency 1, uncached`, '');
    lines.push('| query | WHERE | requests | p50 ms | p90 ms | p50 whole / narrowed |', '|---|---|---|---|---|---|');
    try {
      for (const [label, sqlOf] of Object.entries(CASES)) {
        const variants = { narrowed: sqlOf(LAST_HOUR), whole: sqlOf(`(${LAST_HOUR}) or id = 'no such id'`) };
        const latencies: Record<string, number[]> = { narrowed: [], whole: [] };
        const answers: Record<string, string> = {};
        for (let i = 1; i <= REQUESTS + 5; i += 1) {
          const order = i % 2 === 0 ? (['narrowed', 'whole'] as const) : (['whole', 'narrowed'] as const);
          for (const variant of order) {
            const started = process.hrtime.bigint();
            const response = await fetch(`${url}/api/endpoints/query/logs.all`, {
              method: 'POST',
              headers: { 'x-api-key': BOOTSTRAP, 'content-type': 'application/json' },
              body: JSON.stringify({ project: `proj${i % PROJECTS}`, sql: variants[variant] }),
            });
            const body = await response.text();
            if (response.status !== 200) throw new Error(`${label} ${variant}: ${response.status} ${body.slice(0, 300)}`);
            if (i > 5) latencies[variant]!.push(Number(process.hrtime.bigint() - started) / 1e6);
            answers[variant] = body;
          }
          if (answers.narrowed !== answers.whole) console.error(`${label}: answers differ at request ${i}`);
        }
        const p50 = (values: number[]) =>
          percentile(
            [...values].sort((a, b) => a - b),
            50,
          );
        for (const variant of ['narrowed', 'whole'] as const) {
          const sorted = [...latencies[variant]!].sort((a, b) => a - b);
          const ratio = variant === 'narrowed' ? (p50(latencies.whole!) / p50(latencies.narrowed!)).toFixed(2) : '';
          lines.push(`| ${label} | ${variant} | ${sorted.length} | ${percentile(sorted, 50).toFixed(1)} | ${percentile(sorted, 90).toFixed(1)} | ${ratio} |`);
        }
      }
    } finally {
      await app.close();
    }
  });
  console.log(`\n${lines.join('\n')}`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.stack : error);
  process.exit(1);
});
