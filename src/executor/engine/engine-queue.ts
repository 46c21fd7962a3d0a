import { QueryTimeout, RateLimited, StoreUnavailable } from '../../errors.ts';

export interface EngineQueueLimits {
  /** Queries running at once in all: one per engine process. */
  slots: number;
  /** Queries one key may run at once (SANDBOX_ENGINE_PER_KEY). */
  perKey: number;
  /** Queries waiting for a slot, all keys together (SANDBOX_ENGINE_QUEUE_MAX). */
  maxWaiting: number;
  /** Queries one key may have waiting (SANDBOX_ENGINE_QUEUE_PER_KEY). */
  maxWaitingPerKey: number;
}

/** A granted slot; release it when the query is over, however it ended. */
export interface EngineTurn {
  release(): void;
}

interface Running {
  key: string;
  deadline: number;
}

interface Waiter {
  key: string;
  grant: () => void;
  timer: NodeJS.Timeout;
}

/**
 * Who runs next in the engine. A key runs at most `perKey` queries at once, so it can never hold every
 * process; queries beyond that wait, a bounded number per key and in all, and are refused past those
 * bounds with a Retry-After estimate. Waiting keys take turns (round robin), so a key with many queries
 * waiting delays another key's query by at most one of its own. A query still waiting at its deadline
 * is answered as timed out and never runs. Time is milliseconds from `now`, the clock deadlines use.
 */
export class EngineQueue {
  private readonly running = new Set<Running>();
  private readonly runningPerKey = new Map<string, number>();
  /** Insertion order is turn order: a key that is served moves to the back. */
  private readonly waiting = new Map<string, Waiter[]>();
  private waitingCount = 0;

  constructor(
    private readonly limits: EngineQueueLimits,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Resolves with a turn once the key's query may run; rejects if it may not wait or its deadline passes first. */
  acquire(key: string, deadline: number): Promise<EngineTurn> {
    const now = this.now();
    if (deadline <= now) return Promise.reject(new QueryTimeout('the query ran out of its time limit (QUERY_TIMEOUT_MS) before the query engine could run it'));
    if (this.running.size < this.limits.slots && this.runningOf(key) < this.limits.perKey) return Promise.resolve(this.start(key, deadline));
    const queued = this.waiting.get(key) ?? [];
    if (queued.length >= this.limits.maxWaitingPerKey) {
      const seconds = this.retryAfterSeconds(key);
      return Promise.reject(
        new RateLimited(
          `this API key already has ${this.runningOf(key)} sandboxed ${plural(this.runningOf(key), 'query', 'queries')} running and ${queued.length} waiting for the query engine ` +
            `(at most ${this.limits.perKey} running, SANDBOX_ENGINE_PER_KEY, and ${this.limits.maxWaitingPerKey} waiting, SANDBOX_ENGINE_QUEUE_PER_KEY); retry in ${seconds} s`,
          seconds,
        ),
      );
    }
    if (this.waitingCount >= this.limits.maxWaiting) {
      const seconds = this.retryAfterSeconds(undefined);
      return Promise.reject(
        new StoreUnavailable(`the query engine is busy: ${this.waitingCount} sandboxed queries are waiting for it (SANDBOX_ENGINE_QUEUE_MAX); retry in ${seconds} s`, seconds),
      );
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        key,
        grant: () => resolve(this.start(key, deadline)),
        timer: setTimeout(() => {
          this.leave(waiter);
          reject(timedOut(this.now() - now));
        }, deadline - now),
      };
      queued.push(waiter);
      this.waiting.set(key, queued);
      this.waitingCount += 1;
    });
  }

  /** Queries running and waiting (for metrics and tests). */
  get counts(): { running: number; waiting: number } {
    return { running: this.running.size, waiting: this.waitingCount };
  }

  private start(key: string, deadline: number): EngineTurn {
    const entry: Running = { key, deadline };
    this.running.add(entry);
    this.runningPerKey.set(key, this.runningOf(key) + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.running.delete(entry);
        const left = this.runningOf(key) - 1;
        if (left === 0) this.runningPerKey.delete(key);
        else this.runningPerKey.set(key, left);
        this.dispatch();
      },
    };
  }

  /** Grants free slots to waiting keys in turn order, skipping keys already at their share. */
  private dispatch(): void {
    while (this.running.size < this.limits.slots) {
      const key = [...this.waiting.keys()].find((candidate) => this.runningOf(candidate) < this.limits.perKey);
      if (key === undefined) return;
      const waiter = this.waiting.get(key)![0]!;
      this.leave(waiter);
      // to the back of the turn order, behind every other waiting key
      const rest = this.waiting.get(key);
      if (rest) {
        this.waiting.delete(key);
        this.waiting.set(key, rest);
      }
      clearTimeout(waiter.timer);
      waiter.grant();
    }
  }

  private leave(waiter: Waiter): void {
    const queued = this.waiting.get(waiter.key);
    const at = queued?.indexOf(waiter) ?? -1;
    if (at < 0) return;
    queued!.splice(at, 1);
    if (queued!.length === 0) this.waiting.delete(waiter.key);
    this.waitingCount -= 1;
  }

  private runningOf(key: string): number {
    return this.runningPerKey.get(key) ?? 0;
  }

  /** When a slot that could serve the caller is sure to be free: the nearest deadline of the queries holding it. */
  private retryAfterSeconds(key: string | undefined): number {
    const holding = [...this.running].filter((entry) => key === undefined || entry.key === key || this.runningOf(key) < this.limits.perKey);
    const nearest = Math.min(...holding.map((entry) => entry.deadline));
    return Number.isFinite(nearest) ? Math.max(1, Math.ceil((nearest - this.now()) / 1000)) : 1;
  }
}

/** Counted from the request's start: the time spent before reaching the queue is spent too. */
function timedOut(waitedMs: number): QueryTimeout {
  return new QueryTimeout(
    `the query waited ${Math.round(waitedMs)} ms for a query engine process and ran out of its time limit (QUERY_TIMEOUT_MS); the engine is busy, retry later`,
  );
}

function plural(count: number, one: string, many: string): string {
  return count === 1 ? one : many;
}
