/**
 * Name resolution with BigQuery's rules, once for the whole validated query. A FROM clause brings
 * range variables into scope: tables (endpoint scans, the query's own CTEs, derived tables), whose
 * columns are visible bare, and unnest values, whose record fields are visible bare too (BigQuery
 * reads an unnested array of structs as a value table). For a path `a.b.c`: a range variable `a`
 * first, then a column `a` of a table in scope, then a field `a` of an unnested record, innermost
 * FROM clause first; what follows are struct field accesses. GROUP BY, HAVING, QUALIFY and ORDER BY
 * see the select list's aliases first. Which record holds a bare field is decided from what the
 * tables are known to hold before any row is read (the store's field catalog), never from the rows.
 */
import { InvalidQuery, UnknownTable, type QueryPosition } from '../errors.ts';
import {
  implicitName,
  type BindEnvironment,
  type Binding,
  type Bindings,
  type ColumnBinding,
  type NamedShape,
  type Shape,
  type TableRelation,
  type UnnestRelation,
} from './bindings.ts';
import type { Expr, FromItem, Join, OrderItem, Query, Relation, Select, SelectItem, SetExpression } from './syntax.ts';
import { childExpressions, subqueryOf } from './walk.ts';

interface Column extends NamedShape {
  /** BigQuery's `f0_` columns: not resolvable by name. */
  anonymous: boolean;
  /** Two select columns with one origin are one value (naming either is not ambiguous). */
  origin: string;
}

/** What a query yields: its columns, `open` when more may exist than can be known before the rows (`m.*` of an open value). */
interface Output {
  columns: Column[];
  open: boolean;
}

type Range =
  | {
      kind: 'table';
      relation: TableRelation;
      name?: string;
      columns: Column[];
      open: boolean;
      hidden: Set<string>;
      /** USING columns of RIGHT or FULL joins (lower-cased): the other sides their bare name reads too. */
      merged?: Map<string, ColumnBinding[]>;
    }
  | { kind: 'value'; relation: UnnestRelation; name?: string; offset: boolean; element: Shape };

interface Frame {
  ranges: Range[];
  parent?: Frame;
}

interface CteFrame {
  name: string;
  output: Output;
  parent?: CteFrame;
}

const OPEN: Shape = { kind: 'open' };
const SCALAR: Shape = { kind: 'scalar' };

/** Functions whose result is an array of scalars, whatever their arguments. */
const SCALAR_ARRAY_FUNCTIONS = new Set([
  'split',
  'generate_array',
  'generate_date_array',
  'generate_timestamp_array',
  'regexp_extract_all',
  'json_extract_array',
  'json_query_array',
  'json_extract_string_array',
  'json_value_array',
]);
/** Functions whose result holds what their first argument holds. */
const FIRST_ARGUMENT_FUNCTIONS = new Set([
  'array_concat',
  'array_reverse',
  'coalesce',
  'ifnull',
  'nullif',
  'any_value',
  'min',
  'max',
  'first_value',
  'last_value',
  'lag',
  'lead',
  'nth_value',
]);

/** Every name of `query`, bound; throws InvalidQuery or UnknownTable for a name that means nothing or more than one thing. */
export function bind(query: Query, environment: BindEnvironment): Bindings {
  const binder = new Binder(environment);
  binder.query(query, undefined, undefined);
  return { names: binder.names, using: binder.usingPairs };
}

class Binder {
  readonly names = new Map<Expr | SelectItem, Binding>();
  readonly usingPairs = new Map<Join, { left: ColumnBinding; right: ColumnBinding }[]>();
  /** Each FROM element's range (an unnest's element, not its offset), for the shapes of the names bound to it. */
  private readonly ranges = new Map<Relation, Range>();
  private readonly outputs = new Map<Query, Output>();
  private readonly rangeIds = new Map<Relation, number>();
  private uniqueOrigins = 0;

  constructor(private readonly environment: BindEnvironment) {}

