/** The phases of a query an answer's Server-Timing header names, in the order they happen. */
export const TIMING_PHASES = ['auth', 'cache', 'plan', 'store', 'engine', 'encode'] as const;

export type TimingPhase = (typeof TIMING_PHASES)[number];

/**
 * The milliseconds one request spent in each phase it went through, as a W3C Server-Timing header
 * (`auth;dur=0.4, store;dur=12.3`). A phase entered more than once (an aggregation's fallback) adds up.
 */
export class ServerTiming {
  private readonly spent = new Map<TimingPhase, number>();

  add(phase: TimingPhase, milliseconds: number): void {
    this.spent.set(phase, (this.spent.get(phase) ?? 0) + Math.max(0, milliseconds));
  }

  measure<T>(phase: TimingPhase, work: () => T): T {
    const started = performance.now();
    try {
      return work();
    } finally {
      this.add(phase, performance.now() - started);
    }
  }

  async measureAsync<T>(phase: TimingPhase, work: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await work();
    } finally {
      this.add(phase, performance.now() - started);
    }
  }

  /** The header's value; undefined before any phase ran. */
  header(): string | undefined {
    // a plain loop: written on every answer, the cached ones included
    let header: string | undefined;
    for (const phase of TIMING_PHASES) {
      const milliseconds = this.spent.get(phase);
      if (milliseconds === undefined) continue;
      const entry = timingEntry(phase, milliseconds);
      header = header === undefined ? entry : `${header}, ${entry}`;
    }
    return header;
  }
}

/** One phase's entry in the header; `milliseconds` already not negative. */
export function timingEntry(phase: TimingPhase, milliseconds: number): string {
  return `${phase};dur=${milliseconds.toFixed(1)}`;
}
