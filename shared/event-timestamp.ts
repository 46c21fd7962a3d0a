import { isStoredForm, parseTimestamp, type TimestampResult } from './stored-timestamp.ts';

/** Microseconds at the start of each minute seen, by its `YYYY-MM-DDTHH:MM` text. */
const minutes = new Map<string, number>();
/** A stream's events span a few minutes at a time; the memo is emptied when it outgrows this. */
const MEMO_MINUTES = 4096;

/**
 * A producer's timestamp in microseconds, as parseTimestamp reads it. Most producers (ours, and
 * shippers writing RFC 3339 with microseconds) send the stored form already: its minute is parsed
 * once, and each event adds its seconds and fraction to it, instead of a full ISO parse per event.
 */
export function eventTimestamp(value: unknown): TimestampResult {
  if (typeof value !== 'string' || !isStoredForm(value)) return parseTimestamp(value);
  const seconds = Number(value.slice(17, 19));
  const within = seconds * 1_000_000 + Number(value.slice(20, 26));
  const minute = minutes.get(value.slice(0, 16));
  if (minute !== undefined && seconds <= 59) return { ok: true, micros: minute + within };
  const parsed = parseTimestamp(value);
  // the storable range ends on 2262-04-11T00:00:00: that year's minutes are checked in full each time
  if (parsed.ok && value < '2262') {
    if (minutes.size >= MEMO_MINUTES) minutes.clear();
    minutes.set(value.slice(0, 16), parsed.micros - within);
  }
  return parsed;
}
