/**
 * How the ingest worker's node process is started wherever we start it (npm start, the benchmarks;
 * the Dockerfile's ingest stage repeats both). Measured with bench/ingest-worker.ts on 100,000 demo
 * events: two malloc arenas (glibc's default is 8 per core, each keeping freed native memory: fetch
 * responses, decompressed batches and bulk bodies are all native) lowered the worker's peak RSS by
 * 26-41 MB in three of four paired runs (docs/operations.md); a smaller or larger young generation
 * (--max-semi-space-size=4 or 32) showed no gain in RSS or CPU there.
 *
 * A 128 MB old generation: V8 collects when the buffers it has handed out (fetch responses, bulk
 * bodies, decompressed batches) grow by half its old generation since the last full collection, so
 * with Node's default (some 4 GB here) dead buffers pile up for tens of megabytes before a
 * collection starts. The worker checks at start that its memory budget fits this heap (heap-budget.ts).
 *
 * An 8 MB semi-space (Node's default is 16, so a young generation of 3 x 16 MB): once zstd batches
 * were decoded without fzstd's per-batch windows (zstd.ts), the young generation was the largest part
 * left to cut. Paired drains of 300,000 events (bench/ingest-worker.ts, 2026-11-27): peak RSS 233 ->
 * 208 MB with zstd input and 197 -> 179 MB without, CPU per event within the runs' noise (2.38 -> 2.20,
 * 2.50 -> 2.72 s per 100k). The old generation goes from 128 to 136 MB so that the heap still holds the
 * default budget's 160 MB (136 + 3 x 8).
 */
export const INGEST_WORKER_NODE_ARGS: readonly string[] = ['--max-old-space-size=136', '--max-semi-space-size=8'];

export const INGEST_WORKER_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };
