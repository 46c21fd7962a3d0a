import { readdirSync, readFileSync } from 'node:fs';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsRegistry } from '../../src/metrics.ts';
import { BOOTSTRAP_KEY, edgeEvent, startEndpointServer, storedTimestamp, type EndpointTestServer } from '../support/endpoint-server.ts';

/**
 * The engine step's bounds over HTTP (issue 18, findings 3 and 4): results stop at the row cap and the
 * byte cap inside the engine, one key cannot hold every engine process, and the time a query waits for
 * a process counts against QUERY_TIMEOUT_MS.
 */
const NOW = Date.UTC(2024, 0, 1, 12);
const PARAMS = { project: 'default', iso_timestamp_start: '2024-01-01T00:00:00.000Z', iso_timestamp_end: '2024-01-01T12:00:00.000Z' };
const EVENTS = 2000;
/** Runs until the engine interrupts it: 10^10 rows of a cross join. */
const ENDLESS = 'select max(a * b) as m from unnest(generate_array(1, 100000)) as a cross join unnest(generate_array(1, 100000)) as b';
/**
 * An ordinary sandboxed query: it scans edge_logs in Elasticsearch, then the engine groups the rows
 * (by a computed key: groups of a field the store makes itself are finished in the service).
 */
const ORDINARY = 'select upper(r.path) as path, count(*) as n from edge_logs cross join unnest(metadata) as m cross join unnest(m.request) as r group by path';

let server: EndpointTestServer;

function sandboxed(sql: string, key = BOOTSTRAP_KEY): Promise<LightMyRequestResponse> {
  return server.app.inject({
    method: 'POST',
    url: '/api/endpoints/query/logs.all',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    payload: { ...PARAMS, sql },
  });
}

/** A counter's total over its labels; 0 while it does not exist. */
async function counter(name: string): Promise<number> {
  const metric = metricsRegistry.getSingleMetric(name);
  return metric ? (await metric.get()).values.reduce((sum, value) => sum + value.value, 0) : 0;
}

/** The engine processes this test's service forked, each with its peak resident memory (VmHWM) in KiB. */
function enginePeaks(): Map<number, number> {
  const peaks = new Map<number, number>();
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    let status: string;
    let command: string;
    try {
      status = readFileSync(`/proc/${entry}/status`, 'utf8');
      command = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    if (Number(/^PPid:\s+(\d+)/m.exec(status)?.[1]) !== process.pid || !command.includes('engine-process')) continue;
    peaks.set(Number(entry), Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1]));
  }
  return peaks;
}

/** Resolves once `count` of the promises have settled. */
function settled(promises: Promise<unknown>[], count: number): Promise<void> {
  let done = 0;
  return new Promise((resolve) => {
    for (const promise of promises) void promise.finally(() => ++done === count && resolve());
  });
}

beforeAll(async () => {
  server = await startEndpointServer({
    now: NOW,
    overrides: {
      RATE_LIMIT_PER_MINUTE: '0',
      // long enough that an ordinary query is answered within it on a loaded machine; the endless ones run into it
      QUERY_TIMEOUT_MS: '12000',
      SANDBOX_MAX_RESULT_BYTES: String(1024 * 1024),
      SANDBOX_ENGINE_PROCESSES: '2',
      SANDBOX_ENGINE_PER_KEY: '1',
      SANDBOX_ENGINE_QUEUE_PER_KEY: '1',
    },
  });
  const start = Date.UTC(2024, 0, 1, 1);
  await server.index(
    'edge_logs',
    Array.from({ length: EVENTS }, (_, n) =>
      edgeEvent(`e-${n}`, storedTimestamp(start + n * 1000), 'default', { url: `https://x.co/p${n % 7}`, path: `/p${n % 7}` }),
    ),
  );
  // parsed texts, field catalogs and engine processes ready, so the tests below see only their own work; the endless
  // query, from a key of its own, is seen to run into the time limit
  const [ordinary, endless] = await Promise.all([sandboxed(ORDINARY), sandboxed(ENDLESS, await server.createKey({}))]);
  expect(ordinary.statusCode).toBe(200);
  expect(endless.statusCode).toBe(504);
}, 120_000);

afterAll(async () => {
  await server?.close();
});

