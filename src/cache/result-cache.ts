import type { Logger } from '../../shared/logger.ts';
import { cacheBytes, cacheEntries, cacheEvictionsTotal, cacheLookupsTotal, cacheWarmingRunsTotal } from '../metrics.ts';
import type { Clock, ScheduledTask } from './clock.ts';

/** Label objects made once: a hit is counted on every cached request. */
const HIT = { result: 'hit' } as const;
const MISS = { result: 'miss' } as const;

export interface CachePolicy {
  /** Absolute lifetime of a result, counted from when its query started. 0 = not cached. */
  ttlSeconds: number;
  /** Re-run live results in the background this often; null = never. */
  warmEverySeconds: number | null;
}

export interface CacheRequest {
  key: string;
  policy: CachePolicy;
  /**
   * Runs the query and encodes its answer as the bytes a response sends. Called again for every
   * warming, so it must read the time (e.g. a look-back window) itself.
   */
  run: () => Promise<Buffer>;
}

export interface CacheResult {
  /** The encoded answer, shared between callers: never modified. */
  body: Buffer;
  status: 'HIT' | 'MISS';
  ageSeconds: number;
}

/**
 * What warming may cost: every entry read within its TTL would otherwise be run again each period,
 * all at once, and a cache of small results holds tens of thousands of them.
 */
export interface WarmingBudget {
  /** Runs one period may start, the most recently read entries first; the others expire at their TTL. */
  maxEntries: number;
  /** Runs in flight at once; a run due while every slot is taken waits for one. */
  concurrency: number;
}

/** As CACHE_WARM_MAX_ENTRIES and CACHE_WARM_CONCURRENCY default. */
export const DEFAULT_WARMING_BUDGET: WarmingBudget = { maxEntries: 200, concurrency: 2 };

export interface ResultCacheOptions {
  maxBytes: number;
  clock: Clock;
  logger: Logger;
  warming?: WarmingBudget;
}

/**
 * The warming of one period: a tick queues the entries to warm, and they are started one at a time,
 * spread evenly over the period, at most `concurrency` in flight.
 */
interface Warmer {
  periodSeconds: number;
  tick: ScheduledTask;
  /** Keys still to warm this period, in order. */
  queue: string[];
  /** Time between two starts this period. */
  spacingMs: number;
  /** The next start, when one is scheduled. */
  nextStart?: ScheduledTask;
  inFlight: number;
  /** A start came due while every slot was taken: the next run to finish starts it. */
  waitingForSlot: boolean;
}

interface Entry {
  key: string;
  body: Buffer;
  /** Key plus body, the measure the byte limit applies to. */
  bytes: number;
  computedAt: number;
  lastReadAt: number;
  policy: CachePolicy;
  run: () => Promise<Buffer>;
}

/**
 * In-process cache of endpoint results: absolute TTL, background warming within a budget, one query per key at a
 * time, errors never stored, bounded by bytes with the least recently used result dropped first.
 * A result is held as the encoded bytes a response sends: a hit costs no serialisation, and the
 * byte limit measures what is really held.
 */
export class ResultCache {
  /** Map order is recency order: the first entry is the least recently used. */
  private readonly entries = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<Buffer>>();
  private readonly warmers = new Map<number, Warmer>();
  private totalBytes = 0;
  private readonly warming: WarmingBudget;

  constructor(private readonly options: ResultCacheOptions) {
    this.warming = options.warming ?? DEFAULT_WARMING_BUDGET;
  }

  /** The live result of `key`, counted as a hit; undefined (and nothing counted) when there is none. */
  lookUp(key: string): CacheResult | undefined {
    const now = this.options.clock.now();
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (!this.isLive(entry, now)) {
      this.remove(entry);
      return undefined;
    }
    entry.lastReadAt = now;
    this.entries.delete(entry.key);
    this.entries.set(entry.key, entry);
    cacheLookupsTotal.inc(HIT);
    return { body: entry.body, status: 'HIT', ageSeconds: Math.floor((now - entry.computedAt) / 1000) };
  }

  async fetch(request: CacheRequest): Promise<CacheResult> {
    const hit = this.lookUp(request.key);
    if (hit) return hit;
    cacheLookupsTotal.inc(MISS);
    const body = await this.runOnce(request);
    return { body, status: 'MISS', ageSeconds: 0 };
  }

  /**
   * Drops every result whose key `matches` (an endpoint that changed or was deleted); a warmer left
   * without results stops at its next tick. Returns how many were dropped.
   */
  drop(matches: (key: string) => boolean): number {
    const dropped = [...this.entries.values()].filter((entry) => matches(entry.key));
    for (const entry of dropped) this.remove(entry);
    return dropped.length;
  }

  /** Bytes currently held. */
  get bytes(): number {
    return this.totalBytes;
  }

  /** Stops warming and drops every result. */
  close(): void {
    for (const warmer of this.warmers.values()) this.stopWarmer(warmer);
    for (const entry of [...this.entries.values()]) this.remove(entry);
  }

  /** Single flight: callers missing on a key while its query runs share that run and its outcome. */
  private runOnce(request: CacheRequest): Promise<Buffer> {
    const running = this.inflight.get(request.key);
    if (running) return running;
    const startedAt = this.options.clock.now();
    const flight = Promise.resolve()
      .then(request.run)
      .then((body) => {
        this.store(request, body, startedAt);
        return body;
      })
      .finally(() => this.inflight.delete(request.key));
    this.inflight.set(request.key, flight);
    return flight;
  }

