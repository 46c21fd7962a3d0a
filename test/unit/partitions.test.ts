import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { eventPartitioning } from '../../ingest/event-partition.ts';
import { partitionReport, reportText } from '../../scripts/partition-report.ts';
import { expiredPartitions, expiresAt, type RetentionPolicy } from '../../ingest/retention.ts';
import { loadConfig, partitionPeriodOf, retentionDaysOf } from '../../shared/config.ts';
import {
  expressionReads,
  legacyIndexName,
  parsePartitionName,
  partitionIndexName,
  partitionsOverlapping,
  periodEnd,
  periodStart,
  sourceIndexPattern,
  MAX_LISTED_PARTITIONS,
  PARTITION_PERIODS,
  type PartitionPeriod,
} from '../../shared/partitions.ts';
import { SOURCE_NAMES } from '../../shared/sources.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const at = (iso: string) => Date.parse(iso);
const NOW = at('2024-03-20T15:47:31.123Z'); // a Wednesday

describe('partition names', () => {
  it("name the period of the event's own UTC time", () => {
    expect(partitionIndexName('lp-', 'edge_logs', 'daily', at('2024-03-20T23:59:59.999Z'))).toBe('lp-edge_logs-2024.03.20');
    expect(partitionIndexName('lp-', 'edge_logs', 'daily', at('2024-03-21T00:00:00.000Z'))).toBe('lp-edge_logs-2024.03.21');
    expect(partitionIndexName('lp-', 'edge_logs', 'hourly', at('2024-03-20T07:30:00Z'))).toBe('lp-edge_logs-2024.03.20.07');
    // weeks start on Monday (2024-03-18); Sunday the 24th is still that week
    expect(partitionIndexName('lp-', 'auth_logs', 'weekly', at('2024-03-24T23:00:00Z'))).toBe('lp-auth_logs-2024.03.18w');
    expect(partitionIndexName('lp-', 'auth_logs', 'weekly', at('2024-03-25T00:00:00Z'))).toBe('lp-auth_logs-2024.03.25w');
    // a week across a new year is named after its Monday
    expect(partitionIndexName('lp-', 'auth_logs', 'weekly', at('2025-01-01T00:00:00Z'))).toBe('lp-auth_logs-2024.12.30w');
  });

  it('parse back to their source, period and span, for every period (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...SOURCE_NAMES),
        fc.constantFrom(...PARTITION_PERIODS),
        fc.integer({ min: 0, max: Date.UTC(2200, 0, 1) }),
        (source, period, ms) => {
          const index = partitionIndexName('lp-', source, period, ms);
          const parsed = parsePartitionName('lp-', SOURCE_NAMES, index);
          expect(parsed).toEqual({ index, source, period, startMs: periodStart(period, ms), endMs: periodEnd(period, periodStart(period, ms)) });
          expect(parsed!.startMs).toBeLessThanOrEqual(ms);
          expect(parsed!.endMs).toBeGreaterThan(ms);
        },
      ),
    );
  });

  it('do not parse other indices of the prefix, impossible dates or other prefixes', () => {
    for (const index of [
      'lp-api-keys',
      'lp-edge_logs',
      'lp-edge_logs-2024.02.30',
      'lp-edge_logs-2024.03.19w',
      'lp-edge_logs-2024.03.20.24',
      'lp-edge_logs-x',
      'other-edge_logs-2024.03.20',
      'lp-nosuch-2024.03.20',
    ]) {
      expect(parsePartitionName('lp-', SOURCE_NAMES, index), index).toBeUndefined();
    }
    // function_edge_logs is not edge_logs with a suffix
    expect(parsePartitionName('lp-', SOURCE_NAMES, 'lp-function_edge_logs-2024.03.20')?.source).toBe('function_edge_logs');
  });

  it('the source pattern reads every partition and the legacy index, and no other source', () => {
    const expressions = [sourceIndexPattern('lp-', 'edge_logs')];
    for (const source of SOURCE_NAMES)
      for (const other of SOURCE_NAMES) if (source !== other) expect(other.startsWith(source), `${other} starts with ${source}`).toBe(false);
    expect(expressionReads(expressions, 'lp-edge_logs-2024.03.20.07')).toBe(true);
    expect(expressionReads(expressions, legacyIndexName('lp-', 'edge_logs'))).toBe(true);
    expect(expressionReads(expressions, 'lp-function_edge_logs-2024.03.20')).toBe(false);
  });
});

