import type { Clock, PeriodicTask, ScheduledTask } from '../../src/cache/clock.ts';

interface Scheduled {
  /** 0 for a one-shot task. */
  periodMs: number;
  nextAt: number;
  task: PeriodicTask;
  cancelled: boolean;
}

export interface ManualClockOptions {
  /**
   * True (the default): each task is awaited before time moves on, so a test sees a tick settled.
   * False: tasks are started and time moves on, as with work slower than the clock (still in
   * flight when the next task is due).
   */
  awaitTasks?: boolean;
}

/** A clock that only moves when a test says so; periodic and one-shot tasks fire as time passes. */
export class ManualClock implements Clock {
  private current: number;
  private tasks: Scheduled[] = [];
  private readonly awaitTasks: boolean;

  constructor(start = Date.UTC(2024, 0, 1), options: ManualClockOptions = {}) {
    this.current = start;
    this.awaitTasks = options.awaitTasks ?? true;
  }

  now(): number {
    return this.current;
  }

  every(periodSeconds: number, task: PeriodicTask): ScheduledTask {
    return this.schedule(periodSeconds * 1000, periodSeconds * 1000, task);
  }

  after(delayMs: number, task: PeriodicTask): ScheduledTask {
    return this.schedule(0, Math.max(0, delayMs), task);
  }

  /** Moves time forward by `ms`, running each task at each of its due times, in order (ties in the order they were scheduled). */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      this.tasks = this.tasks.filter((t) => !t.cancelled);
      const due = this.tasks.filter((t) => t.nextAt <= target).sort((a, b) => a.nextAt - b.nextAt)[0];
      if (!due) break;
      this.current = due.nextAt;
      if (due.periodMs === 0) due.cancelled = true;
      else due.nextAt += due.periodMs;
      const running = due.task();
      if (this.awaitTasks) {
        await running;
      } else {
        running.catch(() => {});
        // what the task starts at once (its synchronous part and promptly settled promises) happens before time moves on
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    this.current = target;
  }

  /** Tasks still scheduled (periodic ones, and one-shots not yet run). */
  get scheduled(): number {
    return this.tasks.filter((t) => !t.cancelled).length;
  }

  private schedule(periodMs: number, delayMs: number, task: PeriodicTask): ScheduledTask {
    const scheduled: Scheduled = { periodMs, nextAt: this.current + delayMs, task, cancelled: false };
    this.tasks.push(scheduled);
    return { cancel: () => void (scheduled.cancelled = true) };
  }
}
