/**
 * Everything the printer writes that came from the query's text goes through these functions: an
 * identifier is always double-quoted, a string always single-quoted, numbers and times are
 * re-rendered from parsed values. Nothing from the query reaches the DuckDB text unescaped.
 */
import { InvalidQuery, type QueryPosition } from '../../errors.ts';

function refuseNul(text: string, what: string, position?: QueryPosition): void {
  if (text.includes('\u0000')) throw new InvalidQuery(`${what} contains a NUL character, which the engine cannot take`, position);
}

export function quoteIdentifier(name: string): string {
  refuseNul(name, `identifier ${JSON.stringify(name)}`);
  return `"${name.replaceAll('"', '""')}"`;
}

export function quoteString(value: string, position?: QueryPosition): string {
  refuseNul(value, 'a string literal', position);
  return `'${value.replaceAll("'", "''")}'`;
}

/** The parameter name of the printer's DuckDB lambdas; no relation alias may take it (see query.ts). */
export const LAMBDA_PARAMETER = 'lambda_element';

/** The parameter of the lambdas that bind a value once (bind.ts): another name, so a lambda in their body cannot shadow it. */
export const BOUND_PARAMETER = 'bound_values';

const INT64_MAX = 2n ** 63n - 1n;

/** An integer literal as BigQuery reads it (decimal or 0x hex), re-rendered as a BIGINT. */
export function int64Literal(text: string, position?: QueryPosition): string | undefined {
  if (!/^(\d+|0[xX][0-9a-fA-F]+)$/.test(text)) return undefined;
  const value = BigInt(text);
  // the literal is unsigned here: a leading minus is a unary operator, so -9223372036854775808 must fit as a positive first
  if (value > INT64_MAX + 1n) throw new InvalidQuery(`integer literal ${text} does not fit in INT64`, position);
  return value > INT64_MAX ? `(-9223372036854775807 - 1)` : `CAST(${value.toString()} AS BIGINT)`;
}

/** A decimal or exponent literal: FLOAT64 in BigQuery (DuckDB would read `1.5` as DECIMAL). */
export function float64Literal(text: string, position?: QueryPosition): string {
  // `\d+(\.\d*)?`, not `\d+\.?\d*`, which splits a run of digits every way before failing
  if (!/^(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(text)) throw new InvalidQuery(`malformed number ${JSON.stringify(text)}`, position);
  const value = Number(text);
  if (!Number.isFinite(value)) throw new InvalidQuery(`number ${text} is out of FLOAT64 range`, position);
  return `CAST('${text}' AS DOUBLE)`;
}

export const MICROS_PER: Record<'microsecond' | 'millisecond' | 'second' | 'minute' | 'hour' | 'day', bigint> = {
  microsecond: 1n,
  millisecond: 1000n,
  second: 1_000_000n,
  minute: 60_000_000n,
  hour: 3_600_000_000n,
  day: 86_400_000_000n,
};

/** Matched on trimmed text: whitespace on both sides of an optional zone would make a failed match take time quadratic in its length. */
const TIMESTAMP_TEXT = /^(\d{4})-(\d{1,2})-(\d{1,2})(?:[Tt ](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,6}))?)?)?\s*(Z|z|UTC|[+-]\d{1,2}(?::?\d{2})?)?$/;

/**
 * Microseconds since the epoch of a BigQuery timestamp string (`2024-01-01T00:00:00.000Z`,
 * `2024-01-01 00:00:00+00`, `2024-01-01`; no zone means UTC), or undefined if it is not one.
 * Named time zones are not read here.
 */
export function parseTimestampText(text: string): bigint | undefined {
  const match = TIMESTAMP_TEXT.exec(text.trim());
  if (!match) return undefined;
  const [, y, mo, d, h = '0', mi = '0', s = '0', fraction = '', zone = 'Z'] = match;
  const year = Number(y),
    month = Number(mo),
    day = Number(d),
    hour = Number(h),
    minute = Number(mi),
    second = Number(s);
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day); // not Date.UTC, which reads years 0-99 as 1900-1999
  date.setUTCHours(hour, minute, second, 0);
  if (date.getUTCDate() !== day) return undefined; // 2024-02-31
  const millis = date.getTime();
  let offsetMinutes = 0;
  if (zone !== 'Z' && zone !== 'z' && zone !== 'UTC') {
    const [, sign, zh, zm = '0'] = /^([+-])(\d{1,2}):?(\d{2})?$/.exec(zone)!;
    offsetMinutes = (sign === '-' ? -1 : 1) * (Number(zh) * 60 + Number(zm));
  }
  return BigInt(millis) * 1000n + BigInt(fraction.padEnd(6, '0')) - BigInt(offsetMinutes) * 60_000_000n;
}

/** A TIMESTAMPTZ literal rendered from epoch microseconds. */
export function timestampLiteral(micros: bigint): string {
  const millis = micros / 1000n - (micros % 1000n < 0n ? 1n : 0n);
  const subMillis = micros - millis * 1000n;
  const iso = new Date(Number(millis)).toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
  return `TIMESTAMPTZ '${iso.slice(0, 10)} ${iso.slice(11, 23)}${subMillis.toString().padStart(3, '0')}+00'`;
}

/** `YYYY-MM-DD`, validated. */
export function dateLiteral(text: string, position?: QueryPosition): string {
  const match = /^\s*(\d{4})-(\d{1,2})-(\d{1,2})\s*$/.exec(text);
  const micros = match ? parseTimestampText(`${match[1]}-${match[2]}-${match[3]}`) : undefined;
  if (micros === undefined) throw new InvalidQuery(`invalid DATE literal ${JSON.stringify(text)}`, position);
  return `DATE '${timestampLiteral(micros).slice(13, 23)}'`;
}

/** A civil date and time (no zone allowed), validated, as a DuckDB TIMESTAMP. */
export function datetimeLiteral(text: string, position?: QueryPosition): string {
  const hasZone = /(Z|z|UTC|[+-]\d{1,2}(:?\d{2})?)\s*$/.test(text.replace(/^\s*\d{4}-\d{1,2}-\d{1,2}/, ''));
  const micros = hasZone ? undefined : parseTimestampText(text);
  if (micros === undefined) throw new InvalidQuery(`invalid DATETIME literal ${JSON.stringify(text)}`, position);
  return `CAST(${timestampLiteral(micros).slice('TIMESTAMPTZ '.length, -4)}' AS TIMESTAMP)`;
}
