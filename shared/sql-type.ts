/**
 * Value types of the sandboxed SQL, BigQuery's type system as far as the sandbox needs it. Saved
 * endpoints declare their CTEs' columns with these (the scanned CTEs get their `metadata` type
 * inferred from the rows), and the DuckDB printer derives output column types from them. Kept in
 * shared/ so that queries/ depends on no module of the service.
 */
export type SqlType =
  | { kind: 'string' }
  | { kind: 'int64' }
  | { kind: 'float64' }
  | { kind: 'numeric' }
  | { kind: 'bool' }
  | { kind: 'bytes' }
  /** An absolute point in time (stored events' `timestamp`); returned as integer microseconds. */
  | { kind: 'timestamp' }
  /** A civil date and time without zone; returned as `YYYY-MM-DDTHH:MM:SS[.ffffff]`. */
  | { kind: 'datetime' }
  | { kind: 'date' }
  | { kind: 'time' }
  | { kind: 'json' }
  | { kind: 'struct'; fields: { name: string; type: SqlType }[] }
  | { kind: 'array'; element: SqlType }
  /** Only NULLs were seen (or nothing at all): any type will do. */
  | { kind: 'unknown' };

/**
 * The value of a query parameter `@name`: text, which BigQuery coerces to the type it is compared
 * with (the spec endpoints' parameters), or a value of the type an operator declared for it, which
 * reaches the query as that type (`@n` of INT64 compares with INT64 columns and may be a LIMIT).
 */
export type ParameterValue = string | { type: 'int64' | 'float64' | 'bool' | 'timestamp'; text: string };
