import { QueryTooBroad } from '../errors.ts';
import { sandboxScannedEventsTotal } from '../metrics.ts';
import type { EventHold } from './held-events.ts';
import { Wakeups } from './wakeups.ts';

/**
 * The events all scans of one request may read together, shared by those scans. A page is asked
 * for only once its size is reserved, and no more is reserved than takes the request one event past
 * its total (the event that proves the query too broad), so however many scans run at once, the
 * events fetched from the store stay within that. When the total is passed, or any scan fails,
 * `signal` aborts the searches still running and no scan asks for another page. With a `hold`, each
 * page is also taken from the process-wide count of held events (SANDBOX_MAX_HELD_EVENTS).
 */
export class ScanBudget {
  private used = 0;
  private reserved = 0;
  private readonly byCte = new Map<string, number>();
  private readonly scans = new Set<string>();
  private readonly controller = new AbortController();
  private readonly wakeups = new Wakeups();

  constructor(
    readonly total: number,
    private readonly hold?: EventHold,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /**
   * Reserves the size of a page: `wanted`, or what is left when that is less (at least one). Waits
   * while pages in flight hold what is left: each of them settles or is released.
   */
  async reserve(wanted: number): Promise<number> {
    for (;;) {
      this.controller.signal.throwIfAborted();
      if (wanted === 0) return 0;
      const left = this.total + 1 - this.used - this.reserved;
      if (left > 0) {
        const granted = Math.min(wanted, left);
        this.reserved += granted;
        if (!this.hold) return granted;
        let held: number;
        try {
          held = await this.hold.take(granted, this.controller.signal);
        } catch (error) {
          this.release(granted, 0);
          throw error;
        }
        this.reserved -= granted - held;
        return held;
      }
      await this.wakeups.next();
    }
  }

  /** Whether settle wants each page's rows weighed (their bytes count against SANDBOX_MAX_HELD_BYTES). */
  get weighsPages(): boolean {
    return this.hold !== undefined;
  }

  /**
   * A page of `scan` arrived with `received` of its `granted` events, its rows weighing `bytes`; the
   * rest is free again. Throws once the request has read more than its total, or holds more bytes than all queries may.
   */
  settle(scan: { table: string; cte: string }, granted: number, received: number, bytes = 0): void {
    this.reserved -= granted;
    this.hold?.giveBack(granted - received);
    try {
      this.hold?.keep(received, bytes);
    } catch (error) {
      this.cancel(error);
      throw error;
    }
    this.used += received;
    sandboxScannedEventsTotal.inc(received);
    this.byCte.set(scan.cte, (this.byCte.get(scan.cte) ?? 0) + received);
    this.scans.add(scan.table);
    if (this.used > this.total) {
      const error = this.tooBroad();
      this.cancel(error);
      throw error;
    }
    this.wakeups.wakeAll();
  }

  /** A page that failed gives its reservation back. */
  release(granted: number, held = granted): void {
    this.reserved -= granted;
    this.hold?.giveBack(held);
    this.wakeups.wakeAll();
  }

  /** Stops every scan of the request: searches in flight are aborted, waiting ones refused. */
  cancel(reason: unknown): void {
    if (!this.controller.signal.aborted) this.controller.abort(reason);
    this.wakeups.wakeAll();
  }

  private tooBroad(): QueryTooBroad {
    const ctes = [...this.byCte.keys()].join(', ');
    const advice =
      'narrow the time range (iso_timestamp_start / iso_timestamp_end or a WHERE on timestamp), filter on more fields, or aggregate (GROUP BY) so the log store can count for you';
    if (this.scans.size <= 1) return new QueryTooBroad(`the query reads more than ${this.total} events of ${ctes}; ${advice}`);
    return new QueryTooBroad(
      `the query reads more than ${this.total} events of ${ctes} in ${this.scans.size} scans together; ${advice}, or read each table once (in a WITH clause)`,
    );
  }
}
