import type { SourceName } from './sources.ts';

/**
 * Time partitions: each source's events live in one index per period of their own timestamp (UTC),
 * so old data is dropped a whole index at a time and a query with a time window searches only the
 * partitions it overlaps. Names sort and group by time, so a wildcard on a day's name covers that
 * day's daily and hourly partitions alike:
 *
 *   daily   <prefix><source>-2024.03.20
 *   hourly  <prefix><source>-2024.03.20.15
 *   weekly  <prefix><source>-2024.03.18w    (named after its Monday)
 *
 * The index a source was kept in before partitioning, `<prefix><source>`, is the legacy index: every
 * read still includes it until retention removes it.
 */
export const PARTITION_PERIODS = ['hourly', 'daily', 'weekly'] as const;
export type PartitionPeriod = (typeof PARTITION_PERIODS)[number];

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** A read over more names than this uses the source's whole pattern: index names travel in the URL, which Elasticsearch caps at 4 KB. */
export const MAX_LISTED_PARTITIONS = 40;

/** How far past now a read without an upper bound looks for events stamped ahead of the clock. */
export const FUTURE_SLACK_MS = DAY_MS;

export interface Partition {
  index: string;
  source: SourceName;
  period: PartitionPeriod;
  /** First millisecond of the period (UTC). */
  startMs: number;
  /** First millisecond after the period: the newest possible event is older than this. */
  endMs: number;
}

const pad = (value: number, width = 2) => String(value).padStart(width, '0');

function dayText(ms: number): string {
  const date = new Date(ms);
  return `${date.getUTCFullYear()}.${pad(date.getUTCMonth() + 1)}.${pad(date.getUTCDate())}`;
}

