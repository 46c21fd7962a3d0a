/**
 * Per-key export budgets in rows per minute: a token bucket per API key holding at most one minute
 * of rows and earning them back continuously. A page reserves its rows before it starts and gives
 * back what it did not send. Time comes from the injected clock, so tests move it instead of sleeping.
 */
export type BudgetDecision = { kind: 'granted'; rows: number } | { kind: 'spent'; retryAfterSeconds: number };

interface Bucket {
  rows: number;
  updatedAt: number;
}

export class RowBudget {
  private readonly buckets = new Map<string, Bucket>();
  private readonly rowsPerMs: number;
  private lastSweepAt: number;

  constructor(
    /** Rows per minute per key; 0 turns the budget off. */
    readonly perMinute: number,
    private readonly clock: { now(): number },
  ) {
    if (!Number.isInteger(perMinute) || perMinute < 0) throw new Error(`export rows per minute must be a whole number of 0 or more, got ${perMinute}`);
    this.rowsPerMs = perMinute / 60_000;
    this.lastSweepAt = clock.now();
  }

  /** Up to `wanted` rows of `keyId`'s budget, at least one; none left and the caller is told when one will be. */
  reserve(keyId: string, wanted: number): BudgetDecision {
    if (this.perMinute === 0) return { kind: 'granted', rows: wanted };
    const bucket = this.current(keyId);
    if (bucket.rows < 1) {
      const waitMs = (1 - bucket.rows) / this.rowsPerMs;
      return { kind: 'spent', retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
    }
    const rows = Math.min(wanted, Math.floor(bucket.rows));
    bucket.rows -= rows;
    return { kind: 'granted', rows };
  }

  /**
   * A reservation's end: the rows reserved but not sent are given back; rows sent beyond it (an
   * answer whose size was not known in advance) are owed, and the key waits for them next time.
   */
  settle(keyId: string, reserved: number, sent: number): void {
    if (this.perMinute === 0 || reserved === sent) return;
    const bucket = this.current(keyId);
    bucket.rows = Math.min(this.perMinute, bucket.rows + reserved - sent);
  }

  /** The key's bucket, refilled for the time since it was last used. */
  private current(keyId: string): Bucket {
    const now = this.clock.now();
    this.sweep(now);
    const bucket = this.buckets.get(keyId) ?? { rows: this.perMinute, updatedAt: now };
    // a clock stepped backwards earns nothing rather than taking rows away
    bucket.rows = Math.min(this.perMinute, bucket.rows + Math.max(0, now - bucket.updatedAt) * this.rowsPerMs);
    bucket.updatedAt = Math.max(now, bucket.updatedAt);
    this.buckets.set(keyId, bucket);
    return bucket;
  }

  /** Forgets buckets full again (a new one starts full), at most once a minute, so only recently active keys are held. */
  private sweep(now: number): void {
    if (now - this.lastSweepAt < 60_000) return;
    this.lastSweepAt = now;
    for (const [keyId, bucket] of this.buckets) {
      if (bucket.rows + (now - bucket.updatedAt) * this.rowsPerMs >= this.perMinute) this.buckets.delete(keyId);
    }
  }
}
