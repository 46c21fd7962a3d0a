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

/**
 * A place in the engine's turns, taken before the query's scans so that a query the engine could not
 * take costs the store nothing. `turn()` (once the scans are done) waits for a slot; from then on the
 * reservation is the query's turn. `release()` frees whatever it holds, at any step, and may be called again.
 */
export interface EngineReservation extends EngineTurn {
  turn(): Promise<EngineTurn>;
}

interface Entry {
  key: string;
  deadline: number;
  state: 'reserved' | 'waiting' | 'running' | 'over';
  /** While waiting: starts the query, or fails its turn. */
  grant?: () => void;
  refuse?: (error: Error) => void;
  timer?: NodeJS.Timeout;
}

/**
 * Who runs next in the engine. A key runs at most `perKey` queries at once, so it can never hold every
 * process; queries beyond that wait, a bounded number per key and in all, and are refused past those
 * bounds with a Retry-After estimate. Waiting keys take turns (round robin), so a key with many queries
 * waiting delays another key's query by at most one of its own. A query still waiting at its deadline
 * is answered as timed out and never runs. Time is milliseconds from `now`, the clock deadlines use.
 *
 * Counting: a query is admitted when it takes its reservation, before its scans, and counts from then
 * until it is over, whether it is scanning (reserved), waiting for a slot or running. A key may hold
 * `perKey + maxWaitingPerKey` admitted queries, and all keys together `slots + maxWaiting`: the queue
 * bounds are those counts less the queries that may run, so a query still scanning takes a waiting
 * place just as a queued one does. A reservation holds no slot, so a query's scans never keep the
 * engine idle.
 */
export class EngineQueue {
  private readonly admitted = new Set<Entry>();
  private readonly admittedPerKey = new Map<string, number>();
  private readonly runningPerKey = new Map<string, number>();
  private running = 0;
  /** Insertion order is turn order: a key that is served moves to the back. */
  private readonly waiting = new Map<string, Entry[]>();
  private waitingCount = 0;