  query(query: Query, ctes: CteFrame | undefined, outer: Frame | undefined): Output {
    let frame = ctes;
    for (const cte of query.with) {
      if (query.with.filter((c) => sameName(c.name, cte.name)).length > 1) throw new InvalidQuery(`duplicate WITH name ${cte.name}`, cte.position);
      // a CTE sees the CTEs before it, not the enclosing query's FROM clause
      frame = { name: cte.name, output: this.query(cte.query, frame, undefined), parent: frame };
    }
    const output = query.body.kind === 'select' ? this.select(query.body, frame, outer, query.orderBy) : this.setExpression(query.body, frame, outer);
    // ORDER BY after a set operation names output columns (or their positions), nothing else
    if (query.body.kind !== 'select') {
      for (const { expr } of query.orderBy) {
        const column = expr.kind === 'identifier' && expr.path.length === 1 ? namedColumns(output.columns, expr.path[0]!)[0] : undefined;
        if (column) this.names.set(expr, { kind: 'alias', name: column.name });
      }
    }
    this.outputs.set(query, output);
    return output;
  }

  private setExpression(body: SetExpression, ctes: CteFrame | undefined, outer: Frame | undefined): Output {
    if (body.kind === 'select') return this.select(body, ctes, outer, []);
    if (body.kind === 'nested_query') return this.query(body.query, ctes, outer);
    const left = this.setExpression(body.left, ctes, outer);
    const right = this.setExpression(body.right, ctes, outer);
    return { columns: left.columns, open: left.open || right.open };
  }

  private select(select: Select, ctes: CteFrame | undefined, outer: Frame | undefined, orderBy: OrderItem[]): Output {
    const frame: Frame = { ranges: [], parent: outer };
    for (const item of select.from) this.fromItem(item, frame, ctes, outer);
    if (select.where) this.expr(select.where, frame, ctes);
    const output = this.selectList(select.items, frame, ctes);
    for (const expr of select.groupBy) this.key(expr, frame, ctes, output, undefined);
    if (select.having) this.expr(select.having, frame, ctes, output);
    if (select.qualify) this.expr(select.qualify, frame, ctes, output);
    for (const item of orderBy) this.key(item.expr, frame, ctes, output, output);
    return output;
  }

  /**
   * A GROUP BY or ORDER BY item: a select alias when it is one name that the select list has (two
   * columns of that name are ambiguous unless they are one value); otherwise an expression, seeing
   * the aliases inside where the clause does (ORDER BY).
   */
  private key(expr: Expr, frame: Frame, ctes: CteFrame | undefined, output: Output, aliases: Output | undefined): void {
    if (expr.kind === 'identifier' && expr.path.length === 1) {
      const matches = namedColumns(output.columns, expr.path[0]!);
      if (matches.length > 1 && new Set(matches.map((column) => column.origin)).size > 1) {
        throw new InvalidQuery(`${expr.path[0]} is ambiguous: the select list has more than one column of that name`, expr.position);
      }
      if (matches[0]) {
        this.names.set(expr, { kind: 'alias', name: matches[0].name });
        return;
      }
    }
    this.expr(expr, frame, ctes, aliases);
  }

  /** Binds every identifier of `expr`, left to right; subqueries see `frame` as their outer scope, not the aliases. */
  private expr(expr: Expr, frame: Frame, ctes: CteFrame | undefined, aliases?: Output): void {
    const pending: (Expr | Query)[] = [expr];
    while (pending.length > 0) {
      const next = pending.pop()!;
      if (next.kind === 'query') {
        this.query(next, ctes, frame);
        continue;
      }
      if (next.kind === 'identifier') this.identifier(next, frame, aliases);
      const query = subqueryOf(next);
      if (query) pending.push(query);
      const children = childExpressions(next);
      for (let index = children.length - 1; index >= 0; index--) pending.push(children[index]!);
    }
  }

  private identifier(expr: Extract<Expr, { kind: 'identifier' }>, frame: Frame, aliases: Output | undefined): void {
    if (aliases && expr.path.length === 1) {
      const matches = namedColumns(aliases.columns, expr.path[0]!);
      if (matches.length > 1) throw new InvalidQuery(`${expr.path[0]} is ambiguous: the select list has more than one column of that name`, expr.position);
      if (matches[0]) {
        this.names.set(expr, { kind: 'alias', name: matches[0].name });
        return;
      }
    }
    this.names.set(expr, this.resolve(expr.path, frame, expr.position));
  }

