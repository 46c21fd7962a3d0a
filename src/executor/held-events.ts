import { QueryTimeout, StoreUnavailable } from '../errors.ts';
import { sandboxHeldEvents } from '../metrics.ts';
import { Wakeups } from './wakeups.ts';

/**
 * The events the sandboxed queries of this process hold in memory together, from the page that
 * fetched them until the query's answer (SANDBOX_MAX_HELD_EVENTS). Each query's own budget bounds
 * one query; this bounds their sum, so a burst of broad queries waits its turn instead of filling the
 * heap. A query that finds nothing left waits while another holder is still at work (its events come
 * back when it ends), and is refused with 503 when every other holder is waiting too, which would
 * otherwise wait for each other until their deadlines.
 */
export class HeldEvents {
  private held = 0;
  private readonly holds = new Set<EventHold>();
  private readonly wakeups = new Wakeups();

  constructor(readonly capacity: number) {}

  /** One query's share, from its first page to its end; `close` it whatever the outcome. */
  open(deadline: number): EventHold {
    const hold = new EventHold(this, deadline);
    this.holds.add(hold);
    return hold;
  }

  /** @internal EventHold's side. */
  grant(hold: EventHold, wanted: number): number | 'wait' | 'refuse' {
    const free = this.capacity - this.held;
    if (free > 0) {
      const granted = Math.min(wanted, free);
      this.held += granted;
      sandboxHeldEvents.set(this.held);
      return granted;
    }
    const someoneWorking = [...this.holds].some((other) => other !== hold && other.count > 0 && !other.waiting);
    return someoneWorking ? 'wait' : 'refuse';
  }

  /** @internal */
  give(count: number): void {
    if (count <= 0) return;
    this.held -= count;
    sandboxHeldEvents.set(this.held);
    this.wakeups.wakeAll();
  }

  /** @internal */
  whenGiven(): Promise<void> {
    return this.wakeups.next();
  }

  /** @internal */
  forget(hold: EventHold): void {
    this.holds.delete(hold);
    // a waiter that saw this hold at work must look again: it may now be alone
    this.wakeups.wakeAll();
  }

  /** Events held now by all queries (for tests and operators). */
  get count(): number {
    return this.held;
  }
}

/** One query's events in the process-wide count. */
export class EventHold {
  count = 0;
  waiting = false;

  constructor(
    private readonly pool: HeldEvents,
    private readonly deadline: number,
  ) {}

  /** Up to `wanted` events (at least one), waiting while another query at work holds what is left. */
  async take(wanted: number, signal?: AbortSignal): Promise<number> {
    for (;;) {
      signal?.throwIfAborted();
      const answer = this.pool.grant(this, wanted);
      if (typeof answer === 'number') {
        this.count += answer;
        return answer;
      }
      if (answer === 'refuse') {
        throw new StoreUnavailable(
          `the query service holds ${this.pool.capacity} events for sandboxed queries in flight (SANDBOX_MAX_HELD_EVENTS), all of them waiting for more; retry in 1 s`,
          1,
        );
      }
      await this.wait(signal);
    }
  }

  /** Events taken but not kept (a page shorter than asked, a failed one). */
  giveBack(count: number): void {
    const returned = Math.min(count, this.count);
    this.count -= returned;
    this.pool.give(returned);
  }

  /** The query is over: all its events go back. */
  close(): void {
    this.giveBack(this.count);
    this.pool.forget(this);
  }

  private async wait(signal?: AbortSignal): Promise<void> {
    const left = this.deadline - performance.now();
    if (left <= 0) throw outOfTime();
    this.waiting = true;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    try {
      await Promise.race([
        this.pool.whenGiven(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(outOfTime()), left);
        }),
        new Promise<never>((_, reject) => {
          onAbort = () => reject(signal!.reason);
          signal?.addEventListener('abort', onAbort, { once: true });
        }),
      ]);
    } finally {
      this.waiting = false;
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
  }
}

function outOfTime(): QueryTimeout {
  return new QueryTimeout(
    'the query ran out of its time limit (QUERY_TIMEOUT_MS) waiting for other sandboxed queries to free memory for its events (SANDBOX_MAX_HELD_EVENTS); retry later',
  );
}
