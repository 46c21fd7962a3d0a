import { QueryTimeout, QueryTooBroad, StoreUnavailable } from '../errors.ts';
import { sandboxHeldBytes, sandboxHeldEvents } from '../metrics.ts';
import { Wakeups } from './wakeups.ts';

/** What an event is reckoned to weigh before any page has been weighed: an edge event with its metadata, as rows in the heap. */
const FIRST_BYTES_PER_EVENT = 4096;
/**
 * A page in flight costs more than the rows it becomes: the response's text (about 0.6 of the rows'
 * bytes) and its parsed hits (the rows and their _index, _id and sort) are in the heap at once.
 */
export const IN_FLIGHT_FACTOR = 2;

/**
 * The events the sandboxed queries of this process hold in memory together, from the page that
 * fetched them until the query's answer: at most `capacity` events (SANDBOX_MAX_HELD_EVENTS) and
 * `maxBytes` of their rows in the heap (SANDBOX_MAX_HELD_BYTES). Each query's own budget bounds
 * one query; this bounds their sum, so a burst of broad queries waits its turn instead of filling the
 * heap. A page is granted against its bytes as reckoned from the pages weighed before it (the query's
 * own, else the last one weighed), times IN_FLIGHT_FACTOR while it is in flight, and charged what its
 * rows weigh once it arrives. A query that finds
 * nothing left waits while another holder is still at work (its events come back when it ends), and
 * is refused with 503 when every other holder is waiting too, which would otherwise wait for each
 * other until their deadlines; a query whose own rows would pass `maxBytes` is refused as too broad.
 */
export class HeldEvents {
  private held = 0;
  private heldBytes = 0;
  /** Bytes per event of the last page weighed: the reckoning for a query that has weighed none yet. */
  private lastBytesPerEvent = FIRST_BYTES_PER_EVENT;
  private readonly holds = new Set<EventHold>();
  private readonly wakeups = new Wakeups();

  constructor(
    readonly capacity: number,
    readonly maxBytes = Number.POSITIVE_INFINITY,
  ) {}

  /** One query's share, from its first page to its end; `close` it whatever the outcome. */
  open(deadline: number): EventHold {
    const hold = new EventHold(this, deadline);
    this.holds.add(hold);
    return hold;
  }

  /** @internal EventHold's side. */
  grant(hold: EventHold, wanted: number): number | 'wait' | 'refuse' | 'too_broad' {
    const inFlight = hold.bytesPerEvent(this.lastBytesPerEvent) * IN_FLIGHT_FACTOR;
    // no other query's end would make room for one more event of this one
    if (hold.bytes + inFlight > this.maxBytes) return 'too_broad';
    const free = Math.min(this.capacity - this.held, Math.floor((this.maxBytes - this.heldBytes) / inFlight));
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

  /** @internal A hold's bytes changed by `change`; a page weighed `bytes` for `events` events. */
  charge(change: number, weighed?: { events: number; bytes: number }): void {
    if (weighed && weighed.events > 0) this.lastBytesPerEvent = Math.max(1, weighed.bytes / weighed.events);
    if (change === 0) return;
    this.heldBytes += change;
    sandboxHeldBytes.set(this.heldBytes);
    if (change < 0) this.wakeups.wakeAll();
  }

  /** @internal */
  reckoning(): number {
    return this.lastBytesPerEvent;
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

  /** Bytes charged now to all queries: their pages weighed, and those in flight as reckoned (for tests and operators). */
  get bytes(): number {
    return this.heldBytes;
  }
}

/** One query's events in the process-wide count. */
export class EventHold {
  /** Events taken: those of pages kept, and of pages in flight. */
  count = 0;
  waiting = false;
  /** What this query is charged: its kept pages as weighed, its pages in flight as reckoned. */
  bytes = 0;
  private keptEvents = 0;
  private keptBytes = 0;

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
        this.recharge();
        return answer;
      }
      if (answer === 'too_broad') throw this.tooBroad();
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
    this.recharge();
    this.pool.give(returned);
  }

  /**
   * A page of `events` events arrived and is kept, its rows weighing `bytes`: charged as weighed from
   * now on. Throws QueryTooBroad when this query's rows alone pass the bytes all queries may hold.
   */
  keep(events: number, bytes: number): void {
    this.keptEvents += events;
    this.keptBytes += bytes;
    this.recharge({ events, bytes });
    if (this.bytes > this.pool.maxBytes) throw this.tooBroad();
  }

  /** What an event of this query is reckoned to weigh: its own pages' average once it has one. */
  bytesPerEvent(otherwise: number): number {
    return this.keptEvents > 0 ? Math.max(1, this.keptBytes / this.keptEvents) : otherwise;
  }

  /** The query is over: all its events go back. */
  close(): void {
    this.keptEvents = 0;
    this.keptBytes = 0;
    this.giveBack(this.count);
    this.pool.forget(this);
  }

  private recharge(weighed?: { events: number; bytes: number }): void {
    const inFlight = Math.max(0, this.count - this.keptEvents);
    const bytes = this.keptBytes + inFlight * this.bytesPerEvent(this.pool.reckoning()) * IN_FLIGHT_FACTOR;
    const change = bytes - this.bytes;
    this.bytes = bytes;
    this.pool.charge(change, weighed);
  }

  private tooBroad(): QueryTooBroad {
    return new QueryTooBroad(
      `the query's events take more than the ${this.pool.maxBytes} bytes the query service holds for sandboxed queries (SANDBOX_MAX_HELD_BYTES); ` +
        'narrow the time range (iso_timestamp_start / iso_timestamp_end or a WHERE on timestamp), select fewer columns (metadata is the largest), ' +
        'filter on more fields, or aggregate (GROUP BY) so the log store can count for you',
    );
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
