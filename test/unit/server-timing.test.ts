import { describe, expect, it } from 'vitest';
import { ServerTiming } from '../../src/http/server-timing.ts';

describe('Server-Timing header', () => {
  it('is absent before any phase ran', () => {
    expect(new ServerTiming().header()).toBeUndefined();
  });

  it('names the phases in the order they happen, adding up a phase entered twice, one decimal each', () => {
    const timing = new ServerTiming();
    timing.add('encode', 0.04);
    timing.add('store', 1.25);
    timing.add('auth', 2);
    timing.add('store', 1);
    expect(timing.header()).toBe('auth;dur=2.0, store;dur=2.3, encode;dur=0.0');
  });

  it('never sends a negative duration', () => {
    const timing = new ServerTiming();
    timing.add('cache', -3);
    expect(timing.header()).toBe('cache;dur=0.0');
  });

  it('counts a phase that failed, and passes its failure on', async () => {
    const timing = new ServerTiming();
    expect(() =>
      timing.measure('plan', () => {
        throw new Error('bad query');
      }),
    ).toThrow('bad query');
    await expect(timing.measureAsync('store', () => Promise.reject(new Error('store down')))).rejects.toThrow('store down');
    expect(timing.header()).toMatch(/^plan;dur=\d+\.\d, store;dur=\d+\.\d$/);
  });
});