  /** A scope that surely has the name wins, innermost first; only then one whose values may have it (see `possibly`). */
  private resolve(path: readonly string[], frame: Frame, position?: QueryPosition): Binding {
    const [head, ...rest] = path as [string, ...string[]];
    for (let scope: Frame | undefined = frame; scope; scope = scope.parent) {
      const found = surely(scope, head, rest, position);
      if (found) return found;
    }
    for (let scope: Frame | undefined = frame; scope; scope = scope.parent) {
      const found = possibly(scope, head, rest, position);
      if (found) return found;
    }
    throw new InvalidQuery(`Unrecognized name: ${head}`, position);
  }

  private fromItem(item: FromItem, frame: Frame, ctes: CteFrame | undefined, outer: Frame | undefined): void {
    this.relation(item.relation, frame, ctes, outer);
    for (const join of item.joins) {
      const before = frame.ranges.length;
      this.relation(join.relation, frame, ctes, outer);
      if (join.on) this.expr(join.on, frame, ctes);
      if (join.using && join.kind !== 'cross') this.using(join, frame, before);
    }
  }

  /** JOIN ... USING (a): the bare name then means the left side's `a`; the right side's is reached qualified only. */
  private using(join: Join, frame: Frame, rightStart: number): void {
    const right = frame.ranges[rightStart];
    if (frame.ranges.length !== rightStart + 1 || right?.kind !== 'table') throw new InvalidQuery('JOIN ... USING needs a table on its right');
    const pairs = join.using!.map((name) => {
      const leftSide = frame.ranges
        .slice(0, rightStart)
        .flatMap((range) => (range.kind === 'table' ? visibleColumnsNamed(range, name).map((column) => ({ range, column })) : []));
      const rightColumn = visibleColumnsNamed(right, name)[0];
      if (leftSide.length !== 1 || !rightColumn) throw new InvalidQuery(`column ${name} in USING must exist exactly once on each side of the join`);
      right.hidden.add(rightColumn.name.toLowerCase());
      const { range: leftRange, column: leftColumn } = leftSide[0]!;
      const pair = { left: bareColumn(leftRange, leftColumn.name, []), right: columnBinding(right.relation, rightColumn.name) };
      if (join.kind === 'right' || join.kind === 'full') {
        leftRange.merged ??= new Map();
        leftRange.merged.set(leftColumn.name.toLowerCase(), [...(pair.left.merged ?? []), pair.right]);
      }
      return pair;
    });
    this.usingPairs.set(join, pairs);
  }

  private relation(relation: Relation, frame: Frame, ctes: CteFrame | undefined, outer: Frame | undefined): void {
    switch (relation.kind) {
      case 'table': {
        const { columns, open } = this.table(relation.name.join('.'), ctes, relation.position);
        this.add(
          frame,
          { kind: 'table', relation, name: relation.alias ?? relation.name[relation.name.length - 1]!, columns, open, hidden: new Set() },
          relation.position,
        );
        return;
      }
      case 'derived': {
        // a FROM subquery cannot read the FROM items beside it, only the enclosing query's
        const { columns, open } = this.query(relation.query, ctes, outer);
        this.add(
          frame,
          { kind: 'table', relation, ...(relation.alias === undefined ? {} : { name: relation.alias }), columns, open, hidden: new Set() },
          relation.position,
        );
        return;
      }
      case 'nested_join':
        return this.fromItem(relation.item, frame, ctes, outer);
      case 'unnest': {
        this.expr(relation.array, frame, ctes);
        const array = this.shapeOf(relation.array);
        const elementShape = array.kind === 'array' ? array.element : array.kind === 'scalar' ? SCALAR : OPEN;
        this.add(
          frame,
          { kind: 'value', relation, ...(relation.alias === undefined ? {} : { name: relation.alias }), offset: false, element: elementShape },
          relation.position,
        );
        const offsetName = relation.offsetAlias ?? (relation.withOffset ? 'offset' : undefined);
        if (offsetName !== undefined) this.add(frame, { kind: 'value', relation, name: offsetName, offset: true, element: SCALAR }, relation.position);
        return;
      }
    }
  }

