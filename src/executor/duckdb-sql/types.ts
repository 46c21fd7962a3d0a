/** SqlType helpers: DuckDB spelling, BigQuery spelling for messages, BigQuery's coercion rules, and the checks on a translated value's type. */
import { InvalidQuery, type QueryPosition } from '../../errors.ts';
import type { SqlType } from '../../sql/types.ts';

/** BigQuery's name of a type, for error messages. */
export function typeName(type: SqlType): string {
  switch (type.kind) {
    case 'struct':
      return `STRUCT<${type.fields.map((f) => `${f.name} ${typeName(f.type)}`).join(', ')}>`;
    case 'array':
      return `ARRAY<${typeName(type.element)}>`;
    case 'unknown':
      return 'NULL';
    default:
      return type.kind.toUpperCase();
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
    return (
      a.fields.length === b.fields.length &&
      a.fields.every((f, i) => f.name.toLowerCase() === b.fields[i]!.name.toLowerCase() && sameType(f.type, b.fields[i]!.type))
    );
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

/** A translated expression: its DuckDB text and its BigQuery type. */
export interface Typed {
  sql: string;
  type: SqlType;
  /** Set for a string literal or a parameter: BigQuery coerces those to the type they are compared with. */
  stringLiteral?: string;
}

export function expect(value: Typed, kinds: SqlType['kind'][], where: string, position?: QueryPosition): Typed {
  if (value.type.kind === 'unknown' || kinds.includes(value.type.kind)) return value;
  throw new InvalidQuery(`${where} expects ${kinds.map((k) => k.toUpperCase()).join(' or ')}, got ${typeName(value.type)}`, position);
}

/** The common type of several results (CASE branches, IF, COALESCE), an error when there is none. */
export function unifyTypes(values: Typed[], where: string, position?: QueryPosition): SqlType {
  let type: SqlType = UNKNOWN;
  for (const value of values) {
    const next = commonType(type, value.type);
    if (!next) throw new InvalidQuery(`${where} has results of types ${typeName(type)} and ${typeName(value.type)}, which have no common type`, position);
    type = next;
  }
  return type;
}
