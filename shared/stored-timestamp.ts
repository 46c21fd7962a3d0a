/**
 * The stored form of event timestamps and everything that reads or writes it. Producers send ISO
 * 8601 strings of any precision or epoch numbers in seconds, milliseconds or microseconds (told apart
 * by magnitude); Elasticsearch keeps `timestamp` as date_nanos written `2024-01-01T00:00:00.123456Z`
 * (UTC, six fractional digits); range bounds are compared in the nine-digit form; the API returns
 * integer microseconds since the epoch. All arithmetic is on integers or text, never through a Date
 * where digits would be lost.
 */

/** date_nanos holds 1970-01-01 to 2262-04-11; bounds outside that range are clamped to its ends. */
export const DATE_NANOS_MIN = '1970-01-01T00:00:00.000000000Z';
export const DATE_NANOS_MAX = '2262-04-11T00:00:00.000000000Z';

const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?(Z|z|[+-]\d{2}:?\d{2})?$/;

/**
 * An ISO 8601 text as a UTC timestamp with nine fractional digits, the form a date_nanos range
 * compares exactly; undefined when it is not a real date and time. A value without a zone is UTC.
 */
export function isoToNanosText(text: string): string | undefined {
  const match = ISO_8601.exec(text);
  if (!match) return undefined;
  const [, year, month, day, hour = '00', minute = '00', second = '00', fraction = '', zone = 'Z'] = match;
  const fields = [Number(year), Number(month) - 1, Number(day), Number(hour), Number(minute), Number(second)] as const;
  const utc = Date.UTC(...fields);
  const check = new Date(utc);
  // Date.UTC rolls 2024-02-30 over to March; a real calendar date survives the round trip
  if (
    check.getUTCFullYear() !== fields[0] ||
    check.getUTCMonth() !== fields[1] ||
    check.getUTCDate() !== fields[2] ||
    fields[3] > 23 ||
    fields[4] > 59 ||
    fields[5] > 59
  ) {
    return undefined;
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
export function nanosTextFromMillis(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 23)}000000Z`;
}

/** Microseconds since the epoch as the nine-digit UTC form. */
export function nanosTextFromMicros(micros: number): string {
  return `${formatMicros(micros).slice(0, -1)}000Z`;
}

const NANOS_TEXT = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.(\d{3})(\d{6})Z$/;

/**
 * A nine-digit timestamp in epoch milliseconds. Digits below the millisecond are rounded `down` or
 * `up`, or with `exact` make the answer undefined; so does text not in the nine-digit form.
 */
export function millisFromNanosText(text: string, rounding: 'down' | 'up' | 'exact'): number | undefined {
  const match = NANOS_TEXT.exec(text);
  if (!match) return undefined;
  const [, seconds, millis, below] = match;
  const whole = Date.parse(`${seconds}Z`) + Number(millis);
  if (below === '000000') return whole;
  return rounding === 'down' ? whole : rounding === 'up' ? whole + 1 : undefined;
}

export function clampToDateNanos(timestamp: string): string {
  if (timestamp < DATE_NANOS_MIN) return DATE_NANOS_MIN;
  if (timestamp > DATE_NANOS_MAX) return DATE_NANOS_MAX;
  return timestamp;
}

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
 * A stored timestamp (`2024-01-01T00:00:00.123456Z`) as integer microseconds since the epoch.
 * Digits beyond the microsecond are truncated. Microseconds up to year 2255 stay below 2^53.
 */
export function microsecondsFromStoredTimestamp(text: string): number {
  const match = STORED_TIMESTAMP.exec(text);
  if (!match) throw new Error(`stored timestamp ${JSON.stringify(text)} is not in the UTC ISO form the ingest worker writes`);
  const [, year, month, day, hour, minute, second, fraction = ''] = match;
  const days = daysFromCivil(Number(year), Number(month), Number(day));
  const seconds = days * 86_400 + Number(hour) * 3600 + Number(minute) * 60 + Number(second);
  return seconds * 1_000_000 + Number(fraction.padEnd(6, '0').slice(0, 6));
}

/** The UTC hour a stored timestamp falls in, as a key (`2024-01-01T00`): equal for every timestamp of that hour. */
export function storedTimestampHour(text: string): string {
  return text.slice(0, 13);
}

/** Epoch milliseconds as the `YYYY-MM-DDTHH:MM:SS` UTC text usage clients parse (a bucket start). */
export function datetimeTextFromMillis(epochMillis: number): string {
  return new Date(epochMillis).toISOString().slice(0, 19);
}

// ---- the ingest side: producer timestamps to the stored form ----

/** date_nanos covers 1970-01-01 to 2262-04-11; anything outside cannot be stored. */
const MIN_MICROS = 0;
const MAX_MICROS = Date.UTC(2262, 3, 11) * 1000;

// Magnitude bands: a value below 1e11 is seconds (until year 5138), below 1e14 milliseconds, below
// 1e17 microseconds, below 1e20 nanoseconds.
const SECONDS_BELOW = 1e11;
const MILLISECONDS_BELOW = 1e14;
const MICROSECONDS_BELOW = 1e17;
const NANOSECONDS_BELOW = 1e20;

const ISO_PATTERN = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?\s*(Z|UTC|[+-]\d{2}(?::?\d{2})?)?$/i;

export type TimestampResult = { ok: true; micros: number } | { ok: false; reason: string };

export function parseTimestamp(value: unknown): TimestampResult {
  if (typeof value === 'number') return fromEpoch(value);
  if (typeof value === 'string') {
    const text = value.trim();
    if (/^-?\d+(\.\d+)?$/.test(text)) return fromEpoch(Number(text));
    return fromIso(text);
  }
  return { ok: false, reason: `timestamp must be an ISO 8601 string or an epoch number, got ${describe(value)}` };
}

function fromEpoch(value: number): TimestampResult {
  if (!Number.isFinite(value)) return { ok: false, reason: `timestamp ${value} is not a finite number` };
  const magnitude = Math.abs(value);
  let micros: number;
  if (magnitude < SECONDS_BELOW) micros = Math.round(value * 1e6);
  else if (magnitude < MILLISECONDS_BELOW) micros = Math.round(value * 1e3);
  else if (magnitude < MICROSECONDS_BELOW) micros = Math.round(value);
  else if (magnitude < NANOSECONDS_BELOW) micros = Math.trunc(value / 1e3);
  else return { ok: false, reason: `timestamp ${value} is too large to be epoch seconds, milliseconds, microseconds or nanoseconds` };
  return inRange(micros, String(value));
}

function fromIso(text: string): TimestampResult {
  const match = ISO_PATTERN.exec(text);
  if (!match) return { ok: false, reason: `timestamp "${truncate(text)}" is not ISO 8601 (expected e.g. 2024-01-01T12:00:00.123456Z)` };
  const [, year, month, day, hour = '0', minute = '0', second = '0', fraction = '', zone = 'Z'] = match;
  const fields = [Number(year), Number(month), Number(day), Number(hour), Number(minute), Number(second)] as const;
  const [y, mo, d, h, mi, s] = fields;
  const millis = Date.UTC(y, mo - 1, d, h, mi, s);
  const check = new Date(millis);
  // Date.UTC rolls 2024-02-31 over into March; a real calendar date survives the round trip
  if (mo < 1 || mo > 12 || check.getUTCDate() !== d || check.getUTCMonth() !== mo - 1 || h > 23 || mi > 59 || s > 59) {
    return { ok: false, reason: `timestamp "${truncate(text)}" is not a valid calendar date and time` };
  }
  // keep microseconds, truncate anything finer
  const fractionMicros = Number(fraction.slice(0, 6).padEnd(6, '0'));
  const micros = millis * 1000 + fractionMicros - zoneOffsetMinutes(zone) * 60_000_000;
  return inRange(micros, text);
}

function zoneOffsetMinutes(zone: string): number {
  if (/^(Z|UTC)$/i.test(zone)) return 0;
  const sign = zone.startsWith('-') ? -1 : 1;
  const digits = zone.slice(1).replace(':', '');
  return sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4) || '0'));
}

function inRange(micros: number, original: string): TimestampResult {
  if (micros < MIN_MICROS || micros > MAX_MICROS) {
    return { ok: false, reason: `timestamp ${truncate(original)} is outside the storable range 1970-01-01 to 2262-04-11` };
  }
  return { ok: true, micros };
}

const STORED_FORM = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/**
 * Whether a timestamp that parsed is already in the stored form, so formatting its microseconds
 * would give back the same text (producers that send our own form skip the formatting).
 */
export function isStoredForm(text: string): boolean {
  return text.length === 27 && STORED_FORM.test(text);
}

/** The stored form: `2024-01-01T00:00:00.123456Z`. */
export function formatMicros(micros: number): string {
  const millis = Math.floor(micros / 1000);
  const sub = String(micros - millis * 1000).padStart(3, '0');
  return `${new Date(millis).toISOString().slice(0, -1)}${sub}Z`;
}

function truncate(text: string): string {
  return text.length > 64 ? `${text.slice(0, 64)}...` : text;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}