  private add(frame: Frame, range: Range, position?: QueryPosition): void {
    if (range.name !== undefined && frame.ranges.some((other) => other.name !== undefined && sameName(other.name, range.name!))) {
      throw new InvalidQuery(`duplicate table alias ${range.name} in the same FROM clause`, position);
    }
    frame.ranges.push(range);
    if (range.kind === 'table' || !range.offset) this.ranges.set(range.relation, range);
  }

  private table(name: string, ctes: CteFrame | undefined, position?: QueryPosition): Output {
    for (let frame = ctes; frame; frame = frame.parent) if (sameName(frame.name, name)) return frame.output;
    const tables = this.environment.tables;
    const table = tables.find((candidate) => candidate.name === name) ?? tables.find((candidate) => sameName(candidate.name, name));
    const cteNames: string[] = [];
    for (let frame = ctes; frame; frame = frame.parent) cteNames.push(frame.name);
    if (!table) throw new UnknownTable(name, [...tables.map((candidate) => candidate.name), ...cteNames], position);
    return { columns: table.columns.map((column) => ({ ...column, anonymous: false, origin: `${table.name}.${column.name}` })), open: false };
  }

  private selectList(items: SelectItem[], frame: Frame, ctes: CteFrame | undefined): Output {
    const columns: Column[] = [];
    let open = false;
    let anonymous = 0;
    for (const item of items) {
      if (item.kind === 'wildcard') {
        const expanded = this.wildcard(item, frame);
        const except = new Set(item.except.map((name) => name.toLowerCase()));
        columns.push(...expanded.columns.filter((column) => !except.has(column.name.toLowerCase())));
        open ||= expanded.open;
        continue;
      }
      this.expr(item.expr, frame, ctes);
      const name = item.alias ?? implicitName(item.expr);
      columns.push({ name: name ?? `f${anonymous++}_`, anonymous: name === undefined, shape: this.shapeOf(item.expr), origin: this.originOf(item.expr) });
    }
    return { columns, open };
  }

  /** `*`, `t.*` (a table's columns) or `v.*` (a record's fields). */
  private wildcard(item: Extract<SelectItem, { kind: 'wildcard' }>, frame: Frame): Output {
    if (item.qualifier) {
      const range = item.qualifier.length === 1 ? findRange(frame, item.qualifier[0]!) : undefined;
      if (range?.kind === 'table') {
        this.names.set(item, { kind: 'row', range: range.relation });
        return { columns: this.tableColumns(range), open: range.open };
      }
      const binding = this.resolve(item.qualifier, frame, item.position);
      this.names.set(item, binding);
      return this.recordColumns(this.shapeOfBinding(binding), this.originOfBinding(binding));
    }
    const columns: Column[] = [];
    let open = false;
    for (const range of frame.ranges) {
      if (range.kind === 'table') {
        columns.push(...this.tableColumns(range));
        open ||= range.open;
      } else if (range.element.kind === 'record' || range.element.kind === 'open') {
        const fields = this.recordColumns(range.element, this.originOfBinding(element(range, [])));
        columns.push(...fields.columns);
        open ||= fields.open;
      } else if (range.name !== undefined) {
        columns.push({ name: range.name, shape: range.element, anonymous: false, origin: this.originOfBinding(element(range, [])) });
      }
    }
    return { columns, open };
  }

  private tableColumns(range: Extract<Range, { kind: 'table' }>): Column[] {
    return visibleColumns(range).map((column) => ({
      ...column,
      origin: this.originOfBinding({ kind: 'column', range: range.relation, column: column.name, fields: [] }),
    }));
  }

  private recordColumns(shape: Shape, origin: string): Output {
    if (shape.kind !== 'record') return { columns: [], open: true };
    return { columns: shape.fields.map((field) => ({ ...field, anonymous: false, origin: `${origin}.${field.name.toLowerCase()}` })), open: false };
  }

