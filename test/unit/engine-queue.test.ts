import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { QueryTimeout, RateLimited, StoreUnavailable } from '../../src/errors.ts';
import { EngineQueue, type EngineQueueLimits, type EngineTurn } from '../../src/executor/engine/engine-queue.ts';

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
    queue.acquire(key, deadline).then(
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
    expect(queue.counts).toEqual({ running: 2, waiting: 0 });
  });

  it('never lets one key hold every slot: its second query waits although a slot is free', async () => {
    const queue = queueOf();
    const work = recorder(queue);
    void work.enter('a', 'a1');
    void work.enter('a', 'a2');
    await vi.advanceTimersByTimeAsync(0);
    expect(work.granted).toEqual(['a1']);
    expect(queue.counts).toEqual({ running: 1, waiting: 1 });
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

  it('refuses a key over its waiting share with RateLimited and a Retry-After from its running query\'s deadline', async () => {
    const queue = queueOf({ maxWaitingPerKey: 1 });
    const work = recorder(queue);
    void work.enter('a', 'a1', Date.now() + 4_500);
    void work.enter('a', 'a2');
    void work.enter('a', 'a3');
    await vi.advanceTimersByTimeAsync(0);
    const refusal = work.failures.get('a3');
    expect(refusal).toBeInstanceOf(RateLimited);
    expect((refusal as RateLimited).retryAfterSeconds).toBe(5);
    expect((refusal as Error).message).toMatch(/1 sandboxed query running and 1 waiting .*SANDBOX_ENGINE_PER_KEY.*SANDBOX_ENGINE_QUEUE_PER_KEY\); retry in 5 s/);
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
    expect(queue.counts).toEqual({ running: 1, waiting: 2 });
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
    expect(queue.counts).toEqual({ running: 1, waiting: 1 });
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
    expect(queue.counts).toEqual({ running: 1, waiting: 1 });
  });
});