describe('results are bounded inside the engine', () => {
  it('3,000,000 rows: the answer holds the row cap and the engine sent no more than that', async () => {
    const rowsBefore = await counter('sandbox_engine_result_rows_total');
    const truncatedBefore = await counter('sandbox_engine_truncated_results_total');
    // 3000 x 1000 rows: one array of 3,000,000 elements would pass the byte cap as a value (see the last group below)
    const response = await sandboxed(
      'select a * 1000 + b as x from unnest(generate_array(0, 2999)) as a cross join unnest(generate_array(1, 1000)) as b order by x',
    );
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
    const rows = response.json().result as { x: number }[];
    expect(rows).toHaveLength(1000);
    expect(rows[0]).toEqual({ x: 1 });
    expect(await counter('sandbox_engine_result_rows_total')).toBe(rowsBefore + 1000);
    expect(await counter('sandbox_engine_truncated_results_total')).toBe(truncatedBefore + 1);
  });

  it('300 values of 1 MB each: 400 query_too_expensive naming the byte cap and its variable', async () => {
    const rowsBefore = await counter('sandbox_engine_result_rows_total');
    const response = await sandboxed("select repeat('x', 1000000) as s from unnest(generate_array(1, 300)) as x");
    expect(response.statusCode, response.body.slice(0, 300)).toBe(400);
    expect(response.json().error.code).toBe('query_too_expensive');
    expect(response.json().error.message).toMatch(/1048576 bytes \(SANDBOX_MAX_RESULT_BYTES\)/);
    // what crossed from the engine stayed within the cap: no more rows than fit in 1 MiB
    expect(await counter('sandbox_engine_result_rows_total')).toBeLessThanOrEqual(rowsBefore + 1);
  });

  it('one value larger than the byte cap is refused the same way', async () => {
    const response = await sandboxed("select repeat('x', 20000000) as s");
    expect(response.statusCode, response.body.slice(0, 300)).toBe(400);
    expect(response.json().error.code).toBe('query_too_expensive');
  });

  it('rows within both caps are answered whole', async () => {
    const response = await sandboxed("select x, repeat('y', 100) as s from unnest(generate_array(1, 1000)) as x");
    expect(response.statusCode).toBe(200);
    expect(response.json().result).toHaveLength(1000);
  });
});

