import type { SqlType } from '../../sql/types.ts';

/** `"name"` with embedded quotes doubled: DuckDB's identifier quoting, safe for any key. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * The DuckDB type text a column of `type` is created with.
 *
 * `unknown` (only NULLs seen) maps to DuckDB's "NULL" type, measured on 1.5: a "NULL" column or
 * struct field compares with anything (`x >= 500`, `x = 'a'`, `x like 'a%'` all yield NULL, as
 * BigQuery does for a NULL of any type) and unions with any type, whereas a concrete choice such as
 * INTEGER fails `x = 'a'` with a conversion error and `x like 'a%'` with a binder error.
 */
export function duckDbTypeName(type: SqlType): string {
  switch (type.kind) {
    case 'string':
      return 'VARCHAR';
    case 'int64':
      return 'BIGINT';
    case 'float64':
      return 'DOUBLE';
    case 'numeric':
      return 'DECIMAL(38,9)';
    case 'bool':
      return 'BOOLEAN';
    case 'bytes':
      return 'BLOB';
    case 'timestamp':
      // The engine's sessions run with TimeZone UTC, so TIMESTAMPTZ prints and truncates in UTC.
      return 'TIMESTAMPTZ';
    case 'datetime':
      return 'TIMESTAMP';
    case 'date':
      return 'DATE';
    case 'time':
      return 'TIME';
    case 'json':
      return 'JSON';
    case 'struct':
      return `STRUCT(${type.fields.map((field) => `${quoteIdentifier(field.name)} ${duckDbTypeName(field.type)}`).join(', ')})`;
    case 'array':
      return `${duckDbTypeName(type.element)}[]`;
    case 'unknown':
      return '"NULL"';
  }
}
