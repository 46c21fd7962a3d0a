import { getHeapStatistics } from 'node:v8';

/**
 * The JavaScript heap one Kafka message costs while the worker holds it, besides its bytes: kafkajs's
 * record object (offset and timestamp strings, the key and value views, headers; about 320 bytes
 * measured on kafkajs 2.2.4), and ours while it waits for Elasticsearch (its bulk entry and id,
 * about 185). The memory budget charges it per message, so a stream of tiny messages cannot
 * hold more objects than the budget allows bytes.
 */
export const MESSAGE_HEAP_BYTES = 512;

/** What the worker's heap holds whatever it consumes: the modules, kafkajs's and Elasticsearch's clients, metrics. */
const RESIDENT_HEAP_BYTES = 64 * 1024 * 1024;

/**
 * The V8 heap limit (old generation plus young) a memory budget needs: all of the budget may be
 * message objects (MESSAGE_HEAP_BYTES each), and V8 needs about as much again to collect them
 * without running back to back, so three times the budget above what every worker holds.
 */
export function heapNeeded(budgetBytes: number): number {
  return RESIDENT_HEAP_BYTES + 3 * budgetBytes;
}

/**
 * Why this process cannot hold the budget, or undefined when it can. The worker starts with a
 * small old generation (ingest/worker-start.ts) so that V8 collects dead buffers before they pile
 * up; a budget raised past what that heap holds would end the process out of memory instead.
 */
export function heapLimitIssue(budgetBytes: number, heapLimitBytes = getHeapStatistics().heap_size_limit): string | undefined {
  const needed = heapNeeded(budgetBytes);
  if (heapLimitBytes >= needed) return undefined;
  const mb = (bytes: number) => Math.ceil(bytes / (1024 * 1024));
  return (
    `INGEST_MEMORY_BUDGET_BYTES: ${budgetBytes} needs a JavaScript heap of at least ${mb(needed)} MB, but this node process has ` +
    `${mb(heapLimitBytes)} MB: lower the budget, or start node with --max-old-space-size=${mb(needed)} or more`
  );
}