describe('partitionsOverlapping', () => {
  const read = (period: PartitionPeriod, from?: string, to?: string) =>
    partitionsOverlapping('lp-', 'edge_logs', period, { fromMs: from ? at(from) : undefined, toMs: to ? at(to) : undefined }, NOW);

  it('an hour inside one day reads that day and its week, plus the legacy index', () => {
    expect(read('daily', '2024-03-20T14:00:00Z', '2024-03-20T15:00:00Z')).toEqual(['lp-edge_logs-2024.03.20*', 'lp-edge_logs-2024.03.18w', 'lp-edge_logs']);
  });

  it('an hourly source reads only the hours a part of a day needs (and the day, should the period have changed)', () => {
    expect(read('hourly', '2024-03-20T14:10:00Z', '2024-03-20T15:05:00Z')).toEqual([
      'lp-edge_logs-2024.03.20',
      'lp-edge_logs-2024.03.20.14',
      'lp-edge_logs-2024.03.20.15',
      'lp-edge_logs-2024.03.18w',
      'lp-edge_logs',
    ]);
  });

  it('whole months and years become one wildcard each', () => {
    // weeks starting on a Monday inside a listed month or day are read by its wildcard already
    expect(read('daily', '2024-02-28T00:00:00Z', '2024-04-01T12:00:00Z')).toEqual([
      'lp-edge_logs-2024.02.28*',
      'lp-edge_logs-2024.02.29*',
      'lp-edge_logs-2024.03.*',
      'lp-edge_logs-2024.04.01*',
      'lp-edge_logs-2024.02.26w',
      'lp-edge_logs',
    ]);
    expect(read('daily', '2023-01-01T00:00:00Z', '2023-12-31T23:59:59.999Z')).toContain('lp-edge_logs-2023.*');
  });

  it('without a lower bound, or over too many names, reads the whole source', () => {
    expect(read('daily', undefined, '2024-03-20T00:00:00Z')).toEqual(['lp-edge_logs-*', 'lp-edge_logs']);
    const long = read('daily', '2020-01-15T00:00:00Z', '2024-03-20T00:00:00Z');
    expect(long.length).toBeLessThanOrEqual(MAX_LISTED_PARTITIONS + 2);
  });

  it('without an upper bound reads up to a day past now (events stamped ahead of the clock)', () => {
    const names = read('daily', '2024-03-20T14:47:31Z');
    expect(names).toEqual(['lp-edge_logs-2024.03.20*', 'lp-edge_logs-2024.03.21*', 'lp-edge_logs-2024.03.18w', 'lp-edge_logs']);
  });

  it('never misses a partition of any period that holds an event inside the bounds (property)', () => {
    const span = fc.integer({ min: Date.UTC(2023, 10, 1), max: Date.UTC(2024, 5, 1) });
    fc.assert(
      fc.property(
        span,
        fc.integer({ min: 0, max: 70 * DAY }),
        fc.constantFrom(...PARTITION_PERIODS),
        fc.constantFrom(...PARTITION_PERIODS),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (from, length, configured, written, where) => {
          const to = from + length;
          const event = Math.floor(from + (to - from) * where);
          const expressions = partitionsOverlapping('lp-', 'edge_logs', configured, { fromMs: from, toMs: to }, NOW);
          expect(expressionReads(expressions, partitionIndexName('lp-', 'edge_logs', written, event))).toBe(true);
          expect(expressionReads(expressions, 'lp-edge_logs')).toBe(true);
          expect(expressions.join(',').length).toBeLessThan(3000);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('reads no daily partition wholly outside the bounds', () => {
    const expressions = read('daily', '2024-03-10T06:00:00Z', '2024-03-12T06:00:00Z');
    for (const day of ['2024.03.09', '2024.03.13', '2024.02.10']) expect(expressionReads(expressions, `lp-edge_logs-${day}`), day).toBe(false);
    for (const day of ['2024.03.10', '2024.03.11', '2024.03.12']) expect(expressionReads(expressions, `lp-edge_logs-${day}`), day).toBe(true);
  });
});

describe('retention', () => {
  const policy: RetentionPolicy = { indexPrefix: 'lp-', sources: SOURCE_NAMES, retentionDays: (source) => (source === 'auth_logs' ? 7 : 30) };
  const names = (days: number[], source = 'edge_logs') => days.map((offset) => partitionIndexName('lp-', source as 'edge_logs', 'daily', NOW - offset * DAY));

  it('deletes a partition once its newest possible event is older than the retention, never the current or a future one', () => {
    const indices = [...names([0, -1, 1, 29, 30, 31, 45]), 'lp-api-keys', 'lp-edge_logs'];
    const expired = expiredPartitions(indices, policy, NOW).map((partition) => partition.index);
    // the day 30 days ago still holds events younger than 30 days until its end has passed by 30 days
    expect(expired).toEqual(names([31, 45]));
  });

  it("applies each source's own retention", () => {
    const expired = expiredPartitions([...names([8, 6], 'auth_logs'), ...names([8])], policy, NOW).map((partition) => partition.index);
    expect(expired).toEqual(names([8], 'auth_logs'));
  });

  it('a partition expires exactly when its end is the retention ago', () => {
    const [partition] = expiredPartitions(names([40]), policy, NOW);
    expect(expiredPartitions([partition!.index], policy, expiresAt(partition!, policy) - 1)).toEqual([]);
    expect(expiredPartitions([partition!.index], policy, expiresAt(partition!, policy))).toHaveLength(1);
  });

  it('an event is expired at ingest by the same rule, so no write re-creates a partition retention deletes', () => {
    const partitioning = eventPartitioning('lp-', 'edge_logs', 'daily', 30);
    fc.assert(
      fc.property(fc.integer({ min: NOW - 60 * DAY, max: NOW + DAY }), (ms) => {
        const event = { id: 'x', event_message: 'm', timestamp: new Date(ms).toISOString().replace('Z', '000Z') };
        const index = partitioning.indexOf(event);
        const deleted = expiredPartitions([index], policy, NOW).length === 1;
        expect(partitioning.isExpired(event, NOW)).toBe(deleted);
      }),
    );
  });
});

describe('partition and retention settings', () => {
  it('read per-source overrides over the defaults', () => {
    const config = loadConfig({
      PARTITION_PERIOD: 'daily',
      PARTITION_PERIODS: 'edge_logs=hourly, auth_logs=weekly',
      RETENTION_DAYS: '14',
      RETENTION_DAYS_BY_SOURCE: 'auth_logs=90',
    });
    expect(partitionPeriodOf(config, 'edge_logs')).toBe('hourly');
    expect(partitionPeriodOf(config, 'auth_logs')).toBe('weekly');
    expect(partitionPeriodOf(config, 'postgres_logs')).toBe('daily');
    expect(retentionDaysOf(config, 'auth_logs')).toBe(90);
    expect(retentionDaysOf(config, 'edge_logs')).toBe(14);
    expect(loadConfig({}).RETENTION_DAYS).toBe(30);
    expect(loadConfig({}).EXPIRED_EVENTS).toBe('dead_letter');
  });

  it('name what is wrong in a bad override', () => {
    expect(() => loadConfig({ PARTITION_PERIODS: 'edge_logs=monthly' })).toThrow(/edge_logs=monthly.*use hourly, daily, weekly/);
    expect(() => loadConfig({ RETENTION_DAYS_BY_SOURCE: 'edge_logs=0' })).toThrow(/at least 1/);
    expect(() => loadConfig({ RETENTION_DAYS_BY_SOURCE: 'nosuch=3' })).toThrow(/unknown source "nosuch"/);
    expect(() => loadConfig({ RETENTION_DAYS: '0' })).toThrow(/RETENTION_DAYS/);
    expect(() => loadConfig({ EXPIRED_EVENTS: 'drop' })).toThrow(/EXPIRED_EVENTS/);
  });
});

describe('npm run indices report', () => {
  const policy: RetentionPolicy = { indexPrefix: 'lp-', sources: SOURCE_NAMES, retentionDays: (source) => (source === 'auth_logs' ? 7 : 30) };
  const day = (offset: number, source = 'edge_logs') => partitionIndexName('lp-', source as 'edge_logs', 'daily', NOW + offset * DAY);

  it("lists each source's partitions oldest first, with what retention deletes at its next run or next of all", () => {
    const listed = [day(0), day(-40), day(-2), 'lp-edge_logs', 'lp-api-keys', day(-3, 'auth_logs')].map((index, n) => ({
      index,
      docs: 10 * n,
      bytes: 1024 * n,
    }));
    const reports = partitionReport(listed, policy, NOW);
    const edge = reports.find((report) => report.source === 'edge_logs')!;
    expect(edge.partitions.map((row) => row.index)).toEqual(['lp-edge_logs', day(-40), day(-2), day(0)]);
    expect(edge.partitions[0]!.period).toBe('legacy');
    expect(edge.due).toEqual([day(-40)]);
    expect(edge.next).toEqual({ index: day(-2), atMs: periodEnd('daily', periodStart('daily', NOW - 2 * DAY)) + 30 * DAY });
    const auth = reports.find((report) => report.source === 'auth_logs')!;
    expect(auth.due).toEqual([]);
    expect(auth.next?.index).toBe(day(-3, 'auth_logs'));
    const text = reportText(reports, NOW);
    expect(text).toContain('edge_logs (keeps 30 days)');
    expect(text).toContain(`retention deletes at its next run: ${day(-40)}`);
    expect(text).toContain(`next to expire: ${day(-3, 'auth_logs')}`);
    expect(text).not.toContain('api-keys');
    expect(text).not.toContain('postgres_logs');
  });

  it('says so when there is nothing yet', () => {
    expect(reportText(partitionReport([], policy, NOW), NOW)).toBe('no source indices yet\n');
  });
});
