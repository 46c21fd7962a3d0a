import { describe, expect, it } from 'vitest';
import { SystemClock } from '../../src/cache/clock.ts';

describe('SystemClock one-shot tasks', () => {
  it('runs a task once after its delay, in order of due time; a cancelled one never runs; a failure goes to the error handler', async () => {
    const ran: string[] = [];
    const failures: unknown[] = [];
    const clock = new SystemClock((error) => failures.push(error));
    const cancelled = clock.after(5, async () => void ran.push('cancelled'));
    clock.after(20, async () => {
      throw new Error('warming failed');
    });
    const last = new Promise<void>((resolve) => clock.after(40, async () => resolve(void ran.push('second'))));
    clock.after(1, async () => void ran.push('first'));
    cancelled.cancel();
    await last;
    expect(ran).toEqual(['first', 'second']);
    expect(failures).toEqual([new Error('warming failed')]);
  });
});
