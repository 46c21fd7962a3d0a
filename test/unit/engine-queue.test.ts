import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { QueryTimeout, RateLimited, StoreUnavailable } from '../../src/errors.ts';
import { EngineQueue, type EngineQueueLimits, type EngineReservation, type EngineTurn } from '../../src/executor/engine/engine-queue.ts';

const FAR = 60_000;

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

function queueOf(limits: Partial<EngineQueueLimits> = {}): EngineQueue {
  return new EngineQueue({ slots: 2, perKey: 1, maxWaiting: 100, maxWaitingPerKey: 100, ...limits }, () => Date.now());
}

/** Fake work: each turn granted is recorded in order, under its label, until the test releases it. */
function recorder(queue: EngineQueue) {
  const granted: string[] = [];
  const turns = new Map<string, EngineTurn>();
  const failures = new Map<string, unknown>();
  const enter = (key: string, label: string, deadline = Date.now() + FAR) =>
    // a reservation whose scans are already done: refused at once, or a turn once the query may run
    new Promise<EngineTurn>((resolve) => resolve(queue.reserve(key, deadline).turn())).then(
      (turn) => {
        granted.push(label);
        turns.set(label, turn);
      },
      (error: unknown) => void failures.set(label, error),
    );
  const release = async (label: string) => {
    turns.get(label)!.release();
    await vi.advanceTimersByTimeAsync(0);
  };
  return { granted, failures, enter, release };
}

describe('EngineQueue', () => {
  it('runs at once while a slot is free and the key is within its share', async () => {
    const queue = queueOf();
    const work = recorder(queue);
    await Promise.all([work.enter('a', 'a1'), work.enter('b', 'b1')]);
    expect(work.granted).toEqual(['a1', 'b1']);
    expect(queue.counts).toEqual({ running: 2, waiting: 0, reserved: 0 });
  });

  it('never lets one key hold every slot: its second query waits although a slot is free', async () => {
    const queue = queueOf();
    const work = recorder(queue);
    void work.enter('a', 'a1');
    void work.enter('a', 'a2');
    await vi.advanceTimersByTimeAsync(0);
    expect(work.granted).toEqual(['a1']);
    expect(queue.counts).toEqual({ running: 1, waiting: 1, reserved: 0 });
    void work.enter('b', 'b1');
    await vi.advanceTimersByTimeAsync(0);
    expect(work.granted).toEqual(['a1', 'b1']);
    await work.release('a1');
    expect(work.granted).toEqual(['a1', 'b1', 'a2']);
  });

  it('takes waiting keys in turns: a key with many queued does not delay another key behind all of them', async () => {
    const queue = queueOf({ slots: 1, perKey: 1 });
    const work = recorder(queue);
    void work.enter('flood', 'f1');
    for (const label of ['f2', 'f3', 'f4']) void work.enter('flood', label);
    await vi.advanceTimersByTimeAsync(0);
    void work.enter('quiet', 'q1');
    void work.enter('other', 'o1');
    await vi.advanceTimersByTimeAsync(0);
    for (const label of ['f1', 'f2', 'q1', 'o1', 'f3']) await work.release(label);
    expect(work.granted).toEqual(['f1', 'f2', 'q1', 'o1', 'f3', 'f4']);
  });

  it("refuses a key over its waiting share with RateLimited and a Retry-After from its running query's deadline", async () => {
    const queue = queueOf({ maxWaitingPerKey: 1 });
    const work = recorder(queue);
    void work.enter('a', 'a1', Date.now() + 4_500);
    void work.enter('a', 'a2');
    void work.enter('a', 'a3');
    await vi.advanceTimersByTimeAsync(0);
    const refusal = work.failures.get('a3');
    expect(refusal).toBeInstanceOf(RateLimited);
    expect((refusal as RateLimited).retryAfterSeconds).toBe(5);
    expect((refusal as Error).message).toMatch(
      /1 sandboxed query running and 1 waiting .*SANDBOX_ENGINE_PER_KEY.*SANDBOX_ENGINE_QUEUE_PER_KEY\); retry in 5 s/,
    );
    // another key is not affected
    void work.enter('b', 'b1');
    await vi.advanceTimersByTimeAsync(0);
    expect(work.granted).toEqual(['a1', 'b1']);
  });

  it('refuses with StoreUnavailable and a Retry-After when the whole queue is full', async () => {
    const queue = queueOf({ slots: 1, maxWaiting: 2 });
    const work = recorder(queue);
    void work.enter('a', 'a1', Date.now() + 2_000);
    void work.enter('b', 'b1');
    void work.enter('c', 'c1');
    void work.enter('d', 'd1');
    await vi.advanceTimersByTimeAsync(0);
    const refusal = work.failures.get('d1');
    expect(refusal).toBeInstanceOf(StoreUnavailable);
    expect((refusal as StoreUnavailable).retryAfterSeconds).toBe(2);
    expect((refusal as Error).message).toMatch(/busy: 2 sandboxed queries are waiting .*SANDBOX_ENGINE_QUEUE_MAX/);
    expect(queue.counts).toEqual({ running: 1, waiting: 2, reserved: 0 });
  });

  it('answers a query still waiting at its deadline with QueryTimeout; it never runs and leaves the queue', async () => {
    const queue = queueOf({ slots: 1 });
    const work = recorder(queue);
    void work.enter('a', 'a1');
    void work.enter('b', 'b1', Date.now() + 1_000);
    void work.enter('c', 'c1');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(work.failures.get('b1')).toBeInstanceOf(QueryTimeout);
    expect((work.failures.get('b1') as Error).message).toMatch(/waited 1000 ms for a query engine process .*QUERY_TIMEOUT_MS/);
    expect(queue.counts).toEqual({ running: 1, waiting: 1, reserved: 0 });
    await work.release('a1');
    expect(work.granted).toEqual(['a1', 'c1']);
  });

  it('refuses a query whose deadline has already passed', async () => {
    const work = recorder(queueOf());
    await work.enter('a', 'a1', Date.now());
    expect(work.failures.get('a1')).toBeInstanceOf(QueryTimeout);
    expect(work.granted).toEqual([]);
  });

  it('releasing a turn twice frees one slot only', async () => {
    const queue = queueOf({ slots: 1, perKey: 1 });
    const work = recorder(queue);
    void work.enter('a', 'a1');
    void work.enter('b', 'b1');
    void work.enter('c', 'c1');
    await vi.advanceTimersByTimeAsync(0);
    await work.release('a1');
    await work.release('a1');
    expect(work.granted).toEqual(['a1', 'b1']);
    expect(queue.counts).toEqual({ running: 1, waiting: 1, reserved: 0 });
  });
});