function startOfDay(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

/** Monday 00:00 UTC of the week holding `ms`. */
function startOfWeek(ms: number): number {
  const day = startOfDay(ms);
  return day - ((new Date(day).getUTCDay() + 6) % 7) * DAY_MS;
}

export function periodStart(period: PartitionPeriod, ms: number): number {
  if (period === 'hourly') return Math.floor(ms / HOUR_MS) * HOUR_MS;
  return period === 'daily' ? startOfDay(ms) : startOfWeek(ms);
}

export function periodEnd(period: PartitionPeriod, startMs: number): number {
  return startMs + (period === 'hourly' ? HOUR_MS : period === 'daily' ? DAY_MS : 7 * DAY_MS);
}

function suffix(period: PartitionPeriod, startMs: number): string {
  if (period === 'hourly') return `${dayText(startMs)}.${pad(new Date(startMs).getUTCHours())}`;
  return period === 'daily' ? dayText(startMs) : `${dayText(startMs)}w`;
}

export function legacyIndexName(indexPrefix: string, source: SourceName): string {
  return `${indexPrefix}${source}`;
}

/** The partition an event stamped at `timestampMs` is written to. */
export function partitionIndexName(indexPrefix: string, source: SourceName, period: PartitionPeriod, timestampMs: number): string {
  return `${indexPrefix}${source}-${suffix(period, periodStart(period, timestampMs))}`;
}

/**
 * Every index a source may hold events in, its partitions and its legacy index, as one wildcard:
 * a wildcard matching nothing reads as empty where a missing concrete name would be an error. No
 * source name starts with another's, so it reads no other source.
 */
export function sourceIndexPattern(indexPrefix: string, source: SourceName): string {
  return `${indexPrefix}${source}*`;
}

const SUFFIX = /^(\d{4})\.(\d{2})\.(\d{2})(?:\.(\d{2})|(w))?$/;

/** The period and start a partition suffix (`2024.03.20`, `2024.03.20.15`, `2024.03.18w`) names; undefined when it names none. */
function spanOfSuffix(text: string): Pick<Partition, 'period' | 'startMs'> | undefined {
  const match = SUFFIX.exec(text);
  if (!match) return undefined;
  const [, year, month, day, hour, week] = match;
  const period: PartitionPeriod = hour !== undefined ? 'hourly' : week ? 'weekly' : 'daily';
  const startMs = Date.UTC(Number(year), Number(month) - 1, Number(day), Number(hour ?? 0));
  // reject names that do not round-trip (2024.02.31, a weekly name on a Tuesday)
  if (suffix(period, startMs) !== text || (period === 'weekly' && new Date(startMs).getUTCDay() !== 1)) return undefined;
  return { period, startMs };
}

/** A partition's source, period and time span from its name; undefined for any other index. */
export function parsePartitionName(indexPrefix: string, sources: readonly SourceName[], index: string): Partition | undefined {
  if (!index.startsWith(indexPrefix)) return undefined;
  const rest = index.slice(indexPrefix.length);
  // the longest source name first, in case one is a prefix of another
  for (const source of [...sources].sort((a, b) => b.length - a.length)) {
    if (!rest.startsWith(`${source}-`)) continue;
    const span = spanOfSuffix(rest.slice(source.length + 1));
    return span && { index, source, ...span, endMs: periodEnd(span.period, span.startMs) };
  }
  return undefined;
}

/**
 * When the period of the partition `index` begins, read from the end of its name alone (whatever
 * its prefix and source); undefined for an index that is not a partition.
 */
export function partitionStartOf(index: string): number | undefined {
  const dash = index.lastIndexOf('-');
  return dash < 0 ? undefined : spanOfSuffix(index.slice(dash + 1))?.startMs;
}

/** Inclusive time bounds of a read, epoch milliseconds; absent = unbounded on that side. */
export interface TimeBounds {
  fromMs?: number;
  toMs?: number;
}

/**
 * The index expressions a read of `source` within `bounds` needs: a superset of every partition
 * (of any period, so data written before a period change stays readable) that can hold an event
 * inside the bounds, plus the legacy index. Whole years, months and days are covered by one
 * wildcard each; partly covered days of an hourly source are narrowed to their hours. A read
 * without a lower bound, or one that would need too many names, uses the whole pattern.
 */
export function partitionsOverlapping(indexPrefix: string, source: SourceName, period: PartitionPeriod, bounds: TimeBounds, nowMs: number): string[] {
  const base = `${indexPrefix}${source}-`;
  const legacy = legacyIndexName(indexPrefix, source);
  const whole = [`${base}*`, legacy];
  if (bounds.fromMs === undefined) return whole;
  const from = bounds.fromMs;
  const to = bounds.toMs ?? Math.max(nowMs, from) + FUTURE_SLACK_MS;
  if (to < from) return [legacy];
  const names: string[] = [];
  const firstDay = startOfDay(from);
  const lastDay = startOfDay(to);
  let day = firstDay;
  while (day <= lastDay) {
    const date = new Date(day);
    const year = date.getUTCFullYear();
    const month = date.getUTCMonth();
    const yearEnd = Date.UTC(year + 1, 0, 1);
    const monthEnd = Date.UTC(year, month + 1, 1);
    // a year or month inside the bounds from its first day to its last is read with one wildcard
    const full = (end: number) => from <= day && to >= end - 1;
    if (month === 0 && date.getUTCDate() === 1 && full(yearEnd)) {
      names.push(`${base}${year}.*`);
      day = yearEnd;
    } else if (date.getUTCDate() === 1 && full(monthEnd)) {
      names.push(`${base}${year}.${pad(month + 1)}.*`);
      day = monthEnd;
    } else {
      const partial = from > day || to < day + DAY_MS - 1;
      if (partial && period === 'hourly') {
        names.push(`${base}${dayText(day)}`);
        for (let hour = Math.max(day, Math.floor(from / HOUR_MS) * HOUR_MS); hour <= Math.min(day + DAY_MS - 1, to); hour += HOUR_MS)
          names.push(`${base}${suffix('hourly', hour)}`);
      } else {
        names.push(`${base}${dayText(day)}*`);
      }
      day += DAY_MS;
    }
    if (names.length > MAX_LISTED_PARTITIONS) return whole;
  }
  // weekly partitions whose Monday lies outside the names above
  for (let week = startOfWeek(from); week <= to; week += 7 * DAY_MS) {
    const name = `${base}${suffix('weekly', week)}`;
    if (!names.some((listed) => covers(listed, name))) names.push(name);
  }
  names.push(legacy);
  return names.length > MAX_LISTED_PARTITIONS + 2 ? whole : names;
}

function covers(expression: string, index: string): boolean {
  return expression.endsWith('*') ? index.startsWith(expression.slice(0, -1)) : expression === index;
}

/** Whether an index expression from partitionsOverlapping() reads `index`. */
export function expressionReads(expressions: readonly string[], index: string): boolean {
  return expressions.some((expression) => covers(expression, index));
}
