import { describe, expect, it } from 'vitest';
import { fullCollectionRows, fullCollections } from '../../bench/gc-trace.ts';

/** The heap statistics --trace-gc-verbose prints after a collection (the lines read here, and one that is not). */
const stats = (oldKb: number, largeKb: number, externalKb: number) =>
  [
    `[1:0x1] Old space,              used:  ${oldKb} KB, available:    363 KB, committed:  29152 KB`,
    `[1:0x1] Large object space,     used:    ${largeKb} KB, available:      0 KB, committed:    828 KB`,
    `[1:0x1] External memory reported:  ${externalKb} KB`,
    '[1:0x1] Backing store memory:  28148 KB',
  ].join('\n');

const TRACE = [
  '[1:0x1]      733 ms: [IncrementalMarking] Start (allocation limit): (size/limit/slack) v8: 12MB / 12MB / 0MB',
  '[1:0x1]      848 ms: [HeapController] Limit: old size: 11660 KB, new limit: 27906 KB (1.3)',
  '[1:0x1]      848 ms: Mark-Compact 18.1 (29.0) -> 11.4 (30.4) MB, 35.20 / 0.03 ms  (+ 45.9 ms in 3 steps) (average mu = 1.000, current mu = 1.000) finalize incremental marking via stack guard; GC in old space requested',
  stats(11_000, 1000, 5000),
  '[1:0x1]     1000 ms: Scavenge 30.0 (40.0) -> 20.0 (40.0) MB, 2.0 / 0.00 ms  (average mu = 0.991, current mu = 0.879) allocation failure; ',
  // a young Buffer freed by the scavenge: external lower than after the full collection
  stats(14_000, 1000, 3000),
  '[1:0x1]     1100 ms: Scavenge 31.0 (40.0) -> 21.0 (40.0) MB, 2.0 / 0.00 ms  (average mu = 0.991, current mu = 0.879) allocation failure; ',
  stats(16_000, 2000, 9000),
  '[1:0x1]     2946 ms: [IncrementalMarking] Start (task): (size/limit/slack) v8: 19MB / 27MB / 8MB',
  '[1:0x1]     3058 ms: [HeapController] Limit: old size: 19536 KB, new limit: 43835 KB (1.1)',
  '[1:0x1]     3059 ms: Mark-Compact 24.8 (37.3) -> 19.1 (54.5) MB, 12.83 / 0.04 ms  (+ 3.1 ms in 27 steps) (average mu = 0.981, current mu = 0.981) finalize incremental marking via task; GC in old space requested',
  stats(12_000, 1000, 4000),
  '[1:0x1]     4000 ms: Mark-Compact 20.0 (40.0) -> 19.0 (40.0) MB, 9.0 / 0.01 ms  (average mu = 0.98, current mu = 0.98) external memory pressure; ',
  stats(12_000, 1000, 4000),
].join('\n');

describe('fullCollections', () => {
  it('says why each full collection after the first started, and what grew since the one before', () => {
    const [task, external, ...rest] = fullCollections(TRACE);
    expect(rest).toEqual([]);
    expect(task).toEqual({
      atMs: 3059,
      started: 'task',
      finished: 'finalize incremental marking via task; GC in old space requested',
      // old and large object spaces 18,000 KB before it against 12,000 after the previous one
      promotedBytes: 6000 * 1024,
      // above the lowest since the previous full collection (3,000 KB after the scavenge), as V8 counts it
      externalBytes: 6000 * 1024,
      limitBytes: 43_835 * 1024,
      factor: 1.1,
      scavenges: 2,
    });
    expect(external).toMatchObject({ atMs: 4000, started: 'not incremental', finished: 'external memory pressure', promotedBytes: 0, scavenges: 0 });
  });

  it('tells a trace without --trace-incremental-marking from a collection that was not incremental', () => {
    const untraced = TRACE.split('\n')
      .filter((line) => !line.includes('[IncrementalMarking] Start'))
      .join('\n');
    expect(fullCollections(untraced).map((collection) => collection.started)).toEqual(['not traced', 'not incremental']);
  });

  it('sums them up by why they started', () => {
    const rows = fullCollectionRows(fullCollections(TRACE));
    expect(rows[0]).toBe('2 full collections after the first; marking started by: task 1, not incremental 1');
    expect(rows[1]).toBe('between them: 6.1 MB promoted into the old generation, external memory grown by 6.1 MB (above its lowest since)');
    expect(rows).toHaveLength(6);
  });
});
