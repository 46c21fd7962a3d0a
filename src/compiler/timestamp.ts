import { BadParameter } from '../errors.ts';

const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?(Z|z|[+-]\d{2}:?\d{2})?$/;

/**
 * An ISO 8601 parameter as a UTC timestamp with nine fractional digits, the form a date_nanos range
 * compares exactly. Fractions beyond milliseconds are kept as text: no precision goes through a Date.
 * A value without a zone is read as UTC.
 */
export function parseTimestampParameter(name: string, text: string): string {
  const match = ISO_8601.exec(text);
  const invalid = () => new BadParameter(`${name}: ${JSON.stringify(text)} is not an ISO 8601 timestamp; send e.g. 2024-01-01T00:00:00.000Z, or leave it empty for no bound`);
  if (!match) throw invalid();
  const [, year, month, day, hour = '00', minute = '00', second = '00', fraction = '', zone = 'Z'] = match;
  const fields = [Number(year), Number(month) - 1, Number(day), Number(hour), Number(minute), Number(second)] as const;
  const utc = Date.UTC(...fields);
  const check = new Date(utc);
  // Date.UTC rolls 2024-02-30 over to March; a real calendar date survives the round trip
  if (check.getUTCFullYear() !== fields[0] || check.getUTCMonth() !== fields[1] || check.getUTCDate() !== fields[2] || fields[3] > 23 || fields[4] > 59 || fields[5] > 59) {
    throw invalid();
  }
  let offsetMinutes = 0;
  if (zone !== 'Z' && zone !== 'z') {
    const digits = zone.replace(':', '');
    offsetMinutes = (zone.startsWith('-') ? -1 : 1) * (Number(digits.slice(1, 3)) * 60 + Number(digits.slice(3, 5)));
  }
  const shifted = new Date(utc - offsetMinutes * 60_000).toISOString().slice(0, 19);
  return `${shifted}.${fraction.padEnd(9, '0')}Z`;
}

/** Milliseconds since the epoch as the nine-digit UTC form. */
export function timestampFromMillis(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 23)}000000Z`;
}

/** date_nanos holds 1970-01-01 to 2262-04-11; bounds outside that range are clamped to its ends. */
export const DATE_NANOS_MIN = '1970-01-01T00:00:00.000000000Z';
export const DATE_NANOS_MAX = '2262-04-11T00:00:00.000000000Z';

export function clampToDateNanos(timestamp: string): string {
  if (timestamp < DATE_NANOS_MIN) return DATE_NANOS_MIN;
  if (timestamp > DATE_NANOS_MAX) return DATE_NANOS_MAX;
  return timestamp;
}