describe('engine processes are shared fairly between keys', () => {
  it('a flooding key gets 429 with Retry-After beyond its share, and another key is answered before the flood ends', async () => {
    const flooder = await server.createKey({});
    const other = await server.createKey({});
    const order: string[] = [];
    const flood = Array.from({ length: 4 }, () =>
      sandboxed(ENDLESS, flooder).then((response) => {
        order.push(`flood ${response.statusCode}`);
        return response;
      }),
    );
    // one flood query runs, one waits for the key's share: the other two are refused at once
    await settled(flood, 2);
    const answer = await sandboxed(ORDINARY, other);
    order.push(`other ${answer.statusCode}`);
    const responses = await Promise.all(flood);

    expect(answer.statusCode, answer.body).toBe(200);
    expect((answer.json().result as unknown[]).length).toBe(7);
    const refused = responses.filter((response) => response.statusCode === 429);
    expect(refused).toHaveLength(2);
    for (const response of refused) {
      expect(response.json().error.code).toBe('rate_limited');
      expect(response.json().error.message).toMatch(/SANDBOX_ENGINE_PER_KEY/);
      expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
    // the flood's admitted queries end only at their time limit, after the other key's answer
    expect(order.slice(0, 2)).toEqual(['flood 429', 'flood 429']);
    expect(order[2]).toBe('other 200');
    expect(order.slice(3).sort()).toEqual(['flood 504', 'flood 504']);
  });

  it('time spent waiting for a process counts against QUERY_TIMEOUT_MS: a queued query gets 504, never a late 200', async () => {
    const [first, second, waiting] = [await server.createKey({}), await server.createKey({}), await server.createKey({})];
    // each key known to the service already, so that nothing but the queued query's scan waits on Elasticsearch below
    for (const key of [first, second, waiting])
      expect((await server.app.inject({ url: '/api/endpoints/query/logs.all?project=default', headers: { 'x-api-key': key } })).statusCode).toBe(200);
    const order: string[] = [];
    const track = (name: string, response: Promise<LightMyRequestResponse>) =>
      response.then((settledResponse) => {
        order.push(`${name} ${settledResponse.statusCode}`);
        return settledResponse;
      });
    // the queued query starts first but scans Elasticsearch while two endless ones from other keys take both processes
    const queued = track('queued', sandboxed(ORDINARY, waiting));
    const blockers = [track('blocker', sandboxed(ENDLESS, first)), track('blocker', sandboxed(ENDLESS, second))];
    const response = await queued;
    await Promise.all(blockers);

    expect(response.statusCode, response.body).toBe(504);
    expect(response.json().error.code).toBe('query_timeout');
    expect(response.json().error.message).toMatch(/waited .*for a query engine process.*QUERY_TIMEOUT_MS/);
    expect(order).toEqual(['queued 504', 'blocker 504', 'blocker 504']);
  });
});

describe('a query is admitted to the engine before its scans', () => {
  it('a key at its share and its queue limit is refused before it reads a table: 429 with Retry-After, and the store saw no search for it', async () => {
    const flooder = await server.createKey({});
    // one endless query runs and one waits (SANDBOX_ENGINE_PER_KEY 1, SANDBOX_ENGINE_QUEUE_PER_KEY 1): the other two are refused
    const flood = Array.from({ length: 4 }, () => sandboxed(ENDLESS, flooder));
    await settled(flood, 2);
    const scansBefore = await counter('sandbox_scans_total');
    const eventsBefore = await counter('sandbox_scanned_events_total');
    const refused = await Promise.all(Array.from({ length: 3 }, () => sandboxed(ORDINARY, flooder)));
    const scansAfter = await counter('sandbox_scans_total');
    const eventsAfter = await counter('sandbox_scanned_events_total');
    const flooded = await Promise.all(flood);

    expect(flooded.map((response) => response.statusCode).sort()).toEqual([429, 429, 504, 504]);
    for (const response of refused) {
      expect(response.statusCode, response.body).toBe(429);
      expect(response.json().error.code).toBe('rate_limited');
      expect(response.json().error.message).toMatch(/SANDBOX_ENGINE_PER_KEY.*SANDBOX_ENGINE_QUEUE_PER_KEY/);
      expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
    expect(scansAfter).toBe(scansBefore);
    expect(eventsAfter).toBe(eventsBefore);

    // the refusals and the flood's end left no place taken: the key is admitted again and its query reads the table
    const again = await sandboxed(ORDINARY, flooder);
    expect(again.statusCode, again.body).toBe(200);
    expect((again.json().result as unknown[]).length).toBe(7);
    expect(await counter('sandbox_scanned_events_total')).toBeGreaterThan(eventsAfter);
  });

  it('a query that fails after its scans gives its place back: three in a row, then the same key is answered', async () => {
    const key = await server.createKey({});
    // the path's type is known only from the scanned rows, so the translation refuses it after the scans
    const failing = 'select r.path + 1 as n from edge_logs cross join unnest(metadata) as m cross join unnest(m.request) as r';
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const eventsBefore = await counter('sandbox_scanned_events_total');
      const response = await sandboxed(failing, key);
      expect(response.statusCode, response.body).toBe(400);
      expect(response.json().error.message).toMatch(/STRING/);
      expect(await counter('sandbox_scanned_events_total')).toBeGreaterThan(eventsBefore);
    }
    const response = await sandboxed(ORDINARY, key);
    expect(response.statusCode, response.body).toBe(200);
  });
});

describe('no value larger than the result byte cap is built in the engine', () => {
  it.each([
    ["select repeat('x', 1500000000) as s", 'REPEAT'],
    ["select lpad('x', 2000000000, 'y') as s", 'LPAD'],
  ])('%s: 400 query_too_expensive naming the limit, and the engine processes did not grow', async (sql, name) => {
    const before = enginePeaks();
    expect(before.size).toBe(2);
    const response = await sandboxed(sql);
    expect(response.statusCode, response.body.slice(0, 300)).toBe(400);
    expect(response.json().error.code).toBe('query_too_expensive');
    expect(response.json().error.message).toMatch(new RegExp(`^${name} would build a string of more than 1048576 bytes.*\\(SANDBOX_MAX_RESULT_BYTES\\)`));
    const after = enginePeaks();
    // the same processes (none died and was replaced), each with a peak far below the string asked for
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    for (const peakKiB of after.values()) expect(peakKiB).toBeLessThan(1024 * 1024);
  });

  it('an array of 3,000,000 elements is refused as a value over the byte cap, before it is built', async () => {
    const response = await sandboxed('select x from unnest(generate_array(1, 3000000)) as x');
    expect(response.statusCode, response.body.slice(0, 300)).toBe(400);
    expect(response.json().error.code).toBe('query_too_expensive');
    expect(response.json().error.message).toMatch(
      /^GENERATE_ARRAY would build an array of more than 131072 elements, 8 bytes each, more than the 1048576 bytes .*\(SANDBOX_MAX_RESULT_BYTES\)/,
    );
  });
});
