import { describe, expect, it } from 'vitest';
import { TokenBuckets } from '../../src/auth/token-bucket.ts';
import { ManualClock } from '../support/manual-clock.ts';

function spend(buckets: TokenBuckets, keyId: string, times: number): string[] {
  return Array.from({ length: times }, () => buckets.take(keyId).kind);
}

describe('TokenBuckets', () => {
  it('lets a full bucket spend its burst at once, then refuses', () => {
    const buckets = new TokenBuckets({ perMinute: 60, burst: 5 }, new ManualClock());
    expect([1, 2, 3, 4, 5].map(() => buckets.take('k'))).toEqual([4, 3, 2, 1, 0].map((remaining) => ({ kind: 'allowed', limit: 5, remaining })));
    expect(buckets.take('k')).toEqual({ kind: 'limited', limit: 5, retryAfterSeconds: 1 });
  });

  it('keeps each key in its own bucket', () => {
    const buckets = new TokenBuckets({ perMinute: 60, burst: 2 }, new ManualClock());
    expect(spend(buckets, 'a', 3)).toEqual(['allowed', 'allowed', 'limited']);
    expect(spend(buckets, 'b', 2)).toEqual(['allowed', 'allowed']);
  });

  it('refills at the per-minute rate as the clock advances, never beyond the burst', async () => {
    const clock = new ManualClock();
    const buckets = new TokenBuckets({ perMinute: 6, burst: 3 }, clock); // one token per 10 s
    expect(spend(buckets, 'k', 4)).toEqual(['allowed', 'allowed', 'allowed', 'limited']);
    await clock.advance(9_999);
    expect(buckets.take('k').kind).toBe('limited');
    await clock.advance(1);
    expect(spend(buckets, 'k', 2)).toEqual(['allowed', 'limited']);
    await clock.advance(3_600_000);
    expect(spend(buckets, 'k', 4)).toEqual(['allowed', 'allowed', 'allowed', 'limited']);
  });

  it('computes Retry-After as the whole seconds until the next token, at least 1', async () => {
    const clock = new ManualClock();
    const buckets = new TokenBuckets({ perMinute: 2, burst: 1 }, clock); // one token per 30 s
    buckets.take('k');
    expect(buckets.take('k')).toMatchObject({ kind: 'limited', retryAfterSeconds: 30 });
    await clock.advance(20_500);
    expect(buckets.take('k')).toMatchObject({ kind: 'limited', retryAfterSeconds: 10 }); // 9.5 s rounds up
    await clock.advance(9_400);
    expect(buckets.take('k')).toMatchObject({ kind: 'limited', retryAfterSeconds: 1 }); // 0.1 s still says 1
    const fast = new TokenBuckets({ perMinute: 600_000, burst: 1 }, clock);
    fast.take('k');
    expect(fast.take('k')).toMatchObject({ kind: 'limited', retryAfterSeconds: 1 });
  });

  it('drops buckets idle long enough to be full, and only those', async () => {
    const clock = new ManualClock();
    const buckets = new TokenBuckets({ perMinute: 60, burst: 10 }, clock); // empty to full in 10 s
    spend(buckets, 'idle', 10);
    await clock.advance(5_000);
    spend(buckets, 'busy', 10);
    expect(buckets.size).toBe(2);
    await clock.advance(5_000); // 'idle' is full again, 'busy' half full
    buckets.take('third');
    expect(buckets.size).toBe(2);
    // the forgotten key starts again with a full bucket, as it would have had anyway
    expect(spend(buckets, 'idle', 11).filter((kind) => kind === 'allowed')).toHaveLength(10);
    await clock.advance(3_600_000);
    buckets.take('late');
    expect(buckets.size).toBe(1);
  });

  it('is off at 0 per minute: every request passes and no bucket is kept', () => {
    const buckets = new TokenBuckets({ perMinute: 0, burst: 1 }, new ManualClock());
    expect(new Set(spend(buckets, 'k', 1000))).toEqual(new Set(['unlimited']));
    expect(buckets.size).toBe(0);
  });

  it('refuses limits it cannot honour', () => {
    expect(() => new TokenBuckets({ perMinute: -1, burst: 1 }, new ManualClock())).toThrow(/per minute/);
    expect(() => new TokenBuckets({ perMinute: 60, burst: 0 }, new ManualClock())).toThrow(/burst/);
  });
});