  constructor(
    private readonly limits: EngineQueueLimits,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** A place for the key's query, which has until `deadline`; throws if the key or the engine may take no more. */
  reserve(key: string, deadline: number): EngineReservation {
    if (deadline <= this.now()) throw outOfTime();
    const held = this.admittedOf(key);
    if (held >= this.limits.perKey + this.limits.maxWaitingPerKey) {
      const seconds = this.retryAfterSeconds(key);
      const running = this.count(this.runningPerKey, key);
      throw new RateLimited(
        `this API key already has ${running} sandboxed ${plural(running, 'query', 'queries')} running and ${held - running} waiting for the query engine or scanning before it ` +
          `(at most ${this.limits.perKey} running, SANDBOX_ENGINE_PER_KEY, and ${this.limits.maxWaitingPerKey} waiting, SANDBOX_ENGINE_QUEUE_PER_KEY); retry in ${seconds} s`,
        seconds,
      );
    }
    if (this.admitted.size >= this.limits.slots + this.limits.maxWaiting) {
      const seconds = this.retryAfterSeconds(undefined);
      throw new StoreUnavailable(
        `the query engine is busy: ${this.admitted.size - this.running} sandboxed queries are waiting for it or scanning before it (SANDBOX_ENGINE_QUEUE_MAX); retry in ${seconds} s`,
        seconds,
      );
    }
    const entry: Entry = { key, deadline, state: 'reserved' };
    this.admitted.add(entry);
    this.admittedPerKey.set(key, held + 1);
    return { turn: () => this.turn(entry), release: () => this.release(entry) };
  }

  /** Queries running, waiting for a slot, and reserved while they scan (for metrics and tests). */
  get counts(): { running: number; waiting: number; reserved: number } {
    return { running: this.running, waiting: this.waitingCount, reserved: this.admitted.size - this.running - this.waitingCount };
  }

  private turn(entry: Entry): Promise<EngineTurn> {
    if (entry.state !== 'reserved') return Promise.reject(new Error(`an engine reservation asked for its turn while ${entry.state}`));
    const turn: EngineTurn = { release: () => this.release(entry) };
    const now = this.now();
    if (entry.deadline <= now) {
      this.release(entry);
      return Promise.reject(outOfTime());
    }
    if (this.running < this.limits.slots && this.count(this.runningPerKey, entry.key) < this.limits.perKey) {
      this.start(entry);
      return Promise.resolve(turn);
    }
    return new Promise((resolve, reject) => {
      entry.state = 'waiting';
      entry.grant = () => {
        this.start(entry);
        resolve(turn);
      };
      entry.refuse = reject;
      entry.timer = setTimeout(() => this.release(entry, timedOut(this.now() - now)), entry.deadline - now);
      const queued = this.waiting.get(entry.key) ?? [];
      queued.push(entry);
      this.waiting.set(entry.key, queued);
      this.waitingCount += 1;
    });
  }

  private start(entry: Entry): void {
    entry.state = 'running';
    this.running += 1;
    this.runningPerKey.set(entry.key, this.count(this.runningPerKey, entry.key) + 1);
  }

  /** Frees the entry's place; a turn still waiting fails with `refusal`. */
  private release(entry: Entry, refusal?: Error): void {
    const was = entry.state;
    if (was === 'over') return;
    entry.state = 'over';
    this.admitted.delete(entry);
    this.decrement(this.admittedPerKey, entry.key);
    if (was === 'waiting') {
      this.leave(entry);
      entry.refuse!(refusal ?? new Error('the engine reservation was released while it waited for its turn'));
    }
    if (was === 'running') {
      this.running -= 1;
      this.decrement(this.runningPerKey, entry.key);
      this.dispatch();
    }
  }

  /** Grants free slots to waiting keys in turn order, skipping keys already at their share. */
  private dispatch(): void {
    while (this.running < this.limits.slots) {
      const key = [...this.waiting.keys()].find((candidate) => this.count(this.runningPerKey, candidate) < this.limits.perKey);
      if (key === undefined) return;
      const entry = this.waiting.get(key)![0]!;
      this.leave(entry);
      // to the back of the turn order, behind every other waiting key
      const rest = this.waiting.get(key);
      if (rest) {
        this.waiting.delete(key);
        this.waiting.set(key, rest);
      }
      entry.grant!();
    }
  }

  private leave(entry: Entry): void {
    clearTimeout(entry.timer);
    const queued = this.waiting.get(entry.key);
    const at = queued?.indexOf(entry) ?? -1;
    if (at < 0) return;
    queued!.splice(at, 1);
    if (queued!.length === 0) this.waiting.delete(entry.key);
    this.waitingCount -= 1;
  }

  private admittedOf(key: string): number {
    return this.count(this.admittedPerKey, key);
  }

  private count(counts: Map<string, number>, key: string): number {
    return counts.get(key) ?? 0;
  }

  private decrement(counts: Map<string, number>, key: string): void {
    const left = this.count(counts, key) - 1;
    if (left <= 0) counts.delete(key);
    else counts.set(key, left);
  }

  /**
   * When a place is sure to be free: the nearest deadline of the admitted queries (the key's own, when
   * the key is at its bound). A query running or waiting is over by then; one still scanning is refused
   * its turn when its scans end.
   */
  private retryAfterSeconds(key: string | undefined): number {
    const holding = [...this.admitted].filter((entry) => key === undefined || entry.key === key);
    const nearest = Math.min(...holding.map((entry) => entry.deadline));
    return Number.isFinite(nearest) ? Math.max(1, Math.ceil((nearest - this.now()) / 1000)) : 1;
  }
}

/** A query whose deadline came before the engine could run it. */
export function outOfTime(): QueryTimeout {
  return new QueryTimeout('the query ran out of its time limit (QUERY_TIMEOUT_MS) before the query engine could run it');
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
