import type { Client, estypes } from '@elastic/elasticsearch';
import type { BulkEntry } from './bulk.ts';
import type { IngestMetrics } from './metrics.ts';

interface Waiting {
  entries: readonly BulkEntry[];
  resolve(items: estypes.BulkResponseItem[]): void;
  reject(error: unknown): void;
}

/** Ends a linger and times the slots: the process's timers, or a test's manual clock (test/support/manual-clock.ts). */
export interface LingerTimer {
  after(delayMs: number, task: () => Promise<void>): { cancel(): void };
  /** Milliseconds on a clock that only moves forward. */
  now(): number;
}

const processTimers: LingerTimer = {
  now: () => performance.now(),
  after(delayMs, task) {
    const timer = setTimeout(() => void task(), delayMs);
    return { cancel: () => clearTimeout(timer) };
  },
};

/** Only what classifyItem reads comes back: the per-item `_id`, `_index`, `_version` ... of a 5,000-event bulk are most of its response. */
const BULK_RESPONSE_FILTER = 'errors,items.*.status,items.*.error';

/**
 * Partitions are processed side by side, each with a handful of events under a steady load; sending
 * each partition's events alone would mean many tiny bulk requests (each a translog sync per
 * shard). Writes that arrive within a few milliseconds of each other share one bulk request, within
 * the byte and count bounds; each caller gets back the item results for its own events.
 *
 * At most `maxInFlight` bulk requests are in flight: under load, writes go on filling the next bulk
 * while Elasticsearch works on the current ones, so it gets a few full bulks rather than many small
 * ones queueing in its write pool.
 *
 * On a slow stream a bulk never fills: it is sent `lingerMs` after its first write (or, when every
 * slot is taken then, as soon as one frees), so an event waits for at most the linger plus the
 * requests ahead of it before Elasticsearch has it.
 */
export class BulkCoalescer {
  private waiting: Waiting[] = [];
  private bytes = 0;
  private count = 0;
  private linger: { cancel(): void } | undefined;
  private readonly sealed: { batch: Waiting[]; at: number }[] = [];
  private inFlight = 0;
  /** Since when no bulk is in flight; undefined before the first write (nothing was ever there to send). */
  private idleSince: number | undefined;
  /**
   * Bodies of bulks Elasticsearch has answered, filled again by the next ones: a fresh body per bulk
   * is megabytes of native memory that only a full collection gives back, and under the worker's
   * small old generation (worker-start.ts) that churn is what brings the full collections on.
   */
  private readonly spareBodies: Buffer[] = [];

  constructor(
    private readonly client: Client,
    private readonly metrics: IngestMetrics,
    private readonly limits: { maxBytes: number; maxEvents: number; lingerMs: number; maxInFlight: number },
    private readonly timer: LingerTimer = processTimers,
  ) {}

  write(entries: readonly BulkEntry[]): Promise<estypes.BulkResponseItem[]> {
    let bytes = 0;
    for (const entry of entries) bytes += entry.length;
    return new Promise((resolve, reject) => {
      if (this.waiting.length > 0 && (this.count + entries.length > this.limits.maxEvents || this.bytes + bytes > this.limits.maxBytes)) this.seal();
      this.idleSince ??= this.timer.now();
      this.waiting.push({ entries, resolve, reject });
      this.count += entries.length;
      this.bytes += bytes;
      // with every slot taken the bulk keeps filling; the next completion seals it
      this.linger ??= this.timer.after(this.limits.lingerMs, async () => {
        this.linger = undefined;
        if (this.inFlight < this.limits.maxInFlight) this.seal();
      });
    });
  }

  private seal(): void {
    this.linger?.cancel();
    this.linger = undefined;
    if (this.waiting.length > 0) this.sealed.push({ batch: this.waiting, at: this.timer.now() });
    this.waiting = [];
    this.bytes = 0;
    this.count = 0;
    this.send();
  }

  private send(): void {
    while (this.inFlight < this.limits.maxInFlight && this.sealed.length > 0) {
      const { batch, at } = this.sealed.shift()!;
      const now = this.timer.now();
      this.metrics.bulkSlotWait.inc((now - at) / 1000);
      if (this.inFlight === 0 && this.idleSince !== undefined) this.metrics.bulkSlotsIdle.inc((now - this.idleSince) / 1000);
      this.inFlight += 1;
      const timer = this.metrics.bulkDuration.startTimer();
      const { body, backing } = bodyOf(batch, this.spareBodies.pop(), this.limits.maxBytes);
      this.client.bulk({ body, refresh: false, filter_path: BULK_RESPONSE_FILTER } as estypes.BulkRequest).then(
        (response) => {
          // answered, so the request's bytes were all sent; a failed one may still be on its way out and is left to the collector
          if (this.spareBodies.length < this.limits.maxInFlight) this.spareBodies.push(backing);
          timer({ outcome: response.errors ? 'partial' : 'ok' });
          let start = 0;
          for (const waiting of batch) {
            waiting.resolve(response.items.slice(start, start + waiting.entries.length).map((entry) => entry.index ?? Object.values(entry)[0]!));
            start += waiting.entries.length;
          }
          this.completed();
        },
        (error: unknown) => {
          timer({ outcome: 'failed' });
          for (const waiting of batch) waiting.reject(error);
          this.completed();
        },
      );
    }
  }

  private completed(): void {
    this.inFlight -= 1;
    if (this.inFlight === 0) this.idleSince = this.timer.now();
    if (this.sealed.length === 0 && this.waiting.length > 0) this.seal();
    else this.send();
  }
}

/**
 * The entries' bytes one after the other: nothing is serialised again, and entries adjoining in their slab are copied as one.
 * Written into `spare` when it is large enough, else into a new buffer of at least a full bulk's bytes (kept as a spare later).
 */
function bodyOf(batch: readonly Waiting[], spare: Buffer | undefined, fullBytes: number): { body: Buffer; backing: Buffer } {
  let length = 0;
  for (const waiting of batch) for (const entry of waiting.entries) length += entry.length;
  const backing = spare !== undefined && spare.length >= length ? spare : Buffer.allocUnsafeSlow(Math.max(length, fullBytes));
  const body = backing.subarray(0, length);
  let at = 0;
  let run: BulkEntry | undefined;
  let runEnd = 0;
  for (const waiting of batch) {
    for (const entry of waiting.entries) {
      if (run !== undefined && entry.slab === run.slab && entry.start === runEnd) {
        runEnd += entry.length;
        continue;
      }
      if (run !== undefined) at += run.slab.bytes.copy(body, at, run.start, runEnd);
      run = entry;
      runEnd = entry.start + entry.length;
    }
  }
  if (run !== undefined) run.slab.bytes.copy(body, at, run.start, runEnd);
  return { body, backing };
}
