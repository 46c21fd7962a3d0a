/**
 * How the query service's node process is started wherever we start it (npm start, the benchmarks;
 * the Dockerfile's query stage repeats both). Measured with bench/service-memory.ts under the query
 * mix: a young generation of at most 2 x 4 MB (V8's default grows to 2 x 16 MB) and two malloc arenas
 * (glibc's default is 8 per core, each holding freed native memory) lower peak and steady RSS with no
 * measurable cost in p50; a 1 MB semi-space promotes whole search pages to the old generation and
 * costs more than it saves.
 */
export const QUERY_SERVICE_NODE_ARGS: readonly string[] = ['--max-semi-space-size=4'];

export const QUERY_SERVICE_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };
