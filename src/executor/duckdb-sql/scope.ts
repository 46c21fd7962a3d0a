/**
 * Name resolution with BigQuery's rules. A FROM clause brings range variables into scope: tables
 * (CTEs, derived tables), whose columns are visible bare, and unnest values, whose struct fields are
 * visible bare too (BigQuery reads an unnested array of structs as a value table). For a path
 * `a.b.c`: a range variable `a` first, then a column `a` of a table in scope, then a field `a` of a
 * value in scope, innermost FROM clause first; what follows are struct field accesses.
 */
import { InvalidQuery, type QueryPosition } from '../../errors.ts';
import type { SqlType } from '../../sql/types.ts';
import { quoteIdentifier, quoteString } from './literals.ts';
import { typeName, type Typed } from './types.ts';

export interface ColumnShape {
  name: string;
  type: SqlType;
  /** BigQuery's `f0_` columns: printed under that name but not resolvable by it. */
  anonymous: boolean;
}

export type RangeVariable =
  | {
      kind: 'table';
      /** What the query calls it: its alias, else the table's name; undefined for an unaliased derived table. */
      name?: string;
      /** The printed relation alias. */
      relation: string;
      columns: ColumnShape[];
      /** Columns merged away by JOIN ... USING: not seen bare or by `*`, only qualified (`t.a`). */
      hidden: Set<string>;
      /** USING columns of a RIGHT or FULL JOIN (lower-cased): the bare name reads both sides' merged value. */
      merged?: Map<string, Typed>;
    }
  | {
      kind: 'value';
      name?: string;
      relation: string;
      column: string;
      type: SqlType;
    };

export class Scope {
  readonly ranges: RangeVariable[] = [];
  constructor(readonly parent?: Scope) {}

  add(range: RangeVariable, position?: QueryPosition): void {
    if (range.name !== undefined && this.ranges.some((r) => r.name !== undefined && sameName(r.name, range.name!))) {
      throw new InvalidQuery(`duplicate table alias ${range.name} in the same FROM clause`, position);
    }
    this.ranges.push(range);
  }

  /** Resolves an identifier chain to a value. */
  resolve(path: string[], position?: QueryPosition): Typed {
    const [head, ...rest] = path as [string, ...string[]];
    for (let scope: Scope | undefined = this; scope; scope = scope.parent) {
      const found = scope.resolveHead(head, rest, position);
      if (found) return accessFields(found.value, found.rest, position);
    }
    throw new InvalidQuery(`Unrecognized name: ${head}`, position);
  }

  private resolveHead(head: string, rest: string[], position?: QueryPosition): { value: Typed; rest: string[] } | undefined {
    const range = this.ranges.find((r) => r.name !== undefined && sameName(r.name, head));
    if (range?.kind === 'value') return { value: valueOf(range), rest };
    if (range?.kind === 'table') {
      const [columnName, ...fields] = rest;
      if (columnName === undefined) throw new InvalidQuery(`${head} is a table; name one of its columns (${head}.column)`, position);
      const matches = itemsNamed(range.columns, columnName).filter((c) => !c.anonymous);
      if (matches.length > 1) throw new InvalidQuery(`Name ${columnName} is ambiguous inside ${head}: it has two columns of that name`, position);
      if (!matches[0]) throw new InvalidQuery(`Name ${columnName} not found inside ${head}`, position);
      return { value: columnOf(range, matches[0]), rest: fields };
    }
    const columns = this.ranges.flatMap((r) => (r.kind === 'table' ? visibleColumnsNamed(r, head).map((c) => bareColumnOf(r, c)) : []));
    if (columns.length > 1) throw new InvalidQuery(`Column name ${head} is ambiguous: more than one table in FROM has it; qualify it`, position);
    if (columns.length === 1) return { value: columns[0]!, rest };
    const fields = this.ranges.flatMap((r) => (r.kind === 'value' && r.type.kind === 'struct' && itemsNamed(r.type.fields, head).length > 0 ? [r] : []));
    if (fields.length > 1) throw new InvalidQuery(`Name ${head} is ambiguous: more than one unnested record has a field ${head}; qualify it`, position);
    if (fields.length === 1) return { value: valueOf(fields[0]!), rest: [head, ...rest] };
    // a bare name no table or record has, while an unnested record is in scope: a field no scanned event had
    if (this.ranges.some((r) => r.kind === 'value' && (r.type.kind === 'struct' || r.type.kind === 'unknown'))) return { value: MISSING, rest: [] };
    return undefined;
  }

