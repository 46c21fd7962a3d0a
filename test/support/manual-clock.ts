import type { Clock, PeriodicTask, ScheduledTask } from '../../src/cache/clock.ts';

interface Periodic {
  periodMs: number;
  nextAt: number;
  task: PeriodicTask;
  cancelled: boolean;
}

/** A clock that only moves when a test says so; periodic tasks fire (and are awaited) as time passes. */
export class ManualClock implements Clock {
  private current: number;
  private readonly tasks: Periodic[] = [];

  constructor(start = Date.UTC(2024, 0, 1)) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  every(periodSeconds: number, task: PeriodicTask): ScheduledTask {
    const periodic: Periodic = { periodMs: periodSeconds * 1000, nextAt: this.current + periodSeconds * 1000, task, cancelled: false };
    this.tasks.push(periodic);
    return { cancel: () => void (periodic.cancelled = true) };
  }

  /** Moves time forward by `ms`, running each periodic task at each of its due times, in order. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      const due = this.tasks.filter((t) => !t.cancelled && t.nextAt <= target).sort((a, b) => a.nextAt - b.nextAt)[0];
      if (!due) break;
      this.current = due.nextAt;
      due.nextAt += due.periodMs;
      await due.task();
    }
    this.current = target;
  }

  /** Periodic tasks still scheduled. */
  get scheduled(): number {
    return this.tasks.filter((t) => !t.cancelled).length;
  }
}
