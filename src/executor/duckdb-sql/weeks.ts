/**
 * Weeks that start on a given day: WEEK (Sunday), WEEK(<weekday>) and ISOWEEK (Monday). DuckDB's
 * own week is ISO's, starting on Monday; days are numbered as DuckDB's dayofweek, Sunday 0.
 */
import { LAMBDA_PARAMETER } from './literals.ts';

const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];

/** The day a week part's weeks start on (0 Sunday ... 6 Saturday), undefined for a part that is not a week. */
export function weekStart(part: string): number | undefined {
  if (part === 'week') return 0;
  if (part === 'isoweek') return 1;
  const weekday = /^week\((\w+)\)$/.exec(part)?.[1];
  const day = weekday === undefined ? -1 : WEEKDAYS.indexOf(weekday);
  return day >= 0 ? day : undefined;
}

/** Days to add so that a week starting on `start` begins on a Monday, as DuckDB's weeks do. */
function shift(start: number): number {
  return (8 - (start === 0 ? 7 : start)) % 7;
}

/** The start of the week holding `value` (DATE, TIMESTAMP or TIMESTAMPTZ text, printed once), a TIMESTAMP / TIMESTAMPTZ. */
export function weekTrunc(value: string, start: number): string {
  const days = shift(start);
  return days === 0 ? `date_trunc('week', ${value})` : `(date_trunc('week', ${value} + INTERVAL ${days} DAY) - INTERVAL ${days} DAY)`;
}

/** Week starts crossed from date `earlier` to date `later` (DATE texts, each printed once). */
export function weeksBetween(earlier: string, later: string, start: number): string {
  const days = shift(start);
  const monday = (date: string) => `date_trunc('week', ${date}${days === 0 ? '' : ` + ${days}`})`;
  return `(date_diff('day', ${monday(earlier)}, ${monday(later)}) // 7)`;
}

/**
 * EXTRACT(WEEK(<weekday>)): the week of the year, counting weeks that start on `start`; the days
 * before the year's first such day are in week 0. `value` (a DATE or TIMESTAMP) is printed once.
 */
export function weekOfYear(value: string, start: number): string {
  const d = LAMBDA_PARAMETER;
  // the latest week start on or before the day, as a day of the year (0 or less: in the year before)
  const startDay = `(dayofyear(${d}) - (dayofweek(${d}) - ${start} + 7) % 7)`;
  return `(list_transform([${value}], lambda ${d}: (${startDay} + 6) // 7)[1])`;
}
