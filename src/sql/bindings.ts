/**
 * What every name of a validated query means (src/sql/bind.ts decides it once): the planner reads
 * these to push predicates down, the printer to print the residual query. Both see the same tree,
 * so they key bindings by node identity: a range by its FROM relation, a name by its identifier.
 */
import type { Expr, Join, Relation, SelectItem } from './syntax.ts';
import type { SqlType } from './types.ts';

/** A FROM element whose rows have columns: a table (endpoint scan, own CTE) or a derived table. */
export type TableRelation = Extract<Relation, { kind: 'table' | 'derived' }>;
export type UnnestRelation = Extract<Relation, { kind: 'unnest' }>;

/**
 * What a value is known to hold before any row is read: a scalar, an array, a record with these
 * fields, or `open` when nothing can be known until the rows are (a computed value, a field the
 * store's catalog does not list).
 */
export type Shape = { kind: 'scalar' } | { kind: 'open' } | { kind: 'array'; element: Shape } | { kind: 'record'; fields: NamedShape[] };

export interface NamedShape {
  name: string;
  shape: Shape;
}

export type Binding =
  /**
   * Column `column` (as declared) of a table range, then struct fields `fields` (as written).
   * `merged`: a bare USING column of RIGHT or FULL joins, whose value is the first of this column
   * and those others that has a row (BigQuery's merged column); a qualified name never has it.
   */
  | { kind: 'column'; range: TableRelation; column: string; fields: string[]; merged?: ColumnBinding[] }
  /** The element of an unnest range (or its WITH OFFSET number), then struct fields `fields`. */
  | { kind: 'element'; range: UnnestRelation; offset: boolean; fields: string[] }
  /** A table range used as a value: its whole row as a STRUCT (BigQuery's `select t from x as t`). */
  | { kind: 'row'; range: TableRelation }
  /** A column of the SELECT's own list (GROUP BY, HAVING, QUALIFY, ORDER BY may name those). */
  | { kind: 'alias'; name: string }
  /** A bare name that only a record in scope could hold, and the store says none does: NULL. */
  | { kind: 'missing' };

export type ColumnBinding = Extract<Binding, { kind: 'column' }>;

export interface Bindings {
  /** Each identifier and each qualified wildcard (`t.*`, `m.*`) of the query, by node. */
  readonly names: ReadonlyMap<Expr | SelectItem, Binding>;
  /** Each JOIN ... USING: per name, the left side's column and the right side's (which the bare name no longer reaches). */
  readonly using: ReadonlyMap<Join, readonly { left: ColumnBinding; right: ColumnBinding }[]>;
}

/** The tables a query may read and what their columns are known to hold. */
export interface BindEnvironment {
  tables: readonly { name: string; columns: readonly NamedShape[] }[];
}

/** What a value of a type holds (for tables whose types are known). */
export function shapeOfType(type: SqlType): Shape {
  switch (type.kind) {
    case 'unknown':
      return { kind: 'open' };
    case 'array':
      return { kind: 'array', element: shapeOfType(type.element) };
    case 'struct':
      return { kind: 'record', fields: type.fields.map((field) => ({ name: field.name, shape: shapeOfType(field.type) })) };
    default:
      return { kind: 'scalar' };
  }
}

/** The environment of tables whose column types are known (the printer's tables, tests). */
export function environmentOfTables(tables: readonly { name: string; columns: readonly { name: string; type: SqlType }[] }[]): BindEnvironment {
  return {
    tables: tables.map((table) => ({ name: table.name, columns: table.columns.map((column) => ({ name: column.name, shape: shapeOfType(column.type) })) })),
  };
}

/** BigQuery's implicit name of a select item or struct field: the last identifier of a path. */
export function implicitName(expr: Expr): string | undefined {
  if (expr.kind === 'identifier') return expr.path[expr.path.length - 1];
  if (expr.kind === 'field') return expr.field;
  return undefined;
}
