import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { cronRuleForPeriod } from '../../src/cache/clock.ts';
import { ResultCache } from '../../src/cache/result-cache.ts';
import { metricsRegistry } from '../../src/metrics.ts';
import { ManualClock } from '../support/manual-clock.ts';

const WARMED = { ttlSeconds: 900, warmEverySeconds: 300 };
const UNWARMED = { ttlSeconds: 60, warmEverySeconds: null };

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Rows encoded as the cache holds them. */
const body = (rows: unknown[]) => Buffer.from(JSON.stringify(rows));

/** A query whose every run is counted and returns the next of its answers. */
function countedQuery(...answers: unknown[][]) {
  const query = {
    runs: 0,
    run: async () => {
      const rows = answers[Math.min(query.runs, answers.length - 1)]!;
      query.runs += 1;
      return body(rows);
    },
  };
  return query;
}

async function counterValue(name: string, labels: Record<string, string>): Promise<number> {
  const metric = (await metricsRegistry.getMetricsAsJSON()).find((m) => m.name === name);
  const value = metric?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return value?.value ?? 0;
}

describe('ResultCache', () => {
  const caches: ResultCache[] = [];
  function makeCache(maxBytes = 1024 * 1024) {
    const clock = new ManualClock();
    const cache = new ResultCache({ maxBytes, clock, logger: pino({ level: 'silent' }) });
    caches.push(cache);
    return { clock, cache };
  }
  afterEach(() => {
    for (const cache of caches.splice(0)) cache.close();
  });

  it('misses first, then hits with the age of the result', async () => {
    const { clock, cache } = makeCache();
    const query = countedQuery([{ n: 1 }]);
    const first = await cache.fetch({ key: 'k', policy: UNWARMED, run: query.run });
    await clock.advance(12_500);
    const second = await cache.fetch({ key: 'k', policy: UNWARMED, run: query.run });
    expect(first).toEqual({ body: body([{ n: 1 }]), status: 'MISS', ageSeconds: 0 });
    expect(second).toEqual({ body: body([{ n: 1 }]), status: 'HIT', ageSeconds: 12 });
    expect(query.runs).toBe(1);
  });

  it('looks up a live result without running anything; nothing is counted when there is none', async () => {
    const { clock, cache } = makeCache();
    const hitsBefore = await counterValue('result_cache_lookups_total', { result: 'hit' });
    const missesBefore = await counterValue('result_cache_lookups_total', { result: 'miss' });
    expect(cache.lookUp('k')).toBeUndefined();
    await cache.fetch({ key: 'k', policy: UNWARMED, run: async () => body(['v']) });
    await clock.advance(2_000);
    expect(cache.lookUp('k')).toEqual({ body: body(['v']), status: 'HIT', ageSeconds: 2 });
    await clock.advance(58_000);
    expect(cache.lookUp('k')).toBeUndefined();
    expect(cache.bytes).toBe(0);
    expect(await counterValue('result_cache_lookups_total', { result: 'hit' })).toBe(hitsBefore + 1);
    expect(await counterValue('result_cache_lookups_total', { result: 'miss' })).toBe(missesBefore + 1);
  });

  it('keeps keys apart', async () => {
    const { cache } = makeCache();
    await cache.fetch({ key: 'a', policy: UNWARMED, run: async () => body(['a']) });
    const b = await cache.fetch({ key: 'b', policy: UNWARMED, run: async () => body(['b']) });
    expect(b).toEqual({ body: body(['b']), status: 'MISS', ageSeconds: 0 });
  });

  it('runs one query for concurrent misses on one key', async () => {
    const { cache } = makeCache();
    const gate = deferred<Buffer>();
    let runs = 0;
    const run = () => {
      runs += 1;
      return gate.promise;
    };
    const fetches = Array.from({ length: 10 }, () => cache.fetch({ key: 'k', policy: UNWARMED, run }));
    gate.resolve(body([{ n: 1 }]));
    const results = await Promise.all(fetches);
    expect(runs).toBe(1);
    expect(results.every((r) => r.status === 'MISS' && JSON.parse(r.body.toString())[0].n === 1)).toBe(true);
  });

  it('rejects every waiter of a failed run and does not cache the error', async () => {
    const { cache } = makeCache();
    const gate = deferred<Buffer>();
    const fetches = Array.from({ length: 3 }, () => cache.fetch({ key: 'k', policy: UNWARMED, run: () => gate.promise }));
    gate.reject(new Error('store down'));
    const outcomes = await Promise.allSettled(fetches);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected']);
    const retry = await cache.fetch({ key: 'k', policy: UNWARMED, run: async () => body(['ok']) });
    expect(retry).toEqual({ body: body(['ok']), status: 'MISS', ageSeconds: 0 });
  });

  it('expires a result exactly at its TTL, counted from when it was computed', async () => {
    const { clock, cache } = makeCache();
    const query = countedQuery(['old'], ['new']);
    await cache.fetch({ key: 'k', policy: UNWARMED, run: query.run });
    await clock.advance(59_999);
    expect((await cache.fetch({ key: 'k', policy: UNWARMED, run: query.run })).status).toBe('HIT');
    await clock.advance(1);
    const expired = await cache.fetch({ key: 'k', policy: UNWARMED, run: query.run });
    expect(expired).toEqual({ body: body(['new']), status: 'MISS', ageSeconds: 0 });
    expect(query.runs).toBe(2);
  });

  it('does not store results of a policy with no TTL', async () => {
    const { cache } = makeCache();
    const query = countedQuery(['x']);
    await cache.fetch({ key: 'k', policy: { ttlSeconds: 0, warmEverySeconds: null }, run: query.run });
    const again = await cache.fetch({ key: 'k', policy: { ttlSeconds: 0, warmEverySeconds: null }, run: query.run });
    expect(again.status).toBe('MISS');
    expect(query.runs).toBe(2);
    expect(cache.bytes).toBe(0);
  });

  it('warms a read result every period, so it never expires while it is being read', async () => {
    const { clock, cache } = makeCache();
    const query = countedQuery(['v0'], ['v1'], ['v2'], ['v3'], ['v4']);
    await cache.fetch({ key: 'k', policy: WARMED, run: query.run });
    for (let tick = 1; tick <= 4; tick += 1) {
      await clock.advance(300_000);
      const read = await cache.fetch({ key: 'k', policy: WARMED, run: query.run });
      expect(read).toEqual({ body: body([`v${tick}`]), status: 'HIT', ageSeconds: 0 });
    }
    expect(query.runs).toBe(5);
  });

  it('serves the cached rows while a warming run is still in flight', async () => {
    const { clock, cache } = makeCache();
    const gate = deferred<Buffer>();
    let runs = 0;
    const run = () => (++runs === 1 ? Promise.resolve(body(['old'])) : gate.promise);
    await cache.fetch({ key: 'k', policy: WARMED, run });
    const warming = clock.advance(300_000);
    const during = await cache.fetch({ key: 'k', policy: WARMED, run });
    expect(during).toEqual({ body: body(['old']), status: 'HIT', ageSeconds: 300 });
    gate.resolve(body(['new']));
    await warming;
    const after = await cache.fetch({ key: 'k', policy: WARMED, run });
    expect(after).toEqual({ body: body(['new']), status: 'HIT', ageSeconds: 0 });
    expect(runs).toBe(2);
  });

  it('keeps serving after a failed warming run until the TTL, and counts the failure', async () => {
    const { clock, cache } = makeCache();
    let runs = 0;
    const run = async () => {
      runs += 1;
      if (runs > 1) throw new Error('store down');
      return body(['first']);
    };
    const failedBefore = await counterValue('result_cache_warming_runs_total', { outcome: 'failed' });
    await cache.fetch({ key: 'k', policy: WARMED, run });
    await clock.advance(300_000);
    expect(await cache.fetch({ key: 'k', policy: WARMED, run })).toEqual({ body: body(['first']), status: 'HIT', ageSeconds: 300 });
    await clock.advance(599_000);
    expect(await cache.fetch({ key: 'k', policy: WARMED, run })).toEqual({ body: body(['first']), status: 'HIT', ageSeconds: 899 });
    expect(runs).toBe(3);
    expect(await counterValue('result_cache_warming_runs_total', { outcome: 'failed' })).toBe(failedBefore + 2);
    await clock.advance(1_000);
    await expect(cache.fetch({ key: 'k', policy: WARMED, run })).rejects.toThrow('store down');
  });

  it('stops warming a result nobody read within its TTL, and stops the schedule once nothing is left', async () => {
    const { clock, cache } = makeCache();
    const query = countedQuery(['v']);
    await cache.fetch({ key: 'k', policy: WARMED, run: query.run });
    expect(clock.scheduled).toBe(1);
    await clock.advance(3 * 3600_000);
    // warmed at 300 and 600 s; at 900 s nobody had read it for a TTL, so it was left to expire
    expect(query.runs).toBe(3);
    expect(clock.scheduled).toBe(0);
    expect(cache.bytes).toBe(0);
  });

  it('counts ok warming runs', async () => {
    const { clock, cache } = makeCache();
    const before = await counterValue('result_cache_warming_runs_total', { outcome: 'ok' });
    await cache.fetch({ key: 'k', policy: WARMED, run: async () => body(['v']) });
    await clock.advance(300_000);
    expect(await counterValue('result_cache_warming_runs_total', { outcome: 'ok' })).toBe(before + 1);
  });

  it('evicts the least recently used results to stay within the byte limit', async () => {
    const rows = (label: string) => [{ label, pad: 'x'.repeat(80) }];
    const entryBytes = Buffer.byteLength('a') + Buffer.byteLength(JSON.stringify(rows('a')));
    const { cache } = makeCache(entryBytes * 3);
    for (const key of ['a', 'b', 'c']) await cache.fetch({ key, policy: UNWARMED, run: async () => body(rows(key)) });
    expect(cache.bytes).toBe(entryBytes * 3);
    await cache.fetch({ key: 'a', policy: UNWARMED, run: async () => body(rows('a')) }); // a is now the most recent
    await cache.fetch({ key: 'd', policy: UNWARMED, run: async () => body(rows('d')) }); // evicts b
    const statuses = [];
    for (const key of ['a', 'c', 'd', 'b']) statuses.push((await cache.fetch({ key, policy: UNWARMED, run: async () => body(rows(key)) })).status);
    expect(statuses).toEqual(['HIT', 'HIT', 'HIT', 'MISS']);
    expect(cache.bytes).toBeLessThanOrEqual(entryBytes * 3);
  });

  it('does not cache a result larger than the whole limit', async () => {
    const { cache } = makeCache(50);
    const query = countedQuery([{ pad: 'x'.repeat(100) }]);
    await cache.fetch({ key: 'k', policy: UNWARMED, run: query.run });
    expect((await cache.fetch({ key: 'k', policy: UNWARMED, run: query.run })).status).toBe('MISS');
    expect(cache.bytes).toBe(0);
  });

  it('drops the results a changed endpoint had: the next read runs anew, and warming stops with nothing left to warm', async () => {
    const { clock, cache } = makeCache();
    const changed = countedQuery(['old'], ['new']);
    const kept = countedQuery(['kept']);
    await cache.fetch({ key: '["a",1]', policy: WARMED, run: changed.run });
    await cache.fetch({ key: '["b",1]', policy: UNWARMED, run: kept.run });
    expect(cache.drop((key) => key.startsWith('["a",'))).toBe(1);
    expect(cache.lookUp('["a",1]')).toBeUndefined();
    expect(cache.lookUp('["b",1]')?.body).toEqual(body(['kept']));
    await clock.advance(300_000);
    // the warmer's tick found nothing of its period: no run of the dropped result, and no schedule left
    expect(changed.runs).toBe(1);
    expect(clock.scheduled).toBe(0);
    expect((await cache.fetch({ key: '["a",2]', policy: WARMED, run: changed.run })).body).toEqual(body(['new']));
  });

  it('close cancels the warming schedules', async () => {
    const { clock, cache } = makeCache();
    await cache.fetch({ key: 'k', policy: WARMED, run: async () => body(['v']) });
    cache.close();
    expect(clock.scheduled).toBe(0);
    expect(cache.bytes).toBe(0);
  });
});

