/**
 * `npm run bench`: the whole benchmark in one command, against one local stack it starts and stops
 * (or KAFKA_BROKERS / ELASTICSEARCH_URL when both are set). Ingest first (ours, the direct bulk
 * ceiling, a bare consumer, the rsyslog peer, freshness), then queries (every endpoint at concurrency
 * 1, 16 and 64 over two data sets, beside Elasticsearch sent directly and a bare fastify route).
 * Prints the table, writes it as JSON and Markdown, and draws the chart:
 *
 *   bench/results/<date>[-quick].json, .md, .png
 *
 *   npm run bench                  full: 1,000,000 events ingested; 1,000,000 and 10,000,000 queried (about an hour)
 *   npm run bench -- --quick       every phase at reduced sizes (50,000 ingested; 50,000 and 250,000 queried;
 *                                  1 s per point at c=1 and 16 after three warm-up probes, 5 of the studio queries), under five minutes
 *   npm run bench -- --only ingest|queries
 *   npm run bench -- --no-peer     skip rsyslog
 *   npm run bench -- --no-zstd     skip the worker's drains of zstd-compressed input
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig, repositoryRoot } from '../shared/config.ts';
import { ELASTICSEARCH_VERSION, KAFKA_VERSION } from '../stack/versions.ts';
import { renderBenchChart } from './chart.ts';
import { runIngestPhase } from './ingest-phase.ts';
import { runQueryPhase } from './query-phase.ts';
import { formatBenchMarkdown, formatBenchText } from './report.ts';
import type { BenchRun, MemoryReading } from './results.ts';
import { benchServers, type BenchServers } from './servers.ts';
import { answerHelp } from '../shared/command-help.ts';

answerHelp(`Usage: npm run bench [-- --quick] [--only ingest|queries] [--no-peer] [--no-zstd] [--out <dir>]
The whole benchmark: ingest (ours, the bulk ceiling, a bare consumer, the rsyslog peer, ours on zstd input, freshness), then
queries (every endpoint at concurrency 1, 16 and 64 over two data sets); writes JSON, Markdown and a chart.
  --quick     every phase at reduced sizes, under five minutes
  --only      one phase
  --no-peer   skip rsyslog
  --no-zstd   skip the worker's drains of zstd-compressed input (they need kcat)
  --out       where the results go (default bench/results)
Uses KAFKA_BROKERS and ELASTICSEARCH_URL when both are set, else starts its own stack.`);

const { values: options } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    'no-peer': { type: 'boolean', default: false },
    'no-zstd': { type: 'boolean', default: false },
    out: { type: 'string', default: path.join(repositoryRoot, 'bench', 'results') },
  },
});
if (options.only !== undefined && !['ingest', 'queries'].includes(options.only)) throw new Error(`--only: use ingest or queries, not "${options.only}"`);

// quick: every phase and every kind of series, at sizes and lengths that fit in about five minutes
const SIZES = options.quick
  ? {
      ingest: 50_000,
      freshnessSeconds: 10,
      datasets: [50_000, 250_000],
      secondsPerPoint: 1,
      warmUpSeconds: 0,
      concurrencies: [1, 16],
      sandboxConcurrencies: [1, 16],
      studioQueries: 5,
    }
  : {
      ingest: 1_000_000,
      freshnessSeconds: 30,
      datasets: [1_000_000, 10_000_000],
      secondsPerPoint: 10,
      warmUpSeconds: 1,
      concurrencies: [1, 16, 64],
      sandboxConcurrencies: undefined,
      studioQueries: undefined,
    };
const started = new Date();
const say = (line: string) => console.error(`bench: ${line}`);

function peerVersion(): string | undefined {
  try {
    const status = readFileSync('/var/lib/dpkg/status', 'utf8');
    return /Package: rsyslog\n(?:[^\n]+\n)*?Version: (\S+)/.exec(status)?.[1]?.replace(/^/, 'rsyslog ');
  } catch {
    return undefined;
  }
}

const config = loadConfig(process.env);
let servers: BenchServers | undefined;
const stop = async () => {
  await servers?.stack?.stop();
  servers = undefined;
};
process.once('SIGINT', () => void stop().finally(() => process.exit(130)));

try {
  servers = await benchServers(config, say);
  const run: BenchRun = {
    startedAt: started.toISOString(),
    quick: options.quick,
    machine: {
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
      memoryGb: Math.round(os.totalmem() / 2 ** 30),
      node: process.version,
      kafka: KAFKA_VERSION,
      elasticsearch: ELASTICSEARCH_VERSION,
      peer: options['no-peer'] ? undefined : peerVersion(),
    },
    memory: [],
  };
  if (options.only !== 'queries') {
    say(`phase 1 of 2: ingest, ${SIZES.ingest.toLocaleString('en-US')} events`);
    run.ingest = await runIngestPhase({
      config,
      brokers: servers.brokers,
      elasticsearchUrl: servers.elasticsearchUrl,
      events: SIZES.ingest,
      freshnessSeconds: SIZES.freshnessSeconds,
      say: (line) => say(`ingest: ${line}`),
      peer: !options['no-peer'],
      zstd: !options['no-zstd'],
    });
    const ours = run.ingest.rates.find((rate) => rate.label === 'ours');
    if (ours?.peakRssMb !== undefined)
      run.memory.push({ process: 'worker', phase: `ingest ${SIZES.ingest.toLocaleString('en-US')} events`, peakRssMb: ours.peakRssMb });
    const zstd = run.ingest.rates.find((rate) => rate.label === 'ours-zstd');
    if (zstd?.peakRssMb !== undefined)
      run.memory.push({ process: 'worker', phase: `ingest ${SIZES.ingest.toLocaleString('en-US')} events, zstd input`, peakRssMb: zstd.peakRssMb });
  }
  if (options.only !== 'ingest') {
    say(`phase 2 of 2: queries over ${SIZES.datasets.map((size) => size.toLocaleString('en-US')).join(' and ')} edge events`);
    run.queries = await runQueryPhase({
      datasets: SIZES.datasets,
      secondsPerPoint: SIZES.secondsPerPoint,
      concurrencies: SIZES.concurrencies,
      warmUpSeconds: SIZES.warmUpSeconds,
      sandboxConcurrencies: SIZES.sandboxConcurrencies,
      studioQueries: SIZES.studioQueries,
      servers: { elasticsearchUrl: servers.elasticsearchUrl, kafkaBrokers: servers.brokers },
      progress: (line) => say(`queries: ${line}`),
    });
    for (const reading of run.queries.serviceMemory ?? []) {
      const memory: MemoryReading = {
        process: 'query-service',
        phase: `queries over ${reading.events.toLocaleString('en-US')} events`,
        peakRssMb: reading.peakRssMb,
      };
      run.memory.push(memory);
    }
  }

  const name = `${started.toISOString().slice(0, 10)}${options.quick ? '-quick' : ''}`;
  mkdirSync(options.out, { recursive: true });
  const files = { json: path.join(options.out, `${name}.json`), markdown: path.join(options.out, `${name}.md`), chart: path.join(options.out, `${name}.png`) };
  writeFileSync(files.json, `${JSON.stringify(run, null, 2)}\n`);
  writeFileSync(files.markdown, formatBenchMarkdown(run));
  say('drawing the chart');
  writeFileSync(files.chart, await renderBenchChart(run));
  process.stdout.write(formatBenchText(run));
  say(
    `wrote ${Object.values(files)
      .map((file) => path.relative(process.cwd(), file))
      .join(', ')}`,
  );
} catch (error) {
  say(`failed: ${(error as Error).stack ?? String(error)}`);
  process.exitCode = 1;
} finally {
  say('stopping what the benchmark started');
  await stop();
}
