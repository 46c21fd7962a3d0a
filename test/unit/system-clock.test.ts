import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logger.ts';
import { ResultCache } from '../../src/cache/result-cache.ts';
import { SystemClock, type ScheduledTask } from '../../src/cache/clock.ts';
import { waitFor } from '../support/ingest.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Resolves once `condition` holds (checked every 50 ms); the test's timeout bounds the wait. */
const until = (description: string, condition: () => boolean) => waitFor(description, async () => (condition() ? true : undefined), 20_000, 50);

/** The production clock: real time and node-schedule jobs, with periods short enough to watch. */
describe('SystemClock on node-schedule', () => {
  const tasks: ScheduledTask[] = [];
  afterEach(() => tasks.splice(0).forEach((task) => task.cancel()));

  it('runs a task again and again until cancelled, then never again', async () => {
    const ticks: number[] = [];
    const task = new SystemClock().every(1, async () => void ticks.push(ticks.length));
    tasks.push(task);
    await until('three runs', () => ticks.length >= 3);
    task.cancel();
    const counted = ticks.length;
    // longer than a period: a schedule still alive would have run once more
    await sleep(1500);
    expect(ticks.length).toBe(counted);
  }, 30_000);

  it('hands a failed run to its error handler and keeps the schedule', async () => {
    const failures: unknown[] = [];
    let runs = 0;
    tasks.push(
      new SystemClock((error) => failures.push(error)).every(1, async () => {
        runs += 1;
        throw new Error(`run ${runs} failed`);
      }),
    );
    await until('two failed runs handled', () => failures.length >= 2);
    expect(failures.map((error) => (error as Error).message)).toEqual(Array.from({ length: failures.length }, (_, n) => `run ${n + 1} failed`));
  }, 30_000);

  it('warms a cached result in the background: later reads are hits with the newer rows', async () => {
    const cache = new ResultCache({ maxBytes: 1 << 20, clock: new SystemClock(), logger: createLogger('test', 'silent') });
    let runs = 0;
    const request = { key: 'usage', policy: { ttlSeconds: 30, warmEverySeconds: 1 }, run: async () => Buffer.from(JSON.stringify([{ run: ++runs }])) };
    try {
      expect(await cache.fetch(request)).toMatchObject({ status: 'MISS', body: Buffer.from('[{"run":1}]') });
      // nobody asks in between: only the warmer can run the query again
      const stored = () => JSON.parse(cache.lookUp('usage')?.body.toString() ?? '[{}]')[0].run as number | undefined;
      await until('a warmed result stored', () => (stored() ?? 0) >= 2);
      const warmed = await cache.fetch(request);
      expect(warmed.status).toBe('HIT');
      expect(JSON.parse(warmed.body.toString())[0].run).toBeGreaterThanOrEqual(2);
    } finally {
      cache.close();
    }
  }, 30_000);
});