describe('EngineQueue reservations (taken before the scans)', () => {
  it("counts a reservation against the key's bound before it runs: a key at its share and queue is refused while its queries scan", () => {
    const queue = queueOf({ slots: 2, perKey: 1, maxWaitingPerKey: 1 });
    queue.reserve('a', Date.now() + 3_000);
    queue.reserve('a', Date.now() + FAR);
    expect(queue.counts).toEqual({ running: 0, waiting: 0, reserved: 2 });
    const refusal = catching(() => queue.reserve('a', Date.now() + FAR));
    expect(refusal).toBeInstanceOf(RateLimited);
    expect((refusal as RateLimited).retryAfterSeconds).toBe(3);
    expect((refusal as Error).message).toMatch(
      /0 sandboxed queries running and 2 waiting for the query engine or scanning before it .*SANDBOX_ENGINE_QUEUE_PER_KEY/,
    );
    // another key still has its place
    queue.reserve('b', Date.now() + FAR);
    expect(queue.counts).toEqual({ running: 0, waiting: 0, reserved: 3 });
  });

  it('counts reservations in the bound of all keys: slots plus SANDBOX_ENGINE_QUEUE_MAX admitted queries', () => {
    const queue = queueOf({ slots: 2, perKey: 1, maxWaiting: 1 });
    for (const key of ['a', 'b', 'c']) queue.reserve(key, Date.now() + FAR);
    const refusal = catching(() => queue.reserve('d', Date.now() + FAR));
    expect(refusal).toBeInstanceOf(StoreUnavailable);
    expect((refusal as Error).message).toMatch(/busy: 3 sandboxed queries are waiting for it or scanning before it \(SANDBOX_ENGINE_QUEUE_MAX\)/);
  });

  it('a released reservation frees its place at once, and releasing it again frees nothing more', () => {
    const queue = queueOf({ slots: 1, perKey: 1, maxWaitingPerKey: 0 });
    const scanning = queue.reserve('a', Date.now() + FAR);
    expect(() => queue.reserve('a', Date.now() + FAR)).toThrow(RateLimited);
    // the scan failed, was cancelled, or the query did not translate
    scanning.release();
    scanning.release();
    expect(queue.counts).toEqual({ running: 0, waiting: 0, reserved: 0 });
    queue.reserve('a', Date.now() + FAR);
    expect(() => queue.reserve('a', Date.now() + FAR)).toThrow(RateLimited);
  });

  it('becomes a turn when its scans are done: at once while a slot is free, else in turn order, and holds no slot while it scans', async () => {
    const queue = queueOf({ slots: 1, perKey: 1 });
    const granted: string[] = [];
    const scanning = queue.reserve('a', Date.now() + FAR);
    const work = recorder(queue);
    // the slot is free for others while a's scans run
    await work.enter('b', 'b1');
    expect(work.granted).toEqual(['b1']);
    void work.enter('c', 'c1');
    await vi.advanceTimersByTimeAsync(0);
    // a's scans end after c queued: a waits behind c
    const turn = scanning.turn().then((t) => (granted.push('a'), t));
    await vi.advanceTimersByTimeAsync(0);
    expect(queue.counts).toEqual({ running: 1, waiting: 2, reserved: 0 });
    await work.release('b1');
    expect(work.granted).toEqual(['b1', 'c1']);
    expect(granted).toEqual([]);
    await work.release('c1');
    expect(granted).toEqual(['a']);
    (await turn).release();
    expect(queue.counts).toEqual({ running: 0, waiting: 0, reserved: 0 });
  });

  it('keeps the round robin: reservations of a flooding key that finish scanning first do not delay another key behind all of them', async () => {
    const queue = queueOf({ slots: 1, perKey: 1 });
    const flood = ['f1', 'f2', 'f3', 'f4'].map((label) => ({ label, reservation: queue.reserve('flood', Date.now() + FAR) }));
    const quiet = queue.reserve('quiet', Date.now() + FAR);
    const order: string[] = [];
    const turns = new Map<string, EngineTurn>();
    const take = (label: string, reservation: EngineReservation) =>
      void reservation.turn().then((turn) => {
        order.push(label);
        turns.set(label, turn);
      });
    for (const { label, reservation } of flood) take(label, reservation);
    await vi.advanceTimersByTimeAsync(0);
    take('q1', quiet);
    await vi.advanceTimersByTimeAsync(0);
    for (const label of ['f1', 'f2', 'q1', 'f3']) {
      turns.get(label)!.release();
      await vi.advanceTimersByTimeAsync(0);
    }
    expect(order).toEqual(['f1', 'f2', 'q1', 'f3', 'f4']);
  });

  it("the deadline is the request's: scans that end after it get QueryTimeout and free the place", async () => {
    const queue = queueOf({ slots: 1, perKey: 1, maxWaitingPerKey: 0 });
    const reservation = queue.reserve('a', Date.now() + 1_000);
    await vi.advanceTimersByTimeAsync(1_000);
    await expect(reservation.turn()).rejects.toBeInstanceOf(QueryTimeout);
    expect(queue.counts).toEqual({ running: 0, waiting: 0, reserved: 0 });
    queue.reserve('a', Date.now() + FAR);
  });

  it("a turn waiting for a slot times out at the request's deadline, not a whole time limit after the scans", async () => {
    const queue = queueOf({ slots: 1, perKey: 1 });
    const work = recorder(queue);
    await work.enter('a', 'a1');
    const reservation = queue.reserve('b', Date.now() + 1_500);
    await vi.advanceTimersByTimeAsync(1_000);
    const turn = reservation.turn();
    const failure = turn.catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(500);
    expect(await failure).toBeInstanceOf(QueryTimeout);
    expect(queue.counts).toEqual({ running: 1, waiting: 0, reserved: 0 });
  });

  it('released while its turn waits: the place is freed and the wait ends with an error', async () => {
    const queue = queueOf({ slots: 1, perKey: 1 });
    const work = recorder(queue);
    await work.enter('a', 'a1');
    const reservation = queue.reserve('b', Date.now() + FAR);
    const failure = reservation.turn().catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(0);
    reservation.release();
    expect(await failure).toBeInstanceOf(Error);
    expect(queue.counts).toEqual({ running: 1, waiting: 0, reserved: 0 });
    await work.release('a1');
    expect(queue.counts).toEqual({ running: 0, waiting: 0, reserved: 0 });
  });
});

function catching(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  throw new Error('expected a refusal');
}
