/**
 * `npm run soak [-- --minutes N]`: steady ingest plus queries of every kind at concurrency 32 for N
 * minutes (default 10), against a real ingest worker and a real query service, each in its own
 * process. Reports the answers by status (any 5xx fails the run), the query service's resident
 * memory after warm-up and at the end (the median of a window at each; growth must stay under
 * 10%), its event-loop delay (p99 and samples over 50 ms, from its /metrics), and request latency. Uses KAFKA_BROKERS /
 * ELASTICSEARCH_URL when both are set, else starts its own stack; stops everything it started.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Partitioners } from 'kafkajs';
import { demoEvents } from '../scripts/demo-events.ts';
import { createKafka } from '../ingest/kafka.ts';
import { loadConfig, repositoryRoot } from '../shared/config.ts';
import { createElasticsearchClient } from '../shared/elasticsearch.ts';
import { createLogger } from '../shared/logger.ts';
import { topicName } from '../shared/sources.ts';
import type { LocalStack } from '../stack/index.ts';
import { benchServers } from './servers.ts';
import { percentile } from './latency.ts';
import { answerHelp } from '../shared/command-help.ts';

answerHelp(`Usage: npm run soak [-- --minutes N]
Steady ingest plus queries of every kind at concurrency 32 for N minutes (default 10) against a real
ingest worker and query service; fails on any 5xx or on memory growth of 10% or more.
Uses KAFKA_BROKERS and ELASTICSEARCH_URL when both are set, else starts its own stack.`);

const config = loadConfig(process.env);
const { values: options } = parseArgs({ options: { minutes: { type: 'string', default: '10' } } });
const MINUTES = Number(options.minutes);
if (!(MINUTES > 0)) throw new Error(`--minutes must be a positive number, got ${options.minutes}`);
const CONCURRENCY = 32;
const EVENTS_PER_SECOND = 200;
const KEY = `soak-${randomBytes(16).toString('hex')}`;
const DURATION_MS = MINUTES * 60_000;
/** Memory is compared from the end of warm-up: a quarter of the run, at most two minutes. */
const WARM_UP_MS = Math.min(120_000, DURATION_MS / 4);
const say = (line: string) => console.error(`soak: ${line}`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every kind of query the service answers: saved endpoints, cached and not, sandboxed SQL pushed down and run by the engine, LQL filters and charts, redaction. */
const QUERIES: Array<{ kind: string; path: string; redact?: boolean }> = [
  { kind: 'usage hourly (cached)', path: '/api/endpoints/query/usage.api-counts?interval=hourly&project=default' },
  { kind: 'usage daily (cached)', path: '/api/endpoints/query/usage.api-counts?interval=daily&project=soak' },
  { kind: 'usage minutely, redacted', path: '/api/endpoints/query/usage.api-counts?interval=minutely&project=%5Ehttps', redact: true },
  { kind: 'logs.all saved', path: '/api/endpoints/query/logs.all?project=default' },
  { kind: 'logs.all saved, redacted', path: '/api/endpoints/query/logs.all?project=soak', redact: true },
  {
    kind: 'sql aggregation (pushed down)',
    path: `/api/endpoints/query/logs.all?project=default&sql=${encodeURIComponent('select timestamp_trunc(timestamp, minute) as t, count(*) as n from edge_logs group by t order by t')}`,
  },
  {
    kind: 'sql limit (pushed down)',
    path: `/api/endpoints/query/logs.all?project=default&sql=${encodeURIComponent('select id, event_message from postgres_logs order by timestamp desc limit 20')}`,
  },
  {
    kind: 'sql unnest (engine)',
    path: `/api/endpoints/query/logs.all?project=default&iso_timestamp_start=${encodeURIComponent(new Date(Date.now() - 120_000).toISOString())}&sql=${encodeURIComponent('select r.path, count(*) as n from edge_logs t cross join unnest(t.metadata) as m cross join unnest(m.request) as r group by r.path order by n desc limit 10')}`,
  },
  {
    kind: 'sql on usage (cached)',
    path: `/api/endpoints/query/usage.api-counts?interval=hourly&project=default&sql=${encodeURIComponent('select timestamp, total_rest_requests from chart_counts order by timestamp')}`,
  },
  { kind: 'lql filter', path: `/api/endpoints/query/logs.all?project=default&lql=${encodeURIComponent('f:edge_logs m.request.path:~"^/rest"')}` },
  { kind: 'lql chart', path: `/api/endpoints/query/logs.all?project=default&lql=${encodeURIComponent('f:edge_logs c:count(*) c:group_by(t::minute)')}` },
];

let stack: LocalStack | undefined;
const children: ChildProcess[] = [];
/** Set once the run knows its store and prefix: what to delete at the end. */
let ownIndices: { elasticsearchUrl: string; pattern: string } | undefined;

/** Starts `entry` with tsx and waits for the line matching `ready` on its stdout. */
async function startProcess(entry: string, env: Record<string, string>, ready: RegExp): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(repositoryRoot, entry)], {
    cwd: repositoryRoot,
    env: { PATH: process.env.PATH, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${entry} exited with ${child.exitCode} during start-up`);
    const match = ready.exec(output);
    if (match) return { child, match };
    await sleep(100);
  }
  throw new Error(`${entry} did not start within 120 s`);
}

function rssBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('VmRSS:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? 0) * 1024;
}

async function main(): Promise<void> {
  const servers = await benchServers(config, say);
  stack = servers.stack;
  const { brokers, elasticsearchUrl } = servers;
  const prefix = `soak${randomBytes(3).toString('hex')}`;
  ownIndices = { elasticsearchUrl, pattern: `${prefix}-*` };
  const locations = { indexPrefix: `${prefix}-`, topicPrefix: `${prefix}.` };
  const shared = {
    KAFKA_BROKERS: brokers.join(','),
    ELASTICSEARCH_URL: elasticsearchUrl,
    INDEX_PREFIX: locations.indexPrefix,
    TOPIC_PREFIX: locations.topicPrefix,
  };
  await startProcess('ingest/main.ts', { ...shared, INGEST_GROUP_ID: `${prefix}-ingest`, INGEST_PORT: '0' }, /ingest: (http:\S+)/);
  const service = await startProcess('src/main.ts', { ...shared, BOOTSTRAP_API_KEY: KEY, PORT: '0', RATE_LIMIT_PER_MINUTE: '0' }, /^query: (http:\S+)$/m);
  const address = service.match[1]!;
  const servicePid = service.child.pid!;

  const producer = createKafka({ brokers }, 'logplatform-soak', createLogger('soak', 'warn')).producer({
    createPartitioner: Partitioners.DefaultPartitioner,
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await producer.connect();
  const started = Date.now();
  const deadline = started + DURATION_MS;
  let produced = 0;
  const ingest = (async () => {
    for (let second = 0; Date.now() < deadline; second += 1) {
      const now = new Date();
      const batch = new Map<string, { value: string }[]>();
      for (const { source, event } of demoEvents({
        count: EVENTS_PER_SECOND,
        from: new Date(now.getTime() - 1000),
        to: now,
        projects: ['default', 'soak'],
        seed: started + second,
      })) {
        const topic = topicName(locations, source);
        const messages = batch.get(topic) ?? [];
        messages.push({ value: JSON.stringify(event) });
        batch.set(topic, messages);
      }
      await producer.sendBatch({ acks: -1, topicMessages: [...batch].map(([topic, messages]) => ({ topic, messages })) });
      produced += EVENTS_PER_SECOND;
      await sleep(Math.max(0, started + (second + 1) * 1000 - Date.now()));
    }
  })();

  const statuses = new Map<number, number>();
  const failures: string[] = [];
  let said = 0;
  const latencies: number[] = [];
  const byKind = new Map<string, number[]>();
  let sent = 0;
  const client = async () => {
    while (Date.now() < deadline) {
      const query = QUERIES[sent++ % QUERIES.length]!;
      const begun = performance.now();
      let status = 0;
      try {
        const response = await fetch(`${address}${query.path}`, {
          headers: { 'x-api-key': KEY, ...(query.redact ? { 'svc-endpoint-redact-pii': 'true' } : {}) },
        });
        const body = await response.text();
        status = response.status;
        if (status >= 500 && failures.length < 10)
          failures.push(`${Math.round((Date.now() - started) / 1000)} s, ${query.kind}: ${status} ${body.slice(0, 300)}`);
      } catch (error) {
        if (failures.length < 10) failures.push(`${Math.round((Date.now() - started) / 1000)} s, ${query.kind}: ${(error as Error).message}`);
      }
      // said as it happens, so a long run shows its first failures without waiting for the end
      if (failures.length > said) say(`failure: ${failures[said++]}`);
      const elapsed = performance.now() - begun;
      latencies.push(elapsed);
      const kindLatencies = byKind.get(query.kind) ?? [];
      kindLatencies.push(elapsed);
      byKind.set(query.kind, kindLatencies);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  };
  let rssAfterWarmUp = 0;
  let rssPeak = 0;
  const rssSamples: { atMs: number; rss: number }[] = [];
  const sampler = (async () => {
    while (Date.now() < deadline) {
      await sleep(5000);
      const rss = rssBytes(servicePid);
      rssPeak = Math.max(rssPeak, rss);
      rssSamples.push({ atMs: Date.now() - started, rss });
      if (!rssAfterWarmUp && Date.now() - started >= WARM_UP_MS) rssAfterWarmUp = rss;
      const elapsed = Math.round((Date.now() - started) / 1000);
      say(
        `${elapsed} s: ${sent} requests, ${produced} events produced, service RSS ${(rss / 1e6).toFixed(0)} MB, 5xx ${[...statuses].filter(([status]) => status >= 500 || status === 0).reduce((sum, [, count]) => sum + count, 0)}`,
      );
    }
  })();
  await Promise.all([ingest, sampler, ...Array.from({ length: CONCURRENCY }, client)]);
  const rssAtEnd = rssBytes(servicePid);
  await producer.disconnect();

  const metrics = await (await fetch(`${address}/metrics`, { headers: config.OPS_TOKEN ? { authorization: `Bearer ${config.OPS_TOKEN}` } : {} })).text();
  const metric = (pattern: RegExp) => Number(pattern.exec(metrics)?.[1] ?? NaN);
  const loopP99 = metric(/^nodejs_eventloop_lag_p99_seconds (\S+)/m) * 1000;
  const loopMax = metric(/^nodejs_eventloop_lag_max_seconds (\S+)/m) * 1000;
  const loopSamples = metric(/^event_loop_delay_seconds_count (\d+)/m);
  const loopWithin50 = metric(/^event_loop_delay_seconds_bucket\{le="0.05"\} (\d+)/m);
  const searchableText = await (
    await fetch(`${address}/api/endpoints/query/logs.all?project=default&sql=${encodeURIComponent('select count(*) as n from edge_logs')}`, {
      headers: { 'x-api-key': KEY },
    })
  ).text();

  const serverErrors = [...statuses].filter(([status]) => status >= 500 || status === 0).reduce((sum, [, count]) => sum + count, 0);
  // RSS saws up and down with each collection (±5% between samples 5 s apart here), so growth compares
  // the median of a window right after warm-up with the median of the same length at the end
  const windowMs = Math.min(60_000, (DURATION_MS - WARM_UP_MS) / 4);
  const medianRss = (from: number, to: number) =>
    percentile(
      rssSamples
        .filter((sample) => sample.atMs >= from && sample.atMs < to)
        .map((sample) => sample.rss)
        .sort((a, b) => a - b),
      50,
    );
  const rssEarly = medianRss(WARM_UP_MS, WARM_UP_MS + windowMs);
  const rssLate = medianRss(DURATION_MS - windowMs, Infinity);
  const growth = rssEarly ? (rssLate - rssEarly) / rssEarly : NaN;
  const sorted = [...latencies].sort((a, b) => a - b);
  const rows: [string, string][] = [
    ['duration', `${MINUTES} min (warm-up ${(WARM_UP_MS / 1000).toFixed(0)} s)`],
    ['ingest', `${produced} events at ${EVENTS_PER_SECOND}/s (edge_logs count now: ${searchableText.slice(0, 60)})`],
    ['requests', `${sent} at concurrency ${CONCURRENCY}, ${QUERIES.length} kinds`],
    [
      'answers by status',
      [...statuses]
        .sort(([a], [b]) => a - b)
        .map(([status, count]) => `${status || 'no answer'}: ${count}`)
        .join(', '),
    ],
    ['5xx or no answer', String(serverErrors)],
    ['request latency p50 / p99', `${percentile(sorted, 50).toFixed(0)} / ${percentile(sorted, 99).toFixed(0)} ms`],
    ['service RSS after warm-up / at end / peak', `${(rssAfterWarmUp / 1e6).toFixed(0)} / ${(rssAtEnd / 1e6).toFixed(0)} / ${(rssPeak / 1e6).toFixed(0)} MB`],
    [
      `service RSS median, ${(windowMs / 1000).toFixed(0)} s after warm-up / last ${(windowMs / 1000).toFixed(0)} s`,
      `${(rssEarly / 1e6).toFixed(0)} / ${(rssLate / 1e6).toFixed(0)} MB`,
    ],
    ['RSS growth after warm-up (medians)', `${(growth * 100).toFixed(1)}% (bound 10%)`],
    ['event-loop delay p99 / max (prom-client, since start)', `${loopP99.toFixed(1)} / ${loopMax.toFixed(1)} ms`],
    ['event-loop samples over 50 ms late', `${loopSamples - loopWithin50} of ${loopSamples}`],
  ];
  for (const [kind, values] of byKind) {
    const ordered = values.sort((a, b) => a - b);
    rows.push([`  ${kind} p50 / p99`, `${percentile(ordered, 50).toFixed(0)} / ${percentile(ordered, 99).toFixed(0)} ms (${ordered.length})`]);
  }
  const width = Math.max(...rows.map(([name]) => name.length));
  console.log(
    `\nsoak (${brokers.join(',')}, ${elasticsearchUrl}; load average at the end ${os
      .loadavg()
      .map((load) => load.toFixed(1))
      .join(' ')} on ${os.cpus().length} cores)`,
  );
  console.log(`${'metric'.padEnd(width)} | value`);
  console.log(`${'-'.repeat(width)}-|-${'-'.repeat(30)}`);
  for (const [name, value] of rows) console.log(`${name.padEnd(width)} | ${value}`);
  for (const failure of failures) console.log(`failure: ${failure}`);
  if (serverErrors > 0 || !(growth < 0.1)) process.exitCode = 1;
}

async function cleanUp(): Promise<void> {
  for (const child of children) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await Promise.race([exited, sleep(15_000)]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  if (ownIndices && !stack) {
    const elasticsearch = createElasticsearchClient({ url: ownIndices.elasticsearchUrl });
    const indices = Object.keys(await elasticsearch.indices.get({ index: ownIndices.pattern, allow_no_indices: true }).catch(() => ({})));
    if (indices.length > 0) await elasticsearch.indices.delete({ index: indices }).catch(() => undefined);
    await elasticsearch.close();
  }
  await stack?.stop();
}

process.on('SIGINT', () => void cleanUp().finally(() => process.exit(130)));
try {
  await main();
  await cleanUp();
} catch (error) {
  console.error(`soak: failed: ${(error as Error).stack ?? error}`);
  await cleanUp();
  process.exit(1);
}
