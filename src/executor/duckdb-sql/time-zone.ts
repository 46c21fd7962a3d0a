/**
 * BigQuery's time zone arguments: a tz database name (`America/Los_Angeles`) or an offset from UTC
 * (`-08`, `+05:30`, `UTC+3`). The engine has ICU's zone data (DuckDB's timezone()); its sessions
 * run in UTC, so a TIMESTAMPTZ cast to TIMESTAMP is UTC's civil time. A name is checked against the
 * zones this process knows, so an unknown one is the client's error before the engine runs.
 */
import { InvalidQuery, type QueryPosition } from '../../errors.ts';
import { quoteString } from './literals.ts';

export type TimeZone = { kind: 'utc' } | { kind: 'offset'; minutes: number } | { kind: 'named'; name: string };

export const UTC: TimeZone = { kind: 'utc' };

const OFFSET = /^(?:UTC)?([+-])(\d{1,2})(?::?(\d{2}))?$/i;

export function timeZone(text: string, position?: QueryPosition): TimeZone {
  if (/^(UTC|Etc\/UTC|Z)$/i.test(text)) return UTC;
  const offset = OFFSET.exec(text);
  if (offset) {
    const minutes = Number(offset[2]) * 60 + Number(offset[3] ?? 0);
    if (minutes > 14 * 60) throw new InvalidQuery(`time zone offset ${JSON.stringify(text)} is out of range`, position);
    return minutes === 0 ? UTC : { kind: 'offset', minutes: offset[1] === '-' ? -minutes : minutes };
  }
  try {
    new Intl.DateTimeFormat('en', { timeZone: text });
  } catch {
    throw new InvalidQuery(
      `unknown time zone ${JSON.stringify(text)} (use a tz database name such as America/Los_Angeles, or an offset such as -08:00)`,
      position,
    );
  }
  return { kind: 'named', name: text };
}

/** The civil time (DuckDB TIMESTAMP) in `zone` of the instant `timestamp` (TIMESTAMPTZ). */
export function civilIn(timestamp: string, zone: TimeZone): string {
  switch (zone.kind) {
    case 'utc':
      return `CAST(${timestamp} AS TIMESTAMP)`;
    case 'offset':
      return `(CAST(${timestamp} AS TIMESTAMP) + INTERVAL (${zone.minutes}) MINUTE)`;
    case 'named':
      return `timezone(${quoteString(zone.name)}, ${timestamp})`;
  }
}

/** The instant (TIMESTAMPTZ) at which `zone`'s clocks show the civil time `civil` (TIMESTAMP). */
export function instantIn(civil: string, zone: TimeZone): string {
  switch (zone.kind) {
    case 'utc':
      return `CAST(${civil} AS TIMESTAMPTZ)`;
    case 'offset':
      return `CAST(${civil} - INTERVAL (${zone.minutes}) MINUTE AS TIMESTAMPTZ)`;
    case 'named':
      return `timezone(${quoteString(zone.name)}, ${civil})`;
  }
}
