import { textTable } from '../shared/text-table.ts';
import { parsePartitionName, legacyIndexName } from '../shared/partitions.ts';
import type { SourceName } from '../shared/sources.ts';
import { expiresAt, type RetentionPolicy } from '../ingest/retention.ts';

/** One index as `_cat/indices` lists it. */
export interface ListedIndex {
  index: string;
  docs: number;
  bytes: number;
}

export interface PartitionRow {
  source: SourceName;
  index: string;
  /** `legacy` for the single index a source was kept in before partitioning. */
  period: string;
  startMs?: number;
  docs: number;
  bytes: number;
  /** When retention deletes it; undefined for a legacy index (deleted once its newest event is past retention). */
  deletedAtMs?: number;
}

export interface SourceReport {
  source: SourceName;
  retentionDays: number;
  partitions: PartitionRow[];
  /** Partitions retention deletes at its next run. */
  due: string[];
  /** The next partition to expire after those, and when. */
  next?: { index: string; atMs: number };
}

/** What `npm run indices` shows: each source's partitions, oldest first, and what retention deletes next. */
export function partitionReport(listed: readonly ListedIndex[], policy: RetentionPolicy, nowMs: number): SourceReport[] {
  return policy.sources.map((source) => {
    const partitions: PartitionRow[] = [];
    for (const entry of listed) {
      const partition = parsePartitionName(policy.indexPrefix, [source], entry.index);
      if (partition)
        partitions.push({
          source,
          index: entry.index,
          period: partition.period,
          startMs: partition.startMs,
          docs: entry.docs,
          bytes: entry.bytes,
          deletedAtMs: expiresAt(partition, policy),
        });
      else if (entry.index === legacyIndexName(policy.indexPrefix, source))
        partitions.push({ source, index: entry.index, period: 'legacy', docs: entry.docs, bytes: entry.bytes });
    }
    partitions.sort((a, b) => (a.startMs ?? -Infinity) - (b.startMs ?? -Infinity));
    const due = partitions.filter((row) => row.deletedAtMs !== undefined && row.deletedAtMs <= nowMs).map((row) => row.index);
    const upcoming = partitions.filter((row) => row.deletedAtMs !== undefined && row.deletedAtMs > nowMs).sort((a, b) => a.deletedAtMs! - b.deletedAtMs!)[0];
    return {
      source,
      retentionDays: policy.retentionDays(source),
      partitions,
      due,
      ...(upcoming ? { next: { index: upcoming.index, atMs: upcoming.deletedAtMs! } } : {}),
    };
  });
}

function size(bytes: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}

function age(ms: number): string {
  const hours = ms / 3_600_000;
  return hours < 48 ? `${Math.max(0, Math.floor(hours))} h` : `${Math.floor(hours / 24)} d`;
}

/** The report as aligned text, one block per source that has indices. */
export function reportText(reports: readonly SourceReport[], nowMs: number): string {
  const lines: string[] = [];
  for (const report of reports) {
    if (report.partitions.length === 0) continue;
    lines.push(`${report.source} (keeps ${report.retentionDays} days)`);
    const rows = report.partitions.map((row) => [
      row.index,
      row.period,
      row.startMs === undefined ? '-' : new Date(row.startMs).toISOString().slice(0, 16).replace('T', ' '),
      row.docs.toLocaleString('en'),
      size(row.bytes),
      row.startMs === undefined ? '-' : age(nowMs - row.startMs),
      row.deletedAtMs === undefined
        ? 'when its newest event expires'
        : row.deletedAtMs <= nowMs
          ? 'next run'
          : new Date(row.deletedAtMs).toISOString().slice(0, 16).replace('T', ' '),
    ]);
    const header = ['index', 'period', 'from (UTC)', 'docs', 'size', 'age', 'deleted'];
    lines.push(...textTable(header, rows, (column) => column === 3 || column === 4).map((line) => `  ${line}`));
    if (report.due.length > 0) lines.push(`  retention deletes at its next run: ${report.due.join(', ')}`);
    else if (report.next)
      lines.push(`  next to expire: ${report.next.index} at ${new Date(report.next.atMs).toISOString().slice(0, 16).replace('T', ' ')} UTC`);
    lines.push('');
  }
  return lines.length === 0 ? 'no source indices yet\n' : lines.join('\n');
}
