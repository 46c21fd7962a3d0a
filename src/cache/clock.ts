import schedule from 'node-schedule';

/** A periodic or one-shot task; the clock awaits the promise so tests can wait for a tick to settle. */
export type PeriodicTask = () => Promise<void>;

export interface ScheduledTask {
  cancel(): void;
}

/**
 * Time as the cache and the key cache see it. Injected so tests move time forward instead of
 * sleeping.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Runs `task` every `periodSeconds` until cancelled. */
  every(periodSeconds: number, task: PeriodicTask): ScheduledTask;
  /** Runs `task` once, `delayMs` from now, unless cancelled first. */
  after(delayMs: number, task: PeriodicTask): ScheduledTask;
}

/**
 * The cron rule (with a seconds field) for a period node-schedule can express: a whole number of
 * seconds, minutes or hours that divides the next unit up, so every tick is exactly one period apart.
 */
export function cronRuleForPeriod(periodSeconds: number): string {
  const divides = (value: number, unit: number) => Number.isInteger(value) && value >= 1 && unit % value === 0;
  if (periodSeconds < 60 && divides(periodSeconds, 60)) return `*/${periodSeconds} * * * * *`;
  if (periodSeconds < 3600 && divides(periodSeconds / 60, 60)) return `0 */${periodSeconds / 60} * * * *`;
  if (periodSeconds < 86400 && divides(periodSeconds / 3600, 24)) return `0 0 */${periodSeconds / 3600} * * *`;
  if (periodSeconds === 86400) return '0 0 0 * * *';
  throw new Error(
    `a warming period of ${periodSeconds} s cannot be scheduled: use whole seconds, minutes or hours that divide a minute, an hour or a day (e.g. 30, 300, 3600)`,
  );
}

/** Wall-clock time and node-schedule jobs: the clock the service runs on. */
export class SystemClock implements Clock {
  constructor(private readonly onTaskError: (error: unknown) => void = () => {}) {}

  now(): number {
    return Date.now();
  }

  every(periodSeconds: number, task: PeriodicTask): ScheduledTask {
    const job = schedule.scheduleJob(cronRuleForPeriod(periodSeconds), () => {
      task().catch(this.onTaskError);
    });
    return { cancel: () => job.cancel() };
  }

  after(delayMs: number, task: PeriodicTask): ScheduledTask {
    const timer = setTimeout(() => {
      task().catch(this.onTaskError);
    }, delayMs);
    // a pending one-shot (a warming run spread over its period) never keeps the process alive
    timer.unref();
    return { cancel: () => clearTimeout(timer) };
  }
}
