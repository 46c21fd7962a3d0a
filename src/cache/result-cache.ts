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

export interface ResultCacheOptions {
  maxBytes: number;
  clock: Clock;
  logger: Logger;
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
 * In-process cache of endpoint results: absolute TTL, background warming, one query per key at a
 * time, errors never stored, bounded by bytes with the least recently used result dropped first.
 * A result is held as the encoded bytes a response sends: a hit costs no serialisation, and the
 * byte limit measures what is really held.
 */
export class ResultCache {
  /** Map order is recency order: the first entry is the least recently used. */
  private readonly entries = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<Buffer>>();
  private readonly warmers = new Map<number, ScheduledTask>();
  private totalBytes = 0;

  constructor(private readonly options: ResultCacheOptions) {}

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

  /** Bytes currently held. */
  get bytes(): number {
    return this.totalBytes;
  }

  /** Stops warming and drops every result. */
  close(): void {
    for (const warmer of this.warmers.values()) warmer.cancel();
    this.warmers.clear();
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
    this.warmers.set(periodSeconds, this.options.clock.every(periodSeconds, () => this.warm(periodSeconds)));
  }

  /**
   * Re-runs the live results of one warming period that someone read within their TTL; the old rows
   * keep serving until the new ones arrive, and until their TTL if the run fails.
   */
  private async warm(periodSeconds: number): Promise<void> {
    const now = this.options.clock.now();
    const runs: Promise<void>[] = [];
    for (const entry of [...this.entries.values()]) {
      if (entry.policy.warmEverySeconds !== periodSeconds) continue;
      if (!this.isLive(entry, now)) {
        this.remove(entry);
        continue;
      }
      const unread = now - entry.lastReadAt >= entry.policy.ttlSeconds * 1000;
      if (unread || this.inflight.has(entry.key)) continue;
      runs.push(
        this.runOnce(entry).then(
          () => void cacheWarmingRunsTotal.inc({ outcome: 'ok' }),
          (error: unknown) => {
            cacheWarmingRunsTotal.inc({ outcome: 'failed' });
            this.options.logger.warn({ err: error, periodSeconds }, 'warming a cached result failed; the cached rows serve until their TTL');
          },
        ),
      );
    }
    await Promise.all(runs);
    const stillWarmed = [...this.entries.values()].some((entry) => entry.policy.warmEverySeconds === periodSeconds);
    if (!stillWarmed) {
      this.warmers.get(periodSeconds)?.cancel();
      this.warmers.delete(periodSeconds);
    }
  }
}
