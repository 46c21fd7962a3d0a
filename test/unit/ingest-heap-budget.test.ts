import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.ts';
import { heapLimitIssue, heapNeeded } from '../../ingest/heap-budget.ts';
import { INGEST_WORKER_NODE_ARGS } from '../../ingest/worker-start.ts';

const MB = 1024 * 1024;

/** The V8 heap limit of a node process started as the worker is. */
function workerHeapLimit(): number {
  const script = "process.stdout.write(String(require('node:v8').getHeapStatistics().heap_size_limit))";
  return Number(execFileSync(process.execPath, [...INGEST_WORKER_NODE_ARGS, '-e', script], { encoding: 'utf8' }));
}

describe('ingest: the heap the memory budget needs', () => {
  it("fits the default budget in the heap of the worker's own start, and not twice that budget", () => {
    const budget = loadConfig({}).INGEST_MEMORY_BUDGET_BYTES;
    const limit = workerHeapLimit();
    expect(heapLimitIssue(budget, limit)).toBeUndefined();
    expect(heapLimitIssue(2 * budget, limit)).toBeDefined();
  });

  it('refuses a budget the heap cannot hold, naming the variable and the node flag that would', () => {
    const issue = heapLimitIssue(64 * MB, 176 * MB);
    expect(issue).toBe(
      `INGEST_MEMORY_BUDGET_BYTES: ${64 * MB} needs a JavaScript heap of at least ${heapNeeded(64 * MB) / MB} MB, but this node process has 176 MB: ` +
        `lower the budget, or start node with --max-old-space-size=${heapNeeded(64 * MB) / MB} or more`,
    );
  });
});
