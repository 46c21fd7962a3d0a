/**
 * How the query service's node process is started wherever we start it (npm start, the benchmarks;
 * the Dockerfile's query stage repeats both). Measured with bench/service-memory.ts under the query
 * mix: a young generation of at most 2 x 4 MB (V8's default grows to 2 x 16 MB) and two malloc arenas
 * (glibc's default is 8 per core, each holding freed native memory) lower peak and steady RSS with no
 * measurable cost in p50; a 1 MB semi-space promotes whole search pages to the old generation and
 * costs more than it saves. --optimize-for-size makes V8 collect the old generation sooner instead of
 * letting it grow to several times what is live: with sandboxed queries holding rows at their bounds
 * (bench/service-memory.ts --mix heavy, 16 clients) the peak fell 583 -> 293 MB (96 MiB held) and 512 -> 255 MB (64 MiB),
 * under the quick mix 207 -> 181 and 224 -> 196 MB; its latency cost could not be told from the shared
 * machine's noise in two paired runs (docs/operations.md, the query service's memory). With it V8 (node 20) keeps
 * the young generation at 2 x 1 MB whatever --max-semi-space-size says: 635 scavenges per 100k calls of the cached lane
 * against 155 with the semi-space flag alone (bench/cached-lane-parts.ts; docs/benchmarks.md, cachedlane3). It stays for
 * want of a start without it that holds held rows' bounds: --max-old-space-size=256 keeps its old-generation saving but
 * peaked at 219-284 MB in eight starts against 192-262 MB in eleven with it, 48 MiB held (docs/benchmarks.md, cachedflag).
 */
export const QUERY_SERVICE_NODE_ARGS: readonly string[] = ['--max-semi-space-size=4', '--optimize-for-size'];

export const QUERY_SERVICE_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };
