import { QueryTooExpensive } from '../../errors.ts';
import type { SqlType, TableColumn, TableSchema } from '../../sql/types.ts';

/**
 * The SqlType of JSON values (a scanned CTE's `metadata`, in the BigQuery view of src/rows/logs.ts),
 * merged across all rows so one DuckDB column type holds every row:
 * - records: the union of their keys, in order of first appearance, each key's types merged;
 * - arrays: their elements' types merged;
 * - int64 with float64: float64; null and absent keys contribute nothing (`unknown` if nothing else);
 * - two different scalar kinds (string, int64/float64, bool): string, so `'200'` and `200` both
 *   load as text (DuckDB renders the number and the boolean as `200` and `true`);
 * - a record or array against anything else, keys that differ only in case (DuckDB struct fields are
 *   case-insensitive) and records that never have a key (DuckDB has no empty STRUCT): json, which
 *   keeps the values as they were.
 * None of these fallbacks fails loading.
 */

export interface InferenceLimits {
  /** Nesting of records and arrays below the column. */
  maxDepth: number;
  /** Record keys counted over the whole column type. */
  maxFields: number;
}

export const defaultInferenceLimits: InferenceLimits = { maxDepth: 32, maxFields: 2000 };

/** A column whose type comes from the rows rather than from the CTE's declaration. */
export interface InferredColumn {
  name: string;
  type: 'inferred';
}

export type DeclaredColumn = TableColumn | InferredColumn;

/** The type inferred so far; records keep a map so merging a row is linear in the row's size. */
type Shape =
  | { kind: 'unknown' | 'string' | 'int64' | 'float64' | 'bool' | 'json' }
  | { kind: 'struct'; fields: Map<string, Shape>; lowerCaseNames: Set<string> }
  | { kind: 'array'; element: Shape };

const UNKNOWN: Shape = { kind: 'unknown' };
const JSON_SHAPE: Shape = { kind: 'json' };
const STRING: Shape = { kind: 'string' };

class ShapeBuilder {
  private fieldCount = 0;

  constructor(
    private readonly column: string,
    private readonly limits: InferenceLimits,
  ) {}

  /** `shape` widened so it also holds `value`. */
  add(shape: Shape, value: unknown, depth: number): Shape {
    if (value === null || value === undefined) return shape;
    if (depth > this.limits.maxDepth) {
      throw new QueryTooExpensive(
        `column ${JSON.stringify(this.column)} nests records or arrays deeper than ${this.limits.maxDepth} levels; select fewer or shallower fields`,
      );
    }
    if (Array.isArray(value)) {
      if (shape.kind === 'unknown') shape = { kind: 'array', element: UNKNOWN };
      if (shape.kind !== 'array') return JSON_SHAPE;
      let element = shape.element;
      for (const item of value) element = this.add(element, item, depth + 1);
      shape.element = element;
      return shape;
    }
    if (typeof value === 'object') {
      if (shape.kind === 'unknown') shape = { kind: 'struct', fields: new Map(), lowerCaseNames: new Set() };
      if (shape.kind !== 'struct') return JSON_SHAPE;
      for (const [key, fieldValue] of Object.entries(value)) {
        let field = shape.fields.get(key);
        if (field === undefined) {
          if (shape.lowerCaseNames.has(key.toLowerCase())) return JSON_SHAPE;
          this.countField();
          shape.lowerCaseNames.add(key.toLowerCase());
          field = UNKNOWN;
        }
        shape.fields.set(key, this.add(field, fieldValue, depth + 1));
      }
      return shape;
    }
    return mergeScalar(shape, scalarShape(value));
  }

  private countField(): void {
    this.fieldCount += 1;
    if (this.fieldCount > this.limits.maxFields) {
      throw new QueryTooExpensive(`column ${JSON.stringify(this.column)} has more than ${this.limits.maxFields} distinct record keys; select fewer fields`);
    }
  }
}

function scalarShape(value: unknown): Shape {
  switch (typeof value) {
    case 'string':
      return STRING;
    case 'boolean':
      return { kind: 'bool' };
    case 'bigint':
      return { kind: 'int64' };
    case 'number':
      return { kind: Number.isSafeInteger(value) ? 'int64' : 'float64' };
    default:
      return STRING;
  }
}

function mergeScalar(shape: Shape, scalar: Shape): Shape {
  if (shape.kind === 'unknown' || shape.kind === scalar.kind) return scalar;
  if (shape.kind === 'struct' || shape.kind === 'array' || shape.kind === 'json') return JSON_SHAPE;
  const numeric = new Set(['int64', 'float64']);
  if (numeric.has(shape.kind) && numeric.has(scalar.kind)) return { kind: 'float64' };
  return STRING;
}

function sqlType(shape: Shape): SqlType {
  switch (shape.kind) {
    case 'struct':
      if (shape.fields.size === 0) return { kind: 'json' };
      return { kind: 'struct', fields: [...shape.fields].map(([name, field]) => ({ name, type: sqlType(field) })) };
    case 'array':
      return { kind: 'array', element: sqlType(shape.element) };
    default:
      return { kind: shape.kind };
  }
}

/** The one type that holds every value of `values`; `column` names it in errors. */
export function inferType(values: Iterable<unknown>, column: string, limits: InferenceLimits = defaultInferenceLimits): SqlType {
  const builder = new ShapeBuilder(column, limits);
  let shape: Shape = UNKNOWN;
  for (const value of values) shape = builder.add(shape, value, 0);
  return sqlType(shape);
}

/** The schema of a table the residual query reads: declared columns as declared, the others inferred from `rows`. */
export function inferTableSchema(
  name: string,
  declared: readonly DeclaredColumn[],
  rows: readonly Record<string, unknown>[],
  limits: InferenceLimits = defaultInferenceLimits,
): TableSchema {
  return {
    name,
    columns: declared.map((column) =>
      column.type === 'inferred' ? { name: column.name, type: inferType(valuesOf(rows, column.name), column.name, limits) } : column,
    ),
  };
}

function* valuesOf(rows: readonly Record<string, unknown>[], column: string): Iterable<unknown> {
  for (const row of rows) yield row[column];
}
