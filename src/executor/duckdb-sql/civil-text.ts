/**
 * BigQuery's text of a TIMESTAMP or DATETIME value (DuckDB TIMESTAMPTZ / TIMESTAMP text `value`),
 * read several times, so pass a column, a literal or a bound value. The fraction is written with
 * 0, 3 or 6 digits, the fewest that keep it exact.
 * - `cast`, CAST(x AS STRING): `2024-01-01 00:00:00.123+00` (DATETIME without the zone);
 * - `json`, the JSON encoding (TO_JSON_STRING): `2024-01-01T00:00:00.123Z` (DATETIME without the Z).
 */
export function civilText(value: string, kind: 'timestamp' | 'datetime', form: 'cast' | 'json'): string {
  const utc = kind === 'timestamp' ? `CAST(${value} AS TIMESTAMP)` : value;
  const micros = `(microsecond(${utc}) % 1000000)`;
  const fraction = `(CASE WHEN ${micros} = 0 THEN '' WHEN ${micros} % 1000 = 0 THEN strftime(${utc}, '.%g') ELSE strftime(${utc}, '.%f') END)`;
  const zone = kind === 'datetime' ? '' : form === 'cast' ? ` || '+00'` : ` || 'Z'`;
  return `(strftime(${utc}, '%Y-%m-%d${form === 'cast' ? ' ' : 'T'}%H:%M:%S') || ${fraction}${zone})`;
}