describe('ResultCache warming budget', () => {
  const caches: ResultCache[] = [];
  afterEach(() => {
    for (const cache of caches.splice(0)) cache.close();
  });

  /** A cache whose warming runs are recorded: when each started (clock time), which key, and how many were in flight. */
  function warmedCache(warming: { maxEntries: number; concurrency: number }, clock = new ManualClock()) {
    const cache = new ResultCache({ maxBytes: 64 * 1024 * 1024, clock, logger: pino({ level: 'silent' }), warming });
    caches.push(cache);
    // runs are recorded once the test has filled the cache (watching), and held until released when gated
    const record = {
      starts: [] as { at: number; key: string }[],
      inFlight: 0,
      maxInFlight: 0,
      gates: [] as ReturnType<typeof deferred<void>>[],
      watching: false,
      gated: false,
    };
    const runOf = (key: string) => async () => {
      if (record.watching) record.starts.push({ at: clock.now(), key });
      record.inFlight += 1;
      record.maxInFlight = Math.max(record.maxInFlight, record.inFlight);
      try {
        if (record.gated) {
          const gate = deferred<void>();
          record.gates.push(gate);
          await gate.promise;
        }
        return body([key]);
      } finally {
        record.inFlight -= 1;
      }
    };
    return { clock, cache, record, fetch: (key: string) => cache.fetch({ key, policy: WARMED, run: runOf(key) }) };
  }

  it('with 1000 warm entries a period starts at most CACHE_WARM_MAX_ENTRIES runs, the most recently read first, one at a time spread over the period', async () => {
    const { clock, cache, record, fetch } = warmedCache({ maxEntries: 200, concurrency: 2 });
    const keys = Array.from({ length: 1000 }, (_, n) => `k${String(n).padStart(4, '0')}`);
    for (const key of keys) await fetch(key);
    record.watching = true;
    await clock.advance(100_000);
    // read again later: these 300 are the most recently read, the last read first
    const reread = keys.slice(500, 800);
    for (const key of reread) {
      await clock.advance(10);
      expect(cache.lookUp(key)?.status).toBe('HIT');
    }
    const tick = Date.UTC(2024, 0, 1) + 300_000;
    await clock.advance(tick - clock.now());
    // at the tick itself: one run, not a thousand
    expect(record.starts).toEqual([{ at: tick, key: 'k0799' }]);
    await clock.advance(1500);
    expect(record.starts.map((start) => start.key)).toEqual(['k0799', 'k0798']);
    await clock.advance(300_000 - 1500 - 1);
    expect(record.starts).toHaveLength(200);
    expect(record.starts.map((start) => start.at)).toEqual(Array.from({ length: 200 }, (_, n) => tick + n * 1500));
    expect(record.starts.map((start) => start.key)).toEqual([...reread].reverse().slice(0, 200));
    expect(record.maxInFlight).toBeLessThanOrEqual(2);
    // the next period warms the same budget again, no more
    await clock.advance(300_000);
    expect(record.starts).toHaveLength(400);
  });

  it('never more than CACHE_WARM_CONCURRENCY runs in flight when the store is slower than the pace; a due run waits for a free slot', async () => {
    const { clock, record, fetch } = warmedCache({ maxEntries: 10, concurrency: 2 }, new ManualClock(Date.UTC(2024, 0, 1), { awaitTasks: false }));
    for (let n = 0; n < 10; n += 1) {
      await fetch(`k${n}`);
      await clock.advance(10);
    }
    record.watching = record.gated = true;
    const tick = Date.UTC(2024, 0, 1) + 300_000;
    const step = 30_000;
    await clock.advance(tick - clock.now());
    expect([record.starts.length, record.inFlight]).toEqual([1, 1]);
    await clock.advance(step);
    expect([record.starts.length, record.inFlight]).toEqual([2, 2]);
    // the third is due, but both slots are taken: it waits however long time runs on
    await clock.advance(3 * step);
    expect([record.starts.length, record.inFlight]).toEqual([2, 2]);
    record.gates.shift()!.resolve();
    await new Promise((resolve) => setImmediate(resolve));
    expect([record.starts.length, record.inFlight]).toEqual([3, 2]);
    expect(record.starts.at(-1)!.at).toBe(tick + 4 * step);
    // released, the rest follow at the pace; what the period leaves unstarted is dropped at the next tick
    record.gated = false;
    for (const gate of record.gates.splice(0)) gate.resolve();
    await clock.advance(300_000 - 4 * step);
    expect(record.starts.map((start) => (start.at - tick) / step)).toEqual([0, 1, 4, 5, 6, 7, 8, 9, 10]);
    // the last is the next period's first: a fresh queue
    expect(record.starts.at(-1)!.key).toBe(record.starts[0]!.key);
    expect(record.maxInFlight).toBe(2);
  });

  it('entries beyond the budget are not warmed: they expire at their TTL and are computed again on the next request', async () => {
    const { clock, cache, record, fetch } = warmedCache({ maxEntries: 1, concurrency: 1 });
    await fetch('old');
    await clock.advance(1000);
    await fetch('new');
    record.watching = true;
    await clock.advance(900_000 - 1000);
    expect(record.starts.map((start) => start.key)).toEqual(['new', 'new', 'new']);
    expect(cache.lookUp('old')).toBeUndefined();
    expect((await fetch('old')).status).toBe('MISS');
  });
});

describe('cronRuleForPeriod', () => {
  it('expresses periods that divide a minute, an hour or a day', () => {
    expect(cronRuleForPeriod(30)).toBe('*/30 * * * * *');
    expect(cronRuleForPeriod(300)).toBe('0 */5 * * * *');
    expect(cronRuleForPeriod(7200)).toBe('0 0 */2 * * *');
    expect(cronRuleForPeriod(86400)).toBe('0 0 0 * * *');
  });

  it('rejects periods that would drift, naming the period', () => {
    expect(() => cronRuleForPeriod(7)).toThrow('7 s');
    expect(() => cronRuleForPeriod(420)).toThrow('420 s');
    expect(() => cronRuleForPeriod(0)).toThrow();
  });
});
