/**
 * Per-key token buckets: each API key may spend `burst` requests at once and earns
 * `perMinute` back per minute, continuously. Time comes from the injected clock, so tests move
 * it forward instead of sleeping.
 */
export interface TokenBucketLimits {
  /** Sustained requests per minute per key; 0 turns limiting off. */
  perMinute: number;
  /** Most requests a key with a full bucket may make at once. */
  burst: number;
}

export type RateDecision =
  | { kind: 'unlimited' }
  | { kind: 'allowed'; limit: number; remaining: number }
  | { kind: 'limited'; limit: number; retryAfterSeconds: number };

interface Bucket {
  tokens: number;
  updatedAt: number;
}

export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();
  private readonly tokensPerMs: number;
  /** Time an empty bucket takes to fill: a bucket idle this long is full and can be forgotten. */
  private readonly fillMs: number;
  private lastSweepAt: number;

  constructor(
    private readonly limits: TokenBucketLimits,
    private readonly clock: { now(): number },
  ) {
    if (!Number.isFinite(limits.perMinute) || limits.perMinute < 0) throw new Error(`rate limit per minute must be 0 or more, got ${limits.perMinute}`);
    if (!Number.isInteger(limits.burst) || limits.burst < 1) throw new Error(`rate limit burst must be a whole number of at least 1, got ${limits.burst}`);
    this.tokensPerMs = limits.perMinute / 60_000;
    this.fillMs = limits.perMinute === 0 ? Infinity : limits.burst / this.tokensPerMs;
    this.lastSweepAt = clock.now();
  }

  /** Spends one token of `keyId`'s bucket if it has one. */
  take(keyId: string): RateDecision {
    if (this.limits.perMinute === 0) return { kind: 'unlimited' };
    const now = this.clock.now();
    this.sweep(now);
    const bucket = this.buckets.get(keyId) ?? { tokens: this.limits.burst, updatedAt: now };
    // a clock stepped backwards earns nothing rather than taking tokens away
    const elapsed = Math.max(0, now - bucket.updatedAt);
    bucket.tokens = Math.min(this.limits.burst, bucket.tokens + elapsed * this.tokensPerMs);
    bucket.updatedAt = Math.max(now, bucket.updatedAt);
    this.buckets.set(keyId, bucket);
    if (bucket.tokens < 1) {
      const waitMs = (1 - bucket.tokens) / this.tokensPerMs;
      return { kind: 'limited', limit: this.limits.burst, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
    }
    bucket.tokens -= 1;
    return { kind: 'allowed', limit: this.limits.burst, remaining: Math.floor(bucket.tokens) };
  }

  /** Whether `keyId` has a token to spend now, without spending it. */
  peek(keyId: string): RateDecision {
    if (this.limits.perMinute === 0) return { kind: 'unlimited' };
    const bucket = this.buckets.get(keyId);
    if (!bucket) return { kind: 'allowed', limit: this.limits.burst, remaining: this.limits.burst };
    const tokens = Math.min(this.limits.burst, bucket.tokens + Math.max(0, this.clock.now() - bucket.updatedAt) * this.tokensPerMs);
    if (tokens >= 1) return { kind: 'allowed', limit: this.limits.burst, remaining: Math.floor(tokens) };
    return { kind: 'limited', limit: this.limits.burst, retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / this.tokensPerMs / 1000)) };
  }

  /** Buckets held (keys seen within the last fill time). */
  get size(): number {
    return this.buckets.size;
  }

  /**
   * Drops buckets idle long enough to be full again: forgetting one changes nothing, since a new
   * bucket starts full. Runs at most once per fill time, so its cost spreads over the requests and
   * at most the keys seen within two fill times are held.
   */
  private sweep(now: number): void {
    if (now - this.lastSweepAt < this.fillMs) return;
    this.lastSweepAt = now;
    for (const [keyId, bucket] of this.buckets) {
      if (bucket.tokens + (now - bucket.updatedAt) * this.tokensPerMs >= this.limits.burst) this.buckets.delete(keyId);
    }
  }
}
