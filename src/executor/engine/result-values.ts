import {
  DuckDBTypeId,
  type DuckDBBlobValue,
  type DuckDBDateValue,
  type DuckDBDecimalValue,
  type DuckDBListValue,
  type DuckDBMapValue,
  type DuckDBStructValue,
  type DuckDBTimeValue,
  type DuckDBTimestampTZValue,
  type DuckDBTimestampValue,
  type DuckDBType,
  type DuckDBValue,
} from '@duckdb/node-api';
import { civilDateTime, clockTime } from '../civil-time.ts';

/**
 * DuckDB result values -> the JSON the API returns (docs/design/DESIGN.md 1), driven by the column's type:
 * TIMESTAMPTZ as integer microseconds, TIMESTAMP as `YYYY-MM-DDTHH:MM:SS[.ffffff]`, TIME as
 * `HH:MM:SS[.ffffff]`, a STRUCT as a
 * one-element array of its record (records are arrays of records) except as a LIST element, 64-bit
 * and wider integers as numbers while they are exact, else as strings.
 */
export function apiValue(value: DuckDBValue, type: DuckDBType): unknown {
  return convert(value, type, false);
}

function convert(value: DuckDBValue, type: DuckDBType, listElement: boolean): unknown {
  if (value === null) return null;
  switch (type.typeId) {
    case DuckDBTypeId.TIMESTAMP_TZ:
      return exactInteger((value as DuckDBTimestampTZValue).micros);
    case DuckDBTypeId.TIMESTAMP: {
      // Outside years 1..9999 (and ±infinity) the civil form has no fixed width: print DuckDB's text.
      return civilDateTime((value as DuckDBTimestampValue).micros) ?? String(value);
    }
    case DuckDBTypeId.DATE:
      return (value as DuckDBDateValue).toString();
    case DuckDBTypeId.TIME:
      return clockTime((value as DuckDBTimeValue).micros);
    case DuckDBTypeId.DECIMAL:
      return (value as DuckDBDecimalValue).toDouble();
    case DuckDBTypeId.BLOB:
      return Buffer.from((value as DuckDBBlobValue).bytes).toString('base64');
    case DuckDBTypeId.VARCHAR:
      return type.alias === 'JSON' ? JSON.parse(value as string) : value;
    case DuckDBTypeId.FLOAT:
    case DuckDBTypeId.DOUBLE:
      // JSON has no NaN or infinities; BigQuery's JSON output spells them as strings too.
      return Number.isFinite(value) ? value : String(value);
    case DuckDBTypeId.STRUCT: {
      const { entries } = value as DuckDBStructValue;
      const record = Object.fromEntries(type.entryNames.map((name, index) => [name, convert(entries[name] ?? null, type.entryTypes[index]!, false)]));
      return listElement ? record : [record];
    }
    case DuckDBTypeId.LIST:
    case DuckDBTypeId.ARRAY:
      return (value as DuckDBListValue).items.map((item) => convert(item, type.valueType, true));
    case DuckDBTypeId.MAP:
      return (value as DuckDBMapValue).entries.map((entry) => ({
        key: convert(entry.key, type.keyType, false),
        value: convert(entry.value, type.valueType, false),
      }));
    default:
      if (typeof value === 'bigint') return exactInteger(value);
      if (typeof value === 'boolean' || typeof value === 'number' || typeof value === 'string') return value;
      // INTERVAL, UUID and the rest print as DuckDB writes them.
      return String(value);
  }
}

function exactInteger(value: bigint): number | string {
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value.toString();
}
