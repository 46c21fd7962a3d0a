import { describe, expect, it } from 'vitest';
import { partitionsAhead, type PartitionLayout } from '../../ingest/partitions-ahead.ts';
import { expiredPartitions } from '../../ingest/retention.ts';
import { partitionIndexName, partitionStartOf } from '../../shared/partitions.ts';
import { SOURCE_NAMES } from '../../shared/sources.ts';

const at = (iso: string) => Date.parse(iso);

describe('partitions created ahead of their period', () => {
  const layout: PartitionLayout = {
    indexPrefix: 'lp-',
    sources: ['edge_logs', 'auth_logs', 'storage_logs'],
    periodOf: (source) => (source === 'auth_logs' ? 'hourly' : source === 'storage_logs' ? 'weekly' : 'daily'),
    retentionDays: () => 1,
  };

  it("each source's current period and the next, in its own period", () => {
    const names = partitionsAhead(layout, at('2024-03-24T23:47:31Z')).map((partition) => partition.index);
    expect(names).toEqual([
      'lp-edge_logs-2024.03.24',
      'lp-edge_logs-2024.03.25',
      'lp-auth_logs-2024.03.24.23',
      'lp-auth_logs-2024.03.25.00',
      'lp-storage_logs-2024.03.18w',
      'lp-storage_logs-2024.03.25w',
    ]);
  });

  it('on the boundary itself the new period is current: the one after it is made', () => {
    expect(partitionsAhead({ ...layout, sources: ['edge_logs'] }, at('2024-03-25T00:00:00Z')).map((partition) => partition.index)).toEqual([
      'lp-edge_logs-2024.03.25',
      'lp-edge_logs-2024.03.26',
    ]);
  });

  it('never one retention deletes: every partition made at a time is kept at that time, for every source and retention', () => {
    for (const retentionDays of [1, 7, 30]) {
      for (const now of [at('2024-02-29T00:00:00Z'), at('2024-12-31T23:59:59.999Z'), at('2024-06-17T12:00:00Z')]) {
        const all = { ...layout, sources: SOURCE_NAMES, retentionDays: () => retentionDays };
        const ahead = partitionsAhead(all, now);
        expect(ahead).toHaveLength(2 * SOURCE_NAMES.length);
        expect(
          expiredPartitions(
            ahead.map((partition) => partition.index),
            all,
            now,
          ),
        ).toEqual([]);
      }
    }
  });
});

describe('partitionStartOf', () => {
  it("reads when a partition's period begins from its name alone, whatever its prefix", () => {
    const ms = at('2024-03-20T15:00:00Z');
    expect(partitionStartOf(partitionIndexName('my-prefix-', 'edge_logs', 'hourly', ms))).toBe(ms);
    expect(partitionStartOf('x-auth_logs-2024.03.18w')).toBe(at('2024-03-18T00:00:00Z'));
    expect(partitionStartOf('x-edge_logs-2024.03.20')).toBe(at('2024-03-20T00:00:00Z'));
    for (const other of ['x-edge_logs', 'x-api-keys', 'x-edge_logs-2024.02.31', 'x-edge_logs-2024.03.19w', 'edge_logs'])
      expect(partitionStartOf(other), other).toBeUndefined();
  });
});
