/**
 * Event timestamps: ISO 8601 strings of any precision or epoch numbers in seconds, milliseconds or
 * microseconds (told apart by magnitude), normalised to the stored form: UTC, exactly six fractional
 * digits, `Z`. Everything is computed in integer microseconds so no precision is lost on the way.
 */

/** date_nanos covers 1970-01-01 to 2262-04-11; anything outside cannot be stored. */
const MIN_MICROS = 0;
const MAX_MICROS = Date.UTC(2262, 3, 11) * 1000;

// Magnitude bands: a value below 1e11 is seconds (until year 5138), below 1e14 milliseconds, below
// 1e17 microseconds, below 1e20 nanoseconds.
const SECONDS_BELOW = 1e11;
const MILLISECONDS_BELOW = 1e14;
const MICROSECONDS_BELOW = 1e17;
const NANOSECONDS_BELOW = 1e20;

const ISO_PATTERN =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?\s*(Z|UTC|[+-]\d{2}(?::?\d{2})?)?$/i;

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
