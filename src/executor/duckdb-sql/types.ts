/** SqlType helpers: DuckDB spelling, BigQuery spelling for messages, and BigQuery's coercion rules. */
import type { SqlType } from '../../sql/types.ts';

/** BigQuery's name of a type, for error messages. */
export function typeName(type: SqlType): string {
  switch (type.kind) {
    case 'struct': return `STRUCT<${type.fields.map((f) => `${f.name} ${typeName(f.type)}`).join(', ')}>`;
    case 'array': return `ARRAY<${typeName(type.element)}>`;
    case 'unknown': return 'NULL';
    default: return type.kind.toUpperCase();
  }
}

export const STRING: SqlType = { kind: 'string' };
export const INT64: SqlType = { kind: 'int64' };
export const FLOAT64: SqlType = { kind: 'float64' };
export const BOOL: SqlType = { kind: 'bool' };
export const TIMESTAMP: SqlType = { kind: 'timestamp' };
export const DATETIME: SqlType = { kind: 'datetime' };
export const DATE: SqlType = { kind: 'date' };
export const UNKNOWN: SqlType = { kind: 'unknown' };

export function isNumeric(type: SqlType): boolean {
  return type.kind === 'int64' || type.kind === 'float64' || type.kind === 'numeric' || type.kind === 'unknown';
}

export function sameType(a: SqlType, b: SqlType): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === 'array' && b.kind === 'array') return sameType(a.element, b.element);
  if (a.kind === 'struct' && b.kind === 'struct') {
    return a.fields.length === b.fields.length && a.fields.every((f, i) => f.name.toLowerCase() === b.fields[i]!.name.toLowerCase() && sameType(f.type, b.fields[i]!.type));
  }
  return true;
}

const NUMERIC_RANK = { int64: 0, numeric: 1, float64: 2 } as const;

/**
 * The common type of two values (CASE branches, UNION columns, IN lists), or undefined when
 * BigQuery has none (it would refuse the query, where DuckDB might cast silently).
 */
export function commonType(a: SqlType, b: SqlType): SqlType | undefined {
  if (a.kind === 'unknown') return b;
  if (b.kind === 'unknown') return a;
  if (a.kind in NUMERIC_RANK && b.kind in NUMERIC_RANK) {
    return NUMERIC_RANK[a.kind as keyof typeof NUMERIC_RANK] >= NUMERIC_RANK[b.kind as keyof typeof NUMERIC_RANK] ? a : b;
  }
  if (a.kind === 'array' && b.kind === 'array') {
    const element = commonType(a.element, b.element);
    return element && { kind: 'array', element };
  }
  if (a.kind === 'struct' && b.kind === 'struct') {
    if (a.fields.length !== b.fields.length) return undefined;
    const fields: { name: string; type: SqlType }[] = [];
    for (const [i, field] of a.fields.entries()) {
      const type = commonType(field.type, b.fields[i]!.type);
      if (!type) return undefined;
      fields.push({ name: field.name, type });
    }
    return { kind: 'struct', fields };
  }
  return sameType(a, b) ? a : undefined;
}

/** Types BigQuery can compare with = and <: not arrays, structs (only =) or JSON. */
export function isOrderable(type: SqlType): boolean {
  return type.kind !== 'array' && type.kind !== 'struct' && type.kind !== 'json';
}
