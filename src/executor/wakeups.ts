/** Callers waiting for a shared count to change; each change wakes them all, and each looks again. */
export class Wakeups {
  private waiting: (() => void)[] = [];

  next(): Promise<void> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  wakeAll(): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const resume of waiting) resume();
  }
}
