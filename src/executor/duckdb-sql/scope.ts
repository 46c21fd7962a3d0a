/**
 * The printer's side of name resolution: each range variable the binder (src/sql/bind.ts) bound a
 * name to, with its printed relation alias and the types of the rows the scans returned. A binding
 * becomes a printed column reference; its struct field accesses are typed here.
 */
import { InvalidQuery, type QueryPosition } from '../../errors.ts';
import type { Binding, ColumnBinding } from '../../sql/bindings.ts';
import type { Relation } from '../../sql/syntax.ts';
import type { SqlType } from '../../sql/types.ts';
import { quoteIdentifier, quoteString } from './literals.ts';
import { commonType, typeName, type Typed } from './types.ts';

export interface ColumnShape {
  name: string;
  type: SqlType;
  /** BigQuery's `f0_` columns: printed under that name but not resolvable by it. */
  anonymous: boolean;
}

export type RangeVariable =
  | {
      kind: 'table';
      /** The FROM element it was made from (bindings name it). */
      source: Relation;
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
      source: Relation;
      /** The WITH OFFSET number of the unnest, not its element. */
      offset: boolean;
      name?: string;
      relation: string;
      column: string;
      type: SqlType;
    };

export class Scope {
  readonly ranges: RangeVariable[] = [];
  constructor(readonly parent?: Scope) {}

  add(range: RangeVariable): void {
    this.ranges.push(range);
  }

  /** The value a binding names, typed by the scanned rows. */
  value(binding: Binding, position?: QueryPosition): Typed {
    switch (binding.kind) {
      case 'column': {
        const range = this.range(binding.range, false);
        if (range.kind !== 'table') throw new Error('a column binding names a table range');
        // the binder decided which columns the name may reach (a qualified one reaches a column USING merged away)
        const column = itemsNamed(range.columns, binding.column).find((candidate) => !candidate.anonymous);
        if (!column) throw new InvalidQuery(`Unrecognized name: ${binding.column}`, position);
        const own = columnOf(range, column);
        return accessFields(binding.merged ? this.mergedValue(own, binding.merged, binding.column, position) : own, binding.fields, position);
      }
      case 'element': {
        const range = this.range(binding.range, binding.offset);
        if (range.kind !== 'value') throw new Error('an element binding names an unnest');
        return accessFields(valueOf(range), binding.fields, position);
      }
      case 'row':
        return rowOf(this.tableOf(binding));
      case 'missing':
        return MISSING;
      case 'alias':
        throw new Error('a select alias is read from the select list');
    }
  }

  /** The table a whole-row binding names. */
  tableOf(binding: Extract<Binding, { kind: 'row' }>): Extract<RangeVariable, { kind: 'table' }> {
    const range = this.range(binding.range, false);
    if (range.kind !== 'table') throw new Error('a row binding names a table range');
    return range;
  }

  /** JOIN ... USING: the right side's column is no longer one of its table's own in `*`. */
  hide(binding: ColumnBinding): void {
    const range = this.range(binding.range, false);
    if (range.kind === 'table') range.hidden.add(binding.column.toLowerCase());
  }

  /** After a RIGHT or FULL JOIN ... USING, `*` shows the merged value in the left column's place. */
  merge(left: ColumnBinding, right: ColumnBinding, position?: QueryPosition): void {
    const range = this.range(left.range, false);
    if (range.kind !== 'table') return;
    range.merged ??= new Map();
    range.merged.set(left.column.toLowerCase(), this.value({ ...left, merged: [...(left.merged ?? []), right] }, position));
  }

  /** A bare USING column of RIGHT or FULL joins: the first side that has a row (BigQuery's merged column). */
  private mergedValue(own: Typed, others: readonly ColumnBinding[], name: string, position?: QueryPosition): Typed {
    const values = [own, ...others.map((other) => this.value(other, position))];
    const type = values.slice(1).reduce<SqlType | undefined>((common, value) => common && commonType(common, value.type), own.type);
    if (!type) throw new InvalidQuery(`column ${name} in USING has incompatible types: ${values.map((value) => typeName(value.type)).join(', ')}`, position);
    return { sql: `COALESCE(${values.map((value) => value.sql).join(', ')})`, type };
  }

  /** The range made from `source`, here or in an enclosing scope (a correlated name). */
  private range(source: Relation, offset: boolean): RangeVariable {
    for (let scope: Scope | undefined = this; scope; scope = scope.parent) {
      const range = scope.ranges.find((candidate) => candidate.source === source && (candidate.kind === 'table' || candidate.offset === offset));
      if (range) return range;
    }
    throw new Error('a binding names a range outside the query');
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

/** A table's whole row as a STRUCT of its columns (BigQuery's `select t from x as t`). */
function rowOf(range: Extract<RangeVariable, { kind: 'table' }>): Typed {
  const columns = visibleColumns(range);
  if (columns.length === 0) return { sql: 'NULL', type: { kind: 'struct', fields: [] } };
  const fields = columns.map((column) => `${quoteIdentifier(column.name)} := ${columnOf(range, column).sql}`);
  return { sql: `struct_pack(${fields.join(', ')})`, type: { kind: 'struct', fields: columns.map((column) => ({ name: column.name, type: column.type })) } };
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
