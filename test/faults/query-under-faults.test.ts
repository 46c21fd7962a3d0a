import type { Client } from '@elastic/elasticsearch';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../shared/config.ts';
import { createElasticsearchClient, elasticsearchConnection } from '../../shared/elasticsearch.ts';
import { ensureEventIndexTemplate } from '../../shared/event-index.ts';
import { createLogger } from '../../shared/logger.ts';
import { eventPartitioning } from '../../ingest/event-partition.ts';
import { KeyStore } from '../../src/auth/key-store.ts';
import { buildServer } from '../../src/server.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { PrivateStack } from './support/private-stack.ts';
import { StallingRelay } from './support/stalling-relay.ts';

const BOOTSTRAP_KEY = 'bootstrap-key-for-the-fault-suite-0123456789';
const NOW = Date.UTC(2024, 5, 1, 12, 30);
const QUERY_TIMEOUT_MS = 5000;
/** usage.api-counts caches for 900 s and warms every 300 s (queries/usage-api-counts.ts). */
const USAGE_TTL_MS = 900_000;

interface Timed {
  status: number;
  code?: string;
  cache?: string;
  /** logs.all: rows; usage.api-counts: REST requests counted. The full answer is 50 either way. */
  events?: number;
  ms: number;
}

/** One request over real HTTP, timed from the first byte sent to the whole body read. */
async function timedGet(base: string, path: string, key: string): Promise<Timed> {
  const started = performance.now();
  const response = await fetch(`${base}${path}`, { headers: { 'x-api-key': key }, signal: AbortSignal.timeout(60_000) });
  const body = (await response.json()) as { error?: { code: string }; result?: { total_rest_requests?: number }[] };
  const events = body.result?.reduce((sum, row) => sum + (row.total_rest_requests ?? 1), 0);
  return {
    status: response.status,
    code: body.error?.code,
    cache: response.headers.get('x-cache') ?? undefined,
    events,
    ms: Math.round(performance.now() - started),
  };
}

const EVENTS = 50;
const LOGS = '/api/endpoints/query/logs.all?project=faults';
const USAGE = '/api/endpoints/query/usage.api-counts?interval=hourly&project=faults%5C.supabase';

/** A query service as main.ts builds it (one store client, default request timeout), listening on loopback, with a clock the test moves. */
async function startService(
  config: Config,
  elasticsearchUrl: string,
): Promise<{ app: FastifyInstance; base: string; clock: ManualClock; elasticsearch: Client }> {
  const elasticsearch = createElasticsearchClient(elasticsearchConnection(config, elasticsearchUrl));
  const clock = new ManualClock(NOW);
  const app = await buildServer({ config, logger: createLogger('query-service', 'silent'), elasticsearch, kafkaBrokers: config.KAFKA_BROKERS!, clock });
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, base, clock, elasticsearch };
}

/** Polls until logs.all answers 200 in full: the first queries on a cold node of a loaded machine can outlast the timeout. */
async function answersWhole(base: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  let last: Timed | undefined;
  while (Date.now() < deadline) {
    last = await timedGet(base, LOGS, BOOTSTRAP_KEY);
    if (last.status === 200 && last.events === EVENTS) return;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`logs.all did not answer in full within 120 s; last answer ${JSON.stringify(last)}`);
}