  /** What a bound expression is known to hold. */
  private shapeOf(expr: Expr): Shape {
    switch (expr.kind) {
      case 'identifier':
        return this.shapeOfBinding(this.names.get(expr)!);
      case 'field':
        return fieldShape(this.shapeOf(expr.expr), expr.field);
      case 'subscript': {
        const array = this.shapeOf(expr.expr);
        return array.kind === 'array' ? array.element : OPEN;
      }
      case 'struct':
        return {
          kind: 'record',
          fields: expr.fields.map((field, i) => ({ name: field.name ?? implicitName(field.expr) ?? `_field_${i + 1}`, shape: this.shapeOf(field.expr) })),
        };
      case 'array':
        return { kind: 'array', element: expr.elements[0] ? this.shapeOf(expr.elements[0]) : OPEN };
      case 'array_subquery':
        return { kind: 'array', element: this.outputs.get(expr.query)?.columns[0]?.shape ?? OPEN };
      case 'subquery':
        return this.outputs.get(expr.query)?.columns[0]?.shape ?? OPEN;
      case 'case':
        return expr.whens[0] ? this.shapeOf(expr.whens[0].then) : OPEN;
      case 'call':
        if (expr.name === 'array_agg') return { kind: 'array', element: expr.args[0] ? this.shapeOf(expr.args[0]) : OPEN };
        if (SCALAR_ARRAY_FUNCTIONS.has(expr.name)) return { kind: 'array', element: SCALAR };
        if (expr.name === 'if') return expr.args[1] ? this.shapeOf(expr.args[1]) : OPEN;
        if (FIRST_ARGUMENT_FUNCTIONS.has(expr.name)) return expr.args[0] ? this.shapeOf(expr.args[0]) : OPEN;
        return OPEN;
      case 'null':
        return OPEN;
      default:
        return SCALAR;
    }
  }

  private shapeOfBinding(binding: Binding): Shape {
    switch (binding.kind) {
      case 'column': {
        const range = this.ranges.get(binding.range) as Extract<Range, { kind: 'table' }>;
        const column = namedShapes(range.columns, binding.column)[0];
        return binding.fields.reduce(fieldShape, column?.shape ?? OPEN);
      }
      case 'element': {
        if (binding.offset) return SCALAR;
        const range = this.ranges.get(binding.range) as Extract<Range, { kind: 'value' }>;
        return binding.fields.reduce(fieldShape, range.element);
      }
      case 'row': {
        const range = this.ranges.get(binding.range) as Extract<Range, { kind: 'table' }>;
        return range.open ? OPEN : { kind: 'record', fields: visibleColumns(range) };
      }
      default:
        return OPEN;
    }
  }

  /** Select columns that read the same thing share an origin; any other expression is its own. */
  private originOf(expr: Expr): string {
    const binding = expr.kind === 'identifier' ? this.names.get(expr) : undefined;
    return binding ? this.originOfBinding(binding) : `item ${this.uniqueOrigins++}`;
  }

  private originOfBinding(binding: Binding): string {
    switch (binding.kind) {
      case 'column':
        return [this.rangeId(binding.range), binding.column, ...binding.fields].join('.').toLowerCase();
      case 'element':
        return [this.rangeId(binding.range), binding.offset ? '#offset' : '#value', ...binding.fields].join('.').toLowerCase();
      case 'row':
        return `${this.rangeId(binding.range)}.#row`;
      default:
        return `item ${this.uniqueOrigins++}`;
    }
  }

  private rangeId(relation: Relation): number {
    let id = this.rangeIds.get(relation);
    if (id === undefined) this.rangeIds.set(relation, (id = this.rangeIds.size));
    return id;
  }
}