  private isLive(entry: Entry, now: number): boolean {
    return now < entry.computedAt + entry.policy.ttlSeconds * 1000;
  }

  private store(request: CacheRequest, body: Buffer, computedAt: number): void {
    if (request.policy.ttlSeconds <= 0) return;
    const previous = this.entries.get(request.key);
    const bytes = Buffer.byteLength(request.key) + body.length;
    if (bytes > this.options.maxBytes) {
      if (previous) this.remove(previous);
      this.options.logger.debug({ bytes, maxBytes: this.options.maxBytes }, 'result larger than the whole cache, not cached');
      return;
    }
    const entry: Entry = {
      key: request.key,
      body,
      bytes,
      computedAt,
      lastReadAt: previous?.lastReadAt ?? computedAt,
      policy: request.policy,
      run: request.run,
    };
    // replacing keeps the entry's place in recency order: a warming run is not a use
    this.entries.set(entry.key, entry);
    this.account(bytes - (previous?.bytes ?? 0), previous ? 0 : 1);
    if (entry.policy.warmEverySeconds !== null) this.ensureWarmer(entry.policy.warmEverySeconds);
    this.evictOverLimit();
  }

  private evictOverLimit(): void {
    for (const oldest of this.entries.values()) {
      if (this.totalBytes <= this.options.maxBytes) return;
      this.remove(oldest);
      cacheEvictionsTotal.inc();
    }
  }

  private remove(entry: Entry): void {
    if (this.entries.get(entry.key) !== entry) return;
    this.entries.delete(entry.key);
    this.account(-entry.bytes, -1);
  }

  private account(bytes: number, entries: number): void {
    this.totalBytes += bytes;
    cacheBytes.inc(bytes);
    cacheEntries.inc(entries);
  }

  private ensureWarmer(periodSeconds: number): void {
    if (this.warmers.has(periodSeconds)) return;
    const tick = () => this.queueWarming(warmer);
    const warmer: Warmer = { periodSeconds, queue: [], spacingMs: 0, inFlight: 0, waitingForSlot: false, tick: this.options.clock.every(periodSeconds, tick) };
    this.warmers.set(periodSeconds, warmer);
  }

  private stopWarmer(warmer: Warmer): void {
    warmer.tick.cancel();
    warmer.nextStart?.cancel();
    warmer.queue = [];
    this.warmers.delete(warmer.periodSeconds);
  }

  /**
   * A period begins: the live results of this warming period that someone read within their TTL,
   * the most recently read first, up to the budget, replace what the last period left unstarted.
   * The old rows keep serving until the new ones arrive, and until their TTL if a run fails.
   */
  private queueWarming(warmer: Warmer): Promise<void> {
    const now = this.options.clock.now();
    const candidates: Entry[] = [];
    let live = 0;
    // most recently used first, so the sort below keeps that order among entries read at the same moment
    for (const entry of [...this.entries.values()].reverse()) {
      if (entry.policy.warmEverySeconds !== warmer.periodSeconds) continue;
      if (!this.isLive(entry, now)) {
        this.remove(entry);
        continue;
      }
      live += 1;
      if (this.wantsWarming(entry, now)) candidates.push(entry);
    }
    if (live === 0) {
      this.stopWarmer(warmer);
      return Promise.resolve();
    }
    candidates.sort((a, b) => b.lastReadAt - a.lastReadAt);
    warmer.queue = candidates.slice(0, this.warming.maxEntries).map((entry) => entry.key);
    warmer.spacingMs = (warmer.periodSeconds * 1000) / Math.max(1, warmer.queue.length);
    warmer.nextStart?.cancel();
    warmer.nextStart = undefined;
    warmer.waitingForSlot = false;
    return this.startNext(warmer);
  }

  private wantsWarming(entry: Entry, now: number): boolean {
    return now - entry.lastReadAt < entry.policy.ttlSeconds * 1000 && !this.inflight.has(entry.key);
  }

  /** One start of the pace: the next queued entry still worth warming, unless every slot is taken; then the next start is scheduled. */
  private startNext(warmer: Warmer): Promise<void> {
    warmer.nextStart = undefined;
    if (warmer.inFlight >= this.warming.concurrency) {
      warmer.waitingForSlot = true;
      return Promise.resolve();
    }
    const now = this.options.clock.now();
    let entry: Entry | undefined;
    while (!entry && warmer.queue.length > 0) {
      const candidate = this.entries.get(warmer.queue.shift()!);
      if (candidate && this.isLive(candidate, now) && this.wantsWarming(candidate, now)) entry = candidate;
    }
    if (warmer.queue.length > 0) warmer.nextStart = this.options.clock.after(warmer.spacingMs, () => this.startNext(warmer));
    return entry ? this.warmOne(warmer, entry) : Promise.resolve();
  }

  private warmOne(warmer: Warmer, entry: Entry): Promise<void> {
    warmer.inFlight += 1;
    return this.runOnce(entry)
      .then(
        () => void cacheWarmingRunsTotal.inc({ outcome: 'ok' }),
        (error: unknown) => {
          cacheWarmingRunsTotal.inc({ outcome: 'failed' });
          this.options.logger.warn(
            { err: error, periodSeconds: warmer.periodSeconds },
            'warming a cached result failed; the cached rows serve until their TTL',
          );
        },
      )
      .finally(() => {
        warmer.inFlight -= 1;
        if (!warmer.waitingForSlot) return;
        warmer.waitingForSlot = false;
        void this.startNext(warmer);
      });
  }
}