describe('query service under store faults', () => {
  let stack: PrivateStack;
  let config: Config;
  let store: Client;
  let relay: StallingRelay;
  let direct: Awaited<ReturnType<typeof startService>>;
  let relayed: Awaited<ReturnType<typeof startService>>;
  let storedKey: string;

  beforeAll(async () => {
    stack = await PrivateStack.start('query', { kafka: false, elasticsearch: true });
    config = loadConfig({
      ELASTICSEARCH_URL: stack.elasticsearchUrl,
      // /health would ask it; nothing here needs Kafka
      KAFKA_BROKERS: '127.0.0.1:9',
      INDEX_PREFIX: 'faults-query-',
      BOOTSTRAP_API_KEY: BOOTSTRAP_KEY,
      QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
      RATE_LIMIT_PER_MINUTE: '0',
      AUTH_FAILURE_MIN_MS: '0',
      LOG_LEVEL: 'silent',
    });
    store = createElasticsearchClient({ url: stack.elasticsearchUrl });
    await ensureEventIndexTemplate(store, config.INDEX_PREFIX, 0);
    const { indexOf } = eventPartitioning(config.INDEX_PREFIX, 'edge_logs', 'daily', 36500);
    const events = Array.from({ length: EVENTS }, (_, n) => ({
      id: `fault-${n}`,
      timestamp: new Date(NOW - 10 * 60_000 + n * 1000).toISOString().replace('Z', '000Z'),
      event_message: `GET | 200 | ${n}`,
      project: 'faults',
      metadata: { request: { url: `https://faults.supabase.co/rest/v1/t${n}`, path: `/rest/v1/t${n}` } },
    }));
    await store.bulk({ refresh: true, operations: events.flatMap((event) => [{ index: { _index: indexOf(event), _id: event.id } }, event]) });
    storedKey = (await new KeyStore(store, config.INDEX_PREFIX, 0).create({ account: 'faults', endpoints: 'all', projects: null })).key;
    relay = await StallingRelay.start({ host: '127.0.0.1', port: Number(new URL(stack.elasticsearchUrl).port) });
    direct = await startService(config, stack.elasticsearchUrl);
    relayed = await startService(config, relay.url);
  }, 600_000);

  afterAll(async () => {
    for (const service of [direct, relayed]) {
      await service?.app.close();
      await service?.elasticsearch.close();
    }
    await relay?.close();
    await store?.close();
    await stack?.stop();
  }, 120_000);

  // here, on a store of its own: the breaker limit is cluster-wide, and would trip the searches of test files running beside it
  it("a query tripping the store's request circuit breaker gets 400 query_too_expensive with the reason, and others keep being answered", async () => {
    const url = `${direct.base}/api/endpoints/query/usage.api-counts?interval=daily&project=breaker`;
    const get = () => fetch(url, { headers: { 'x-api-key': BOOTSTRAP_KEY } });
    // a breaker limit no aggregation fits in, for as short a time as one request takes
    await store.cluster.putSettings({ transient: { 'indices.breaker.request.limit': '1b' } });
    let tripped: Response;
    try {
      tripped = await get();
    } finally {
      await store.cluster.putSettings({ transient: { 'indices.breaker.request.limit': null } });
    }
    expect(tripped.status).toBe(400);
    const { error } = (await tripped.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe('query_too_expensive');
    expect(error.message).toMatch(/more memory than the log store allows one request \(\[request\] Data too large/);
    const after = await get();
    expect(after.status).toBe(200);
    expect(after.headers.get('x-cache')).toBe('MISS');
  });

  it('a stalled store: 504 query_timeout at QUERY_TIMEOUT_MS, key look-ups bounded too, answers again once it responds', { timeout: 120_000 }, async () => {
    await answersWhole(relayed.base);
    relay.stall();

    const stalled = await timedGet(relayed.base, LOGS, BOOTSTRAP_KEY);
    console.log(`stalled store: logs.all answered ${stalled.status} ${stalled.code} after ${stalled.ms} ms (QUERY_TIMEOUT_MS ${QUERY_TIMEOUT_MS})`);
    // answered by the service's own timeout while the store still says nothing (timings are logged, not asserted)
    expect(stalled).toMatchObject({ status: 504, code: 'query_timeout' });

    // a stored key not yet verified: its look-up waits on the same stalled store
    const keyed = await timedGet(relayed.base, LOGS, storedKey);
    console.log(`stalled store: a stored key's first request answered ${keyed.status} ${keyed.code} after ${keyed.ms} ms`);
    expect([503, 504]).toContain(keyed.status);

    relay.forward();
    const recovered = await timedGet(relayed.base, LOGS, BOOTSTRAP_KEY);
    expect(recovered).toMatchObject({ status: 200 });
    expect(await timedGet(relayed.base, LOGS, storedKey)).toMatchObject({ status: 200 });
  });

  it('the store down: 503 in our envelope (the timings logged), cached results served until their TTL, and recovery without a restart', {
    timeout: 300_000,
  }, async () => {
    await answersWhole(direct.base);
    expect(await timedGet(direct.base, USAGE, BOOTSTRAP_KEY)).toMatchObject({ status: 200, cache: 'MISS', events: EVENTS });
    expect(await timedGet(direct.base, USAGE, BOOTSTRAP_KEY)).toMatchObject({ status: 200, cache: 'HIT', events: EVENTS });
    expect(await timedGet(direct.base, LOGS, storedKey)).toMatchObject({ status: 200 });

    await stack.stopElasticsearch();

    // each refusal is sent next to a request that needs no store (an unknown route), so the log shows what the store adds
    const sequential: [Timed, Timed][] = [];
    for (let n = 0; n < 10; n += 1)
      sequential.push(await Promise.all([timedGet(direct.base, LOGS, BOOTSTRAP_KEY), timedGet(direct.base, '/no-such-route', BOOTSTRAP_KEY)]));
    const concurrent = await Promise.all(
      Array.from({ length: 10 }, () => Promise.all([timedGet(direct.base, LOGS, BOOTSTRAP_KEY), timedGet(direct.base, '/no-such-route', BOOTSTRAP_KEY)])),
    );
    const pairs = [...sequential, ...concurrent];
    const range = (answers: Timed[]) => `${Math.min(...answers.map((a) => a.ms))}-${Math.max(...answers.map((a) => a.ms))} ms`;
    console.log(
      `store down: ${pairs.length} logs.all requests answered in ${range(pairs.map(([refusal]) => refusal))}; requests needing no store, sent alongside, in ${range(pairs.map(([, baseline]) => baseline))}`,
    );
    for (const [refusal, baseline] of pairs) {
      expect(baseline.status).toBe(404);
      expect(refusal).toMatchObject({ status: 503, code: 'store_unavailable' });
    }
    const ready = await timedGet(direct.base, '/ready', BOOTSTRAP_KEY);
    expect(ready).toMatchObject({ status: 503, code: 'store_unavailable' });

    // the warm result keeps serving while its warmings fail, up to the end of its TTL
    expect(await timedGet(direct.base, USAGE, BOOTSTRAP_KEY)).toMatchObject({ status: 200, cache: 'HIT' });
    await direct.clock.advance(USAGE_TTL_MS - 5000);
    expect(await timedGet(direct.base, USAGE, BOOTSTRAP_KEY)).toMatchObject({ status: 200, cache: 'HIT' });
    await direct.clock.advance(5000);
    const expired = await timedGet(direct.base, USAGE, BOOTSTRAP_KEY);
    expect(expired).toMatchObject({ status: 503, code: 'store_unavailable' });

    // a stored key past its cache time cannot be verified: 503, not 401 (the key is fine) and not a hang
    const keyed = await timedGet(direct.base, LOGS, storedKey);
    expect(keyed).toMatchObject({ status: 503, code: 'store_unavailable' });

    await stack.startElasticsearch();
    // the same service, not restarted, answers again by itself; while the store recovers, 503 (or 504
    // while a node still starting takes longer than the timeout), never a 500 or a partial answer
    const seen: Timed[] = [];
    const deadline = Date.now() + 120_000;
    for (;;) {
      const [logs, keyedLogs, usage] = await Promise.all([
        timedGet(direct.base, LOGS, BOOTSTRAP_KEY),
        timedGet(direct.base, LOGS, storedKey),
        timedGet(direct.base, USAGE, BOOTSTRAP_KEY),
      ]);
      seen.push(logs, keyedLogs, usage);
      if (logs.status === 200 && keyedLogs.status === 200 && usage.status === 200) break;
      if (Date.now() > deadline) throw new Error(`no recovery within 120 s; last answers: ${JSON.stringify(seen.slice(-3))}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    console.log(
      `store back: answers while recovering ${JSON.stringify(Object.fromEntries([...new Set(seen.map((s) => `${s.status} ${s.code ?? ''}`.trim()))].map((k) => [k, seen.filter((s) => `${s.status} ${s.code ?? ''}`.trim() === k).length])))}`,
    );
    expect(seen.filter((answer) => ![200, 503, 504].includes(answer.status))).toEqual([]);
    // a store still recovering its shards must not yield a partial answer passed off (and cached) as whole
    expect(seen.filter((answer) => answer.status === 200 && answer.events !== EVENTS)).toEqual([]);
    expect(seen.every((answer) => answer.ms < QUERY_TIMEOUT_MS + 1500)).toBe(true);
    expect(await timedGet(direct.base, USAGE, BOOTSTRAP_KEY)).toMatchObject({ status: 200, cache: 'HIT', events: EVENTS });
  });
});
