const STORED_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z$/;

/** Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146097 + dayOfEra - 719468;
}

/**
 * A stored timestamp (`2024-01-01T00:00:00.123456Z`) as integer microseconds since the epoch. Done
 * on the text, not through a Date, which would drop the last three digits. Digits beyond the
 * microsecond are truncated. Microseconds up to year 2255 stay below 2^53, so a number is exact.
 */
export function microsecondsFromStoredTimestamp(text: string): number {
  const match = STORED_TIMESTAMP.exec(text);
  if (!match) throw new Error(`stored timestamp ${JSON.stringify(text)} is not in the UTC ISO form the ingest worker writes`);
  const [, year, month, day, hour, minute, second, fraction = ''] = match;
  const days = daysFromCivil(Number(year), Number(month), Number(day));
  const seconds = days * 86_400 + Number(hour) * 3600 + Number(minute) * 60 + Number(second);
  return seconds * 1_000_000 + Number(fraction.padEnd(6, '0').slice(0, 6));
}

/** A bucket key (epoch milliseconds) as the `YYYY-MM-DDTHH:MM:SS` UTC text usage clients parse. */
export function bucketTimestamp(epochMillis: number): string {
  return new Date(epochMillis).toISOString().slice(0, 19);
}