  /** A range variable by name, innermost first (for `t.*`). */
  findRange(name: string): RangeVariable | undefined {
    for (let scope: Scope | undefined = this; scope; scope = scope.parent) {
      const range = scope.ranges.find((r) => r.name !== undefined && sameName(r.name, name));
      if (range) return range;
    }
    return undefined;
  }
}

export function sameName(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/** Lists of named things (columns, fields) by lower-cased name, built once per list (no list changes once it is read by name). */
const BY_NAME = new WeakMap<readonly { name: string }[], Map<string, { name: string }[]>>();

/** The items of `items` named `name` (as sameName compares): a look-up, so resolving names over wide tables and select lists stays linear. */
export function itemsNamed<T extends { name: string }>(items: readonly T[], name: string): T[] {
  let index = BY_NAME.get(items);
  if (!index) {
    index = new Map();
    for (const item of items) {
      const key = item.name.toLowerCase();
      const same = index.get(key);
      if (same) same.push(item);
      else index.set(key, [item]);
    }
    BY_NAME.set(items, index);
  }
  return (index.get(name.toLowerCase()) ?? []) as T[];
}

function visibleColumnsNamed(range: Extract<RangeVariable, { kind: 'table' }>, name: string): ColumnShape[] {
  return itemsNamed(range.columns, name).filter((c) => !c.anonymous && !range.hidden.has(c.name.toLowerCase()));
}

/** The columns `t.*` shows: a USING join hides none of them from their own table's name. */
export function namedColumns(range: Extract<RangeVariable, { kind: 'table' }>): ColumnShape[] {
  return range.columns.filter((c) => !c.anonymous);
}

export function visibleColumns(range: Extract<RangeVariable, { kind: 'table' }>): ColumnShape[] {
  return range.columns.filter((c) => !c.anonymous && !range.hidden.has(c.name.toLowerCase()));
}

export function columnOf(range: Extract<RangeVariable, { kind: 'table' }>, column: ColumnShape): Typed {
  return { sql: `${quoteIdentifier(range.relation)}.${quoteIdentifier(column.name)}`, type: column.type };
}

/** A column named without its table: a USING column of a RIGHT or FULL JOIN is both sides' merged value. */
export function bareColumnOf(range: Extract<RangeVariable, { kind: 'table' }>, column: ColumnShape): Typed {
  return range.merged?.get(column.name.toLowerCase()) ?? columnOf(range, column);
}

export function valueOf(range: Extract<RangeVariable, { kind: 'value' }>): Typed {
  return { sql: `${quoteIdentifier(range.relation)}.${quoteIdentifier(range.column)}`, type: range.type };
}

/**
 * `value.field`. The store is schemaless: a record type is what the scanned events showed, so a
 * field none of them had (or any field of a value no event had at all) reads as NULL, as it would
 * from a BigQuery table whose schema has the field. Field access on anything else is an error.
 */
export function accessField(value: Typed, name: string, position?: QueryPosition): Typed {
  if (value.type.kind === 'unknown') return MISSING;
  if (value.type.kind !== 'struct') {
    throw new InvalidQuery(`Cannot access field ${name} on a value with type ${typeName(value.type)}`, position);
  }
  const [field] = itemsNamed(value.type.fields, name);
  if (!field) return MISSING;
  return { sql: `struct_extract(${value.sql}, ${quoteString(field.name)})`, type: field.type };
}

/** A value no scanned event holds. */
const MISSING: Typed = { sql: 'NULL', type: { kind: 'unknown' } };

function accessFields(value: Typed, fields: string[], position?: QueryPosition): Typed {
  return fields.reduce((current, name) => accessField(current, name, position), value);
}
