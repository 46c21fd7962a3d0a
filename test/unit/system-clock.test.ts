import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logger.ts';
import { ResultCache } from '../../src/cache/result-cache.ts';
import { SystemClock, type ScheduledTask } from '../../src/cache/clock.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The production clock: real time and node-schedule jobs, with periods short enough to watch. */
describe('SystemClock on node-schedule', () => {
  const tasks: ScheduledTask[] = [];
  afterEach(() => tasks.splice(0).forEach((task) => task.cancel()));

  it('runs a task once per period until cancelled', async () => {
    const ticks: number[] = [];
    const task = new SystemClock().every(1, async () => void ticks.push(Date.now()));
    tasks.push(task);
    await sleep(3500);
    task.cancel();
    const counted = ticks.length;
    expect(counted).toBeGreaterThanOrEqual(3);
    expect(counted).toBeLessThanOrEqual(4);
    await sleep(1500);
    expect(ticks.length).toBe(counted);
  }, 15_000);

  it('hands a failed run to its error handler and keeps the schedule', async () => {
    const failures: unknown[] = [];
    let runs = 0;
    tasks.push(new SystemClock((error) => failures.push(error)).every(1, async () => {
      runs += 1;
      throw new Error(`run ${runs} failed`);
    }));
    await sleep(2600);
    expect(runs).toBeGreaterThanOrEqual(2);
    expect(failures.map((error) => (error as Error).message)).toEqual(Array.from({ length: runs }, (_, n) => `run ${n + 1} failed`));
  }, 15_000);

  it('warms a cached result in the background: later reads are hits with the newer rows', async () => {
    const cache = new ResultCache({ maxBytes: 1 << 20, clock: new SystemClock(), logger: createLogger('test', 'silent') });
    let runs = 0;
    const request = { key: 'usage', policy: { ttlSeconds: 30, warmEverySeconds: 1 }, run: async () => Buffer.from(JSON.stringify([{ run: ++runs }])) };
    try {
      expect(await cache.fetch(request)).toMatchObject({ status: 'MISS', body: Buffer.from('[{"run":1}]') });
      await sleep(2600);
      // nobody asked in between: only the warmer can have run the query again
      expect(runs).toBeGreaterThanOrEqual(2);
      const warmed = await cache.fetch(request);
      expect(warmed.status).toBe('HIT');
      expect(JSON.parse(warmed.body.toString())).toEqual([{ run: runs }]);
    } finally {
      cache.close();
    }
  }, 15_000);
});
