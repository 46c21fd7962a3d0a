/**
 * Why V8 collected in full, read from a worker's GC trace (node --trace-gc --trace-gc-verbose
 * --trace-incremental-marking). V8 starts a full collection when the old generation plus the external
 * memory (Buffers) grown since the last one nears its limit, or when external memory alone grows past
 * its own limit; the trace says which, and the heap statistics printed after every collection say how
 * much of each grew in between. Buffers that die young are freed by scavenges and count for nothing there.
 */
export const GC_TRACE_FLAGS: readonly string[] = ['--trace-gc', '--trace-gc-verbose', '--trace-incremental-marking'];

/** One full (mark-compact) collection, and what happened since the previous one. */
export interface FullCollection {
  atMs: number;
  /** Why marking started (V8's words: "task" and "allocation limit" are the old generation's limit, external memory counted). */
  started: string;
  /** Why it finished, from the collection's own line ("finalize incremental marking via task; GC in old space requested"). */
  finished: string;
  /** Old generation (old and large object spaces) grown since the previous full collection: objects promoted, bytes. */
  promotedBytes: number;
  /** External memory above its lowest since the previous full collection, as V8 counts it toward the limit, bytes. */
  externalBytes: number;
  /** The old generation's limit V8 set after this collection, bytes. */
  limitBytes: number;
  /** The growing factor V8 used for that limit. */
  factor: number;
  scavenges: number;
}

interface Sample {
  kind: 'scavenge' | 'full';
  atMs: number;
  reason: string;
  old: number;
  largeObjects: number;
  external: number;
}

const KB = 1024;

/** The full collections of a trace, in order; the first one has nothing before it and is left out. */
export function fullCollections(trace: string): FullCollection[] {
  const samples: Sample[] = [];
  const starts = new Map<number, string>();
  const limits = new Map<number, { limit: number; factor: number }>();
  let started: string | undefined;
  for (const line of trace.split('\n')) {
    const collection = /\s(\d+) ms: (Scavenge|Mark-Compact|Mark-Sweep)\b/.exec(line);
    if (collection) {
      const kind = collection[2] === 'Scavenge' ? 'scavenge' : 'full';
      // the reason follows the last parenthesis: "(average mu = ...) allocation failure; "
      const reason = line
        .slice(line.lastIndexOf(')') + 1)
        .trim()
        .replace(/;$/, '');
      samples.push({ kind, atMs: Number(collection[1]), reason, old: 0, largeObjects: 0, external: 0 });
      if (kind === 'full') {
        starts.set(samples.length - 1, started ?? (reason.startsWith('finalize incremental') ? 'not traced' : 'not incremental'));
        started = undefined;
      }
      continue;
    }
    const start = /\[IncrementalMarking\] Start \(([^)]*)\)/.exec(line);
    if (start) started = start[1]!;
    const limit = /\[HeapController\] Limit: old size: \d+ KB, new limit: (\d+) KB \(([\d.]+)\)/.exec(line);
    if (limit) limits.set(samples.length, { limit: Number(limit[1]) * KB, factor: Number(limit[2]) });
    const last = samples[samples.length - 1];
    if (!last) continue;
    const space = /\] (Old space|Large object space),\s+used:\s+(\d+) KB/.exec(line);
    if (space) last[space[1] === 'Old space' ? 'old' : 'largeObjects'] = Number(space[2]) * KB;
    const external = /External memory reported:\s+(-?\d+) KB/.exec(line);
    if (external) last.external = Number(external[1]) * KB;
  }
  const fulls = samples.flatMap((sample, index) => (sample.kind === 'full' ? [index] : []));
  return fulls.slice(1).map((at, position) => {
    const previous = fulls[position]!;
    const between = samples.slice(previous, at);
    const before = samples[at - 1]!;
    const after = samples[previous]!;
    // V8's own measure: external memory now above its lowest since the last full collection (scavenges free young Buffers)
    const externalBytes = Math.max(0, before.external - Math.min(...between.map((sample) => sample.external)));
    // the limit line comes just before its collection's own line
    const limit = limits.get(at) ?? { limit: NaN, factor: NaN };
    return {
      atMs: samples[at]!.atMs,
      started: starts.get(at)!,
      finished: samples[at]!.reason,
      promotedBytes: before.old + before.largeObjects - (after.old + after.largeObjects),
      externalBytes,
      limitBytes: limit.limit,
      factor: limit.factor,
      scavenges: at - previous - 1,
    };
  });
}

/** A summary of the full collections by why they started, then one row each (markdown). */
export function fullCollectionRows(collections: FullCollection[]): string[] {
  const mb = (bytes: number) => (bytes / 1e6).toFixed(1);
  const byStart = new Map<string, number>();
  for (const collection of collections) byStart.set(collection.started, (byStart.get(collection.started) ?? 0) + 1);
  const promoted = collections.reduce((sum, collection) => sum + collection.promotedBytes, 0);
  const external = collections.reduce((sum, collection) => sum + collection.externalBytes, 0);
  return [
    `${collections.length} full collections after the first; marking started by: ${[...byStart].map(([why, count]) => `${why} ${count}`).join(', ')}`,
    `between them: ${mb(promoted)} MB promoted into the old generation, external memory grown by ${mb(external)} MB (above its lowest since)`,
    '| at ms | marking started by | finished | promoted MB | external grown MB | scavenges | limit after MB (factor) |',
    '|---|---|---|---|---|---|---|',
    ...collections.map(
      (c) =>
        `| ${c.atMs} | ${c.started} | ${c.finished} | ${mb(c.promotedBytes)} | ${mb(c.externalBytes)} | ${c.scavenges} | ${mb(c.limitBytes)} (${c.factor}) |`,
    ),
  ];
}
