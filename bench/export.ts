import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { answerHelp } from '../shared/command-help.ts';
import { loadConfig } from '../shared/config.ts';
import type { StoredEvent } from '../shared/event-index.ts';
import { partitionIndexName } from '../shared/partitions.ts';
import { microsecondsFromStoredTimestamp } from '../shared/stored-timestamp.ts';
import { edgeEvent } from './query-data.ts';
import { bulkLoad, withBenchStore } from './query-store.ts';
import { QUERY_SERVICE_ENV, QUERY_SERVICE_NODE_ARGS } from '../shared/query-service-start.ts';
import { startBenchProcess, type BenchProcess } from './service-process.ts';

answerHelp(`Usage: npm run bench:export [-- --events 1000000] [--page-size 100000]
Export rate and memory: --events edge events of one project exported whole through logs.all as NDJSON, then CSV,
by pages of --page-size rows; prints rows/s and the query service's RSS before and at its peak.
Uses KAFKA_BROKERS and ELASTICSEARCH_URL when both are set, else starts its own stack.`);

/**
 * Export rate and memory: `events` edge events of one project over the last week are bulk-loaded,
 * then exported whole through logs.all (format=ndjson, then format=csv), page after page by the
 * X-Next-Cursor header, each format by a fresh query service process whose resident set is read
 * from /proc before the export and at its peak (VmHWM). The client reads every byte and counts rows.
 *
 *   npm run bench:export [-- --events 1000000 --page-size 100000]
 *
 * Starts its own Kafka and Elasticsearch unless KAFKA_BROKERS and ELASTICSEARCH_URL are set.
 */
const argument = (name: string, fallback: number) => Number(process.argv[process.argv.indexOf(`--${name}`) + 1] ?? 0) || fallback;
const EVENTS = argument('events', 1_000_000);
const PAGE_SIZE = argument('page-size', 100_000);
const PROJECT = 'proj000';
const BOOTSTRAP_KEY = 'bench-export-bootstrap-key-0123456789';

interface ExportRun {
  format: 'ndjson' | 'csv';
  rows: number;
  pages: number;
  bytes: number;
  seconds: number;
  rssBeforeMb: number;
  peakRssMb: number;
}

function rssMbOf(pid: number): number {
  return Math.round(Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024);
}

/** Every page of the project's events in `format`, following X-Next-Cursor; rows are counted by line. */
async function exportAll(service: BenchProcess, format: 'ndjson' | 'csv'): Promise<ExportRun> {
  const rssBeforeMb = rssMbOf(service.pid);
  const started = performance.now();
  let rows = 0;
  let bytes = 0;
  let pages = 0;
  let cursor: string | undefined;
  do {
    const url = `${service.address}/api/endpoints/query/logs.all?project=${PROJECT}&format=${format}&page_size=${PAGE_SIZE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const response = await fetch(url, { headers: { 'x-api-key': BOOTSTRAP_KEY } });
    if (response.status !== 200) throw new Error(`page ${pages + 1}: status ${response.status}: ${await response.text()}`);
    cursor = response.headers.get('x-next-cursor') ?? undefined;
    let lines = 0;
    for await (const chunk of response.body!) {
      const buffer = chunk as Uint8Array;
      bytes += buffer.length;
      for (const byte of buffer) if (byte === 10) lines += 1;
    }
    // CSV: the header row is not a row, and quoted fields never hold a newline here (the generated events have none)
    rows += format === 'csv' ? lines - 1 : lines;
    pages += 1;
    const seconds = (performance.now() - started) / 1000;
    console.error(
      `${format}: page ${pages}, ${rows.toLocaleString('en')} rows, ${Math.round(rows / seconds).toLocaleString('en')} rows/s, service peak RSS ${service.peakRssMb()} MB`,
    );
  } while (cursor);
  return { format, rows, pages, bytes, seconds: (performance.now() - started) / 1000, rssBeforeMb, peakRssMb: service.peakRssMb() };
}

const config = loadConfig(process.env);
await withBenchStore(config, 'export', async (store) => {
  const endMs = Date.now();
  console.error(`loading ${EVENTS.toLocaleString('en')} edge events of one project over the last 7 days`);
  const daily = (event: StoredEvent) =>
    partitionIndexName(store.indexPrefix, 'edge_logs', 'daily', Math.floor(microsecondsFromStoredTimestamp(event.timestamp) / 1000));
  await bulkLoad(store.elasticsearch, daily, EVENTS, (n) => ({ ...edgeEvent(n, endMs), project: PROJECT }));
  const runs: ExportRun[] = [];
  for (const format of ['ndjson', 'csv'] as const) {
    const service = await startBenchProcess({
      script: 'src/main.ts',
      env: {
        KAFKA_BROKERS: store.kafkaBrokers.join(','),
        ELASTICSEARCH_URL: store.elasticsearchUrl,
        INDEX_PREFIX: store.indexPrefix,
        BOOTSTRAP_API_KEY: BOOTSTRAP_KEY,
        RATE_LIMIT_PER_MINUTE: '0',
        EXPORT_ROWS_PER_MINUTE: '0',
        LOG_LEVEL: 'warn',
        PORT: '0',
        ...QUERY_SERVICE_ENV,
      },
      // started as npm start and the image start it, so the RSS is what an operator sees
      nodeArgs: QUERY_SERVICE_NODE_ARGS,
      // kept, so a page cut short can be explained
      logFile: path.join(tmpdir(), `bench-export-${format}.log`),
      announces: /^query: (http:\/\/\S+)$/,
    });
    try {
      // a first small export loads the code paths, so the baseline is the service at rest, ready
      await (
        await fetch(`${service.address}/api/endpoints/query/logs.all?project=${PROJECT}&format=${format}&page_size=10`, {
          headers: { 'x-api-key': BOOTSTRAP_KEY },
        })
      ).arrayBuffer();
      const run = await exportAll(service, format);
      if (run.rows !== EVENTS) throw new Error(`${format}: exported ${run.rows} rows of ${EVENTS}`);
      runs.push(run);
    } finally {
      await service.stop();
    }
  }
  console.log(
    `\nexport of ${EVENTS.toLocaleString('en')} events through logs.all, pages of ${PAGE_SIZE.toLocaleString('en')} (one query service process per format)`,
  );
  console.log('| format | rows | pages | MB sent | seconds | rows/s | service RSS before | service peak RSS |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const run of runs) {
    const cells = [
      run.format,
      run.rows.toLocaleString('en'),
      run.pages,
      (run.bytes / 1e6).toFixed(0),
      run.seconds.toFixed(1),
      Math.round(run.rows / run.seconds).toLocaleString('en'),
      `${run.rssBeforeMb} MB`,
      `${run.peakRssMb} MB`,
    ];
    console.log(`| ${cells.join(' | ')} |`);
  }
});