/** A range variable, a column of a table, or a field of a record the store knows to have it. */
function surely(frame: Frame, head: string, rest: string[], position?: QueryPosition): Binding | undefined {
  const range = frame.ranges.find((candidate) => candidate.name !== undefined && sameName(candidate.name, head));
  if (range?.kind === 'value') return element(range, rest);
  if (range?.kind === 'table') {
    if (rest.length === 0) return { kind: 'row', range: range.relation };
    const [columnName, ...fields] = rest as [string, ...string[]];
    // qualified, a column USING merged away is still the right side's own
    const matches = namedColumns(range.columns, columnName);
    if (matches.length > 1) throw new InvalidQuery(`Name ${columnName} is ambiguous inside ${head}: it has two columns of that name`, position);
    if (!matches[0] && !range.open) throw new InvalidQuery(`Name ${columnName} not found inside ${head}`, position);
    return { kind: 'column', range: range.relation, column: matches[0]?.name ?? columnName, fields };
  }
  const columns = frame.ranges.flatMap((candidate) =>
    candidate.kind === 'table' ? visibleColumnsNamed(candidate, head).map((column) => ({ range: candidate, column })) : [],
  );
  if (columns.length > 1) throw new InvalidQuery(`Column name ${head} is ambiguous: more than one table in FROM has it; qualify it`, position);
  if (columns[0]) return bareColumn(columns[0].range, columns[0].column.name, rest);
  const records = frame.ranges.filter(
    (candidate): candidate is Extract<Range, { kind: 'value' }> =>
      candidate.kind === 'value' && !candidate.offset && candidate.element.kind === 'record' && namedShapes(candidate.element.fields, head).length > 0,
  );
  if (records.length > 1) throw new InvalidQuery(`Name ${head} is ambiguous: more than one unnested record has a field ${head}; qualify it`, position);
  return records[0] && element(records[0], [head, ...rest]);
}

/**
 * A name no scope surely has: the field of the one value of a scope that may have it (a record the
 * store does not list it in, read as NULL where no row has it; or a value or table known only once
 * rows are read). Of several, none known to have it, the name is missing (NULL).
 */
function possibly(frame: Frame, head: string, rest: string[], position?: QueryPosition): Binding | undefined {
  const possible = frame.ranges.filter((candidate) =>
    candidate.kind === 'value' ? !candidate.offset && (candidate.element.kind === 'record' || candidate.element.kind === 'open') : candidate.open,
  );
  if (possible.length === 0) return undefined;
  if (possible.length === 1) {
    const only = possible[0]!;
    return only.kind === 'value' ? element(only, [head, ...rest]) : { kind: 'column', range: only.relation, column: head, fields: rest };
  }
  if (possible.every((candidate) => candidate.kind === 'value' && candidate.element.kind === 'record')) return { kind: 'missing' };
  throw new InvalidQuery(`Name ${head} is ambiguous: more than one unnested value may have a field ${head}; qualify it`, position);
}

function columnBinding(range: TableRelation, column: string): ColumnBinding {
  return { kind: 'column', range, column, fields: [] };
}

/** A column named without its table: after RIGHT or FULL JOIN ... USING, the merged value of both sides. */
function bareColumn(range: Extract<Range, { kind: 'table' }>, column: string, fields: string[]): ColumnBinding {
  const merged = range.merged?.get(column.toLowerCase());
  return { kind: 'column', range: range.relation, column, fields, ...(merged ? { merged } : {}) };
}

function element(range: Extract<Range, { kind: 'value' }>, fields: string[]): Binding {
  return { kind: 'element', range: range.relation, offset: range.offset, fields };
}

function findRange(frame: Frame, name: string): Range | undefined {
  for (let scope: Frame | undefined = frame; scope; scope = scope.parent) {
    const range = scope.ranges.find((candidate) => candidate.name !== undefined && sameName(candidate.name, name));
    if (range) return range;
  }
  return undefined;
}

function fieldShape(shape: Shape, name: string): Shape {
  return shape.kind === 'record' ? (namedShapes(shape.fields, name)[0]?.shape ?? OPEN) : OPEN;
}

function sameName(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

function namedShapes<T extends NamedShape>(items: readonly T[], name: string): T[] {
  return items.filter((item) => sameName(item.name, name));
}

function namedColumns(columns: readonly Column[], name: string): Column[] {
  return namedShapes(columns, name).filter((column) => !column.anonymous);
}

function visibleColumns(range: Extract<Range, { kind: 'table' }>): Column[] {
  return range.columns.filter((column) => !column.anonymous && !range.hidden.has(column.name.toLowerCase()));
}

function visibleColumnsNamed(range: Extract<Range, { kind: 'table' }>, name: string): Column[] {
  return namedShapes(visibleColumns(range), name);
}
