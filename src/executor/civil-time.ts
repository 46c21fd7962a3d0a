/**
 * The API's text of civil times (DESIGN.md 1), shared by the engine's result conversion and the
 * service's own finish so both answer the same bytes: DATETIME as `YYYY-MM-DDTHH:MM:SS[.ffffff]`,
 * TIME as `HH:MM:SS[.ffffff]`, the fraction only when it is not zero.
 */

const MICROS_PER_DAY = 86_400_000_000n;
const FIRST_CIVIL_MICROS = -62_135_596_800_000_000n;
const END_CIVIL_MICROS = 253_402_300_800_000_000n;

/** Microseconds since 1970-01-01T00:00 as civil text; undefined outside years 1..9999, where the text has no fixed width. */
export function civilDateTime(micros: bigint): string | undefined {
  if (micros < FIRST_CIVIL_MICROS || micros >= END_CIVIL_MICROS) return undefined;
  const days = micros >= 0n ? micros / MICROS_PER_DAY : -((-micros + MICROS_PER_DAY - 1n) / MICROS_PER_DAY);
  const date = new Date(Number(days) * 86_400_000).toISOString().slice(0, 10);
  return `${date}T${clockTime(micros - days * MICROS_PER_DAY)}`;
}

/** Microseconds since midnight as `HH:MM:SS[.ffffff]`. */
export function clockTime(ofDay: bigint): string {
  const seconds = ofDay / 1_000_000n;
  const fraction = ofDay % 1_000_000n;
  const clock = [seconds / 3600n, (seconds / 60n) % 60n, seconds % 60n].map((part) => part.toString().padStart(2, '0')).join(':');
  return `${clock}${fraction === 0n ? '' : `.${fraction.toString().padStart(6, '0')}`}`;
}
