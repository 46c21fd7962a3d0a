/**
 * Queries, SELECTs and FROM clauses. Every relation gets a printed alias unique in the whole
 * statement, so a printed `"alias"."column"` can only mean what name resolution decided.
 */
import { InvalidQuery, UnknownTable } from '../../errors.ts';
import type { Expr, FromItem, Join, OrderItem, Query, Relation, Select, SelectItem, SetExpression } from '../../sql/syntax.ts';
import { implicitName, type Bindings } from '../../sql/bindings.ts';
import type { ParameterValue, TableSchema } from '../../sql/types.ts';
import { SqlBudget } from './budget.ts';
import type { ExprContext, QueryResult, SelectColumn } from './expression-context.ts';
import { orderItemSql, parameterNamed, selectColumn, translateExpr } from './expressions.ts';
import { BOUND_PARAMETER, LAMBDA_PARAMETER, quoteIdentifier } from './literals.ts';
import {
  Scope,
  accessField,
  bareColumnOf,
  columnOf,
  itemsNamed,
  namedColumns,
  sameName,
  valueOf,
  visibleColumns,
  type ColumnShape,
  type RangeVariable,
} from './scope.ts';
import { commonType, typeName, type Typed } from './types.ts';

export interface TranslationContext {
  tables: TableSchema[];
  parameters: Record<string, ParameterValue | undefined>;
  now: number;
  /** The most characters the DuckDB text may have (SANDBOX_MAX_TRANSLATED_CHARS); checked as it is built. */
  maxChars: number;
  /** The largest string or array a function may build in the engine (SANDBOX_MAX_RESULT_BYTES); see value-size.ts. */
  maxValueBytes: number;
  /** What each name means, as the planner bound it; bound here over `tables` when absent. */
  bindings?: Bindings;
}

/** The query's own CTEs visible at a point, innermost first. */
interface CteFrame {
  name: string;
  columns: ColumnShape[];
  parent?: CteFrame;
}

export class QueryTranslator {
  // a relation named like a lambda parameter would be shadowed inside the printer's lambdas
  private readonly relations = new Set<string>([LAMBDA_PARAMETER, BOUND_PARAMETER]);
  private readonly budget: SqlBudget;

  constructor(
    private readonly context: TranslationContext,
    private readonly bindings: Bindings,
  ) {
    this.budget = new SqlBudget(context.maxChars);
  }

  query(query: Query, ctes: CteFrame | undefined, outer: Scope | undefined): QueryResult {
    let frame = ctes;
    const withSql: string[] = [];
    for (const cte of query.with) {
      // a CTE sees the CTEs before it, not the enclosing query's FROM clause
      const result = this.query(cte.query, frame, undefined);
      withSql.push(`${quoteIdentifier(cte.name)} AS (${result.sql})`);
      frame = { name: cte.name, columns: result.columns, parent: frame };
    }
    let result: QueryResult;
    if (query.body.kind === 'select') {
      result = this.select(query.body, frame, outer, query.orderBy);
    } else {
      result = this.setExpression(query.body, frame, outer);
      if (query.orderBy.length) {
        const columns = result.columns;
        const ordinals = new Map(columns.map((column, i) => [column, i + 1]));
        const order = query.orderBy.map((item) => orderItemSql(String(this.outputPosition(item.expr, columns, ordinals)), item));
        result = { ...result, sql: `${result.sql} ORDER BY ${this.budget.join(order, ', ', query.position)}` };
      }
    }
    let sql = `${withSql.length ? `WITH ${this.budget.join(withSql, ', ', query.position)} ` : ''}${result.sql}`;
    if (query.limit) sql += ` LIMIT ${count(query.limit, 'LIMIT', this.context.parameters)}`;
    if (query.offset) sql += ` OFFSET ${count(query.offset, 'OFFSET', this.context.parameters)}`;
    this.budget.check(sql.length, query.position);
    return { sql, columns: result.columns };
  }

  private setExpression(body: SetExpression, ctes: CteFrame | undefined, outer: Scope | undefined): QueryResult {
    if (body.kind === 'select') return this.select(body, ctes, outer, []);
    if (body.kind === 'nested_query') {
      const nested = this.query(body.query, ctes, outer);
      return { sql: `(${nested.sql})`, columns: nested.columns };
    }
    const left = this.setExpression(body.left, ctes, outer);
    const right = this.setExpression(body.right, ctes, outer);
    const operator = { union_all: 'UNION ALL', union_distinct: 'UNION', intersect_distinct: 'INTERSECT', except_distinct: 'EXCEPT' }[body.operator];
    if (left.columns.length !== right.columns.length) {
      throw new InvalidQuery(`Queries in ${operator} have mismatched column count: ${left.columns.length} and ${right.columns.length}`);
    }
    // by position; names from the left (first) query; types must have a common supertype
    const columns = left.columns.map((column, i) => {
      const other = right.columns[i]!;
      const type = commonType(column.type, other.type);
      if (!type) {
        throw new InvalidQuery(`Column ${i + 1} in ${operator} has incompatible types: ${typeName(column.type)}, ${typeName(other.type)}`);
      }
      return { ...column, type };
    });
    const sql = `(${left.sql}) ${operator} (${right.sql})`;
    this.budget.check(
      sql.length,
      body.right.kind === 'nested_query' ? body.right.query.position : body.right.kind === 'select' ? body.right.position : undefined,
    );
    return { sql, columns };
  }

  private relationAlias(base: string): string {
    let alias = base;
    for (let n = 2; this.relations.has(alias.toLowerCase()); n++) alias = `${base}_${n}`;
    this.relations.add(alias.toLowerCase());
    return alias;
  }

  private select(select: Select, ctes: CteFrame | undefined, outer: Scope | undefined, orderBy: OrderItem[]): QueryResult {
    const scope = new Scope(outer);
    const base = this.exprContext(scope, ctes, 'WHERE');
    const from = select.from.map((item, i) => this.fromItem(item, scope, ctes, outer, i === 0));
    const where = select.where && this.condition(select.where, base);

    const columns = this.selectList(select.items, { ...base, clause: 'SELECT list', aggregates: true, windows: true });
    const aliasContext = (clause: string, windows: boolean): ExprContext => ({ ...base, clause, aggregates: true, windows, aliases: columns });

    const groupBy = select.groupBy.map((expr) => {
      const column = this.selectColumnNamed(expr, columns);
      if (column?.aggregate) throw new InvalidQuery(`GROUP BY ${column.name} refers to an aggregate select item`, expr.position);
      return column ? column.sql : translateExpr(expr, { ...base, clause: 'GROUP BY' }).sql;
    });
    const having = select.having && this.condition(select.having, aliasContext('HAVING', false));
    const qualify = select.qualify && this.condition(select.qualify, aliasContext('QUALIFY', true));
    const ordinals = new Map(columns.map((column, i) => [column, i + 1]));
    const order = orderBy.map((item) => {
      const column = this.selectColumnNamed(item.expr, columns);
      return orderItemSql(column ? String(ordinals.get(column)) : translateExpr(item.expr, aliasContext('ORDER BY', true)).sql, item);
    });

    const join = (parts: string[], separator: string) => this.budget.join(parts, separator, select.position);
    let sql = `SELECT ${select.distinct ? 'DISTINCT ' : ''}${join(
      columns.map((c) => `${c.sql} AS ${quoteIdentifier(c.name)}`),
      ', ',
    )}`;
    if (from.length) sql += ` FROM ${join(from, ' ')}`;
    if (where) sql += ` WHERE ${where}`;
    if (groupBy.length) sql += select.rollup ? ` GROUP BY ROLLUP (${join(groupBy, ', ')})` : ` GROUP BY ${join(groupBy, ', ')}`;
    if (having) sql += ` HAVING ${having}`;
    if (qualify) sql += ` QUALIFY ${qualify}`;
    if (order.length) sql += ` ORDER BY ${join(order, ', ')}`;
    this.budget.check(sql.length, select.position);
    return { sql, columns: columns.map(({ name, type, anonymous }) => ({ name, type, anonymous })) };
  }

  /** Where no aggregate, window or select alias is allowed (WHERE, ON, UNNEST); callers widen it. */
  private exprContext(scope: Scope, ctes: CteFrame | undefined, clause: string): ExprContext {
    return {
      scope,
      bindings: this.bindings,
      subquery: (query, from) => this.query(query, ctes, from),
      parameters: this.context.parameters,
      now: this.context.now,
      clause,
      aggregates: false,
      windows: false,
      seen: { aggregate: false },
      budget: this.budget,
      maxValueBytes: this.context.maxValueBytes,
    };
  }

  private condition(expr: Expr, ctx: ExprContext): string {
    const value = translateExpr(expr, ctx);
    if (value.type.kind !== 'bool' && value.type.kind !== 'unknown') {
      throw new InvalidQuery(`${ctx.clause} needs a BOOL condition, got ${typeName(value.type)}`, expr.position);
    }
    return value.sql;
  }

  /** The select list, its running size checked column by column. */
  private selectList(items: SelectItem[], ctx: ExprContext): SelectColumn[] {
    const columns: SelectColumn[] = [];
    let anonymous = 0;
    let chars = 0;
    for (const item of items) {
      if (item.kind === 'wildcard') {
        for (const column of this.wildcard(item, ctx.scope)) {
          chars += column.sql.length + column.name.length;
          columns.push(column);
        }
        this.budget.check(chars, item.position);
        continue;
      }
      const before = ctx.seen.aggregate;
      ctx.seen.aggregate = false;
      const value = translateExpr(item.expr, ctx);
      const name = item.alias ?? implicitName(item.expr);
      columns.push({
        name: name ?? `f${anonymous++}_`,
        anonymous: name === undefined,
        type: value.type,
        sql: value.sql,
        aggregate: ctx.seen.aggregate,
      });
      chars += value.sql.length + (name?.length ?? 0);
      this.budget.check(chars, item.expr.position ?? item.position);
      ctx.seen.aggregate ||= before;
    }
    return columns;
  }

  /** `*`, `t.*` (a table's columns) or `v.*` (a record's fields), minus EXCEPT names. */
  private wildcard(item: Extract<SelectItem, { kind: 'wildcard' }>, scope: Scope): SelectColumn[] {
    let values: { name: string; value: Typed }[];
    // `t.*` is bound to t's whole row (its columns), `m.*` to the record m (its fields)
    const binding = this.bindings.names.get(item);
    if (binding?.kind === 'row') {
      values = tableColumns(scope.tableOf(binding));
    } else if (binding) {
      values = structFields(scope.value(binding, item.position), item.qualifier!.join('.'), item.position);
    } else {
      if (scope.ranges.length === 0) throw new InvalidQuery(`SELECT * needs a FROM clause`, item.position);
      values = scope.ranges.flatMap((range) => {
        if (range.kind === 'table') return visibleColumns(range).map((column) => ({ name: column.name, value: bareColumnOf(range, column) }));
        // an unnested record expands into its fields, a scalar into one column named by its alias
        if (range.type.kind === 'struct') return structFields(valueOf(range), range.name ?? 'UNNEST', item.position);
        return range.name === undefined ? [] : [{ name: range.name, value: valueOf(range) }];
      });
    }
    // sets, not nested scans: a * over many joined tables expands to thousands of columns
    const names = new Set(values.map((v) => v.name.toLowerCase()));
    for (const name of item.except) {
      if (!names.has(name.toLowerCase())) throw new InvalidQuery(`Column ${name} in SELECT * EXCEPT list does not exist`, item.position);
    }
    const except = new Set(item.except.map((name) => name.toLowerCase()));
    const kept = values.filter((v) => !except.has(v.name.toLowerCase()));
    // two columns of one relation with the same name could not be told apart in the printed SQL
    const printed = new Set<string>();
    const duplicate = kept.find((v) => printed.size === printed.add(v.value.sql).size);
    if (duplicate)
      throw new InvalidQuery(`SELECT * is ambiguous: the relation has two columns named ${duplicate.name}; name the columns you want`, item.position);
    return kept.map(({ name, value }) => ({ name, type: value.type, sql: value.sql, anonymous: false, aggregate: false }));
  }

  /** One comma-separated FROM element: its relation and joins, each seeing the ones before. */
  private fromItem(item: FromItem, scope: Scope, ctes: CteFrame | undefined, outer: Scope | undefined, first: boolean): string {
    let sql = this.relation(item.relation, scope, ctes, outer, first ? 'first' : 'cross');
    for (const join of item.joins) sql += ` ${this.join(join, scope, ctes, outer)}`;
    return sql;
  }

  private join(join: Join, scope: Scope, ctes: CteFrame | undefined, outer: Scope | undefined): string {
    const kind = { cross: 'CROSS', inner: 'INNER', left: 'LEFT', right: 'RIGHT', full: 'FULL' }[join.kind];
    if (join.relation.kind === 'unnest' && (join.kind === 'right' || join.kind === 'full')) {
      throw new InvalidQuery(`${kind} JOIN UNNEST is not allowed: UNNEST reads the rows to its left`, join.relation.position);
    }
    const relation = this.relation(join.relation, scope, ctes, outer, 'join');
    if (join.kind === 'cross') {
      if (join.on || join.using) throw new InvalidQuery(`CROSS JOIN takes no ON or USING`, join.relation.position);
      return `CROSS JOIN ${relation}`;
    }
    const ctx = this.exprContext(scope, ctes, 'JOIN ON');
    if (join.on) return `${kind} JOIN ${relation} ON ${this.condition(join.on, ctx)}`;
    if (join.using) return `${kind} JOIN ${relation} ON ${this.using(join, scope)}`;
    // `left join unnest(...)` keeps the row with NULLs when the array is empty
    if (join.relation.kind === 'unnest') return `${kind} JOIN ${relation} ON TRUE`;
    throw new InvalidQuery(`${kind} JOIN needs ON or USING`, join.relation.position);
  }

  /**
   * JOIN ... USING (a): equality of the two sides' `a`. The bare name then means the left side's,
   * or after a RIGHT or FULL JOIN, where either side may be missing, COALESCE of both (BigQuery's merged column).
   */
  private using(join: Join, scope: Scope): string {
    const pairs = this.bindings.using.get(join) ?? [];
    return this.budget.join(
      pairs.map(({ left, right }) => {
        const leftValue = scope.value(left, join.relation.position);
        const rightValue = scope.value(right, join.relation.position);
        if (!commonType(leftValue.type, rightValue.type)) {
          throw new InvalidQuery(
            `column ${left.column} in USING has incompatible types: ${typeName(leftValue.type)}, ${typeName(rightValue.type)}`,
            join.relation.position,
          );
        }
        scope.hide(right);
        if (join.kind === 'right' || join.kind === 'full') scope.merge(left, right, join.relation.position);
        return `(${leftValue.sql} = ${rightValue.sql})`;
      }),
      ' AND ',
    );
  }

  private relation(relation: Relation, scope: Scope, ctes: CteFrame | undefined, outer: Scope | undefined, place: 'first' | 'cross' | 'join'): string {
    switch (relation.kind) {
      case 'table': {
        const name = relation.name.join('.');
        const columns = this.tableColumns(name, ctes, relation.position);
        const alias = relation.alias ?? relation.name[relation.name.length - 1]!;
        const printed = this.relationAlias(alias);
        scope.add({ kind: 'table', source: relation, name: alias, relation: printed, columns, hidden: new Set() });
        return `${place === 'cross' ? 'CROSS JOIN ' : ''}${quoteIdentifier(this.tableName(name, ctes))} AS ${quoteIdentifier(printed)}`;
      }
      case 'derived': {
        // a FROM subquery cannot read the FROM items beside it, only the enclosing query's
        const result = this.query(relation.query, ctes, outer);
        const printed = this.relationAlias(relation.alias ?? 'subquery');
        scope.add({ kind: 'table', source: relation, name: relation.alias, relation: printed, columns: result.columns, hidden: new Set() });
        return `${place === 'cross' ? 'CROSS JOIN ' : ''}(${result.sql}) AS ${quoteIdentifier(printed)}`;
      }
      case 'nested_join': {
        if (relation.alias) throw new InvalidQuery(`a parenthesised join cannot have an alias`, relation.position);
        const inner = this.fromItem(relation.item, scope, ctes, outer, true);
        return `${place === 'cross' ? 'CROSS JOIN ' : ''}(${inner})`;
      }
      case 'unnest': {
        const translated = translateExpr(relation.array, this.exprContext(scope, ctes, 'UNNEST'));
        // an array no scanned event holds: no element (a left join keeps the row with NULL)
        const array =
          translated.type.kind === 'unknown'
            ? { sql: 'CAST(NULL AS INTEGER[])', type: { kind: 'array' as const, element: { kind: 'unknown' as const } } }
            : translated;
        if (array.type.kind !== 'array') {
          throw new InvalidQuery(`Values referenced in UNNEST must be arrays. UNNEST contains expression of type ${typeName(array.type)}`, relation.position);
        }
        const printed = this.relationAlias(relation.alias ?? 'unnest');
        const offsetName = relation.offsetAlias ?? (relation.withOffset ? 'offset' : undefined);
        // DuckDB's FROM unnest() of a list of structs does not give the struct value; a lateral
        // subquery does, and a second zipped unnest numbers the elements from 0 (WITH OFFSET)
        const offsetSql = offsetName ? `, unnest(range(0, len(${array.sql}))) AS "offset"` : '';
        scope.add({ kind: 'value', source: relation, offset: false, name: relation.alias, relation: printed, column: 'value', type: array.type.element });
        if (offsetName)
          scope.add({ kind: 'value', source: relation, offset: true, name: offsetName, relation: printed, column: 'offset', type: { kind: 'int64' } });
        const subquery = `(SELECT unnest(${array.sql}) AS "value"${offsetSql}) AS ${quoteIdentifier(printed)}`;
        return place === 'first' ? subquery : `${place === 'cross' ? 'CROSS JOIN ' : ''}LATERAL ${subquery}`;
      }
    }
  }

  /** The select column an ORDER BY / GROUP BY item names: an ordinal (`1`) or a select-list alias the binder found. */
  private selectColumnNamed(expr: Expr, columns: SelectColumn[]): SelectColumn | undefined {
    if (expr.kind === 'number') {
      const ordinal = Number(expr.text);
      if (!/^\d+$/.test(expr.text) || ordinal < 1 || ordinal > columns.length) {
        throw new InvalidQuery(`ordinal ${expr.text} is out of range: the select list has ${columns.length} columns`, expr.position);
      }
      return columns[ordinal - 1];
    }
    const binding = expr.kind === 'identifier' ? this.bindings.names.get(expr) : undefined;
    return binding?.kind === 'alias' ? selectColumn(columns, binding.name) : undefined;
  }

  /** ORDER BY after a set operation names output columns: an ordinal or a name the binder found, printed as the position. */
  private outputPosition(expr: Expr, columns: ColumnShape[], ordinals: Map<ColumnShape, number>): number {
    if (expr.kind === 'number' && /^\d+$/.test(expr.text) && Number(expr.text) >= 1 && Number(expr.text) <= columns.length) return Number(expr.text);
    const binding = this.bindings.names.get(expr);
    const column = binding?.kind === 'alias' ? itemsNamed(columns, binding.name).find((c) => !c.anonymous) : undefined;
    if (column) return ordinals.get(column)!;
    throw new InvalidQuery(`ORDER BY after a set operation must name an output column`, expr.position);
  }

  private tableColumns(name: string, ctes: CteFrame | undefined, position?: { line: number; column: number }): ColumnShape[] {
    for (let frame = ctes; frame; frame = frame.parent) if (sameName(frame.name, name)) return frame.columns;
    const table = this.context.tables.find((t) => t.name === name) ?? this.context.tables.find((t) => sameName(t.name, name));
    if (!table) throw new UnknownTable(name, [...this.context.tables.map((t) => t.name), ...cteNames(ctes)], position);
    return table.columns.map((c) => ({ ...c, anonymous: false }));
  }

  private tableName(name: string, ctes: CteFrame | undefined): string {
    for (let frame = ctes; frame; frame = frame.parent) if (sameName(frame.name, name)) return frame.name;
    return (this.context.tables.find((t) => t.name === name) ?? this.context.tables.find((t) => sameName(t.name, name)))!.name;
  }
}

function cteNames(ctes: CteFrame | undefined): string[] {
  const names: string[] = [];
  for (let frame = ctes; frame; frame = frame.parent) names.push(frame.name);
  return names;
}

function tableColumns(range: Extract<RangeVariable, { kind: 'table' }>): { name: string; value: Typed }[] {
  return namedColumns(range).map((column) => ({ name: column.name, value: columnOf(range, column) }));
}

function structFields(value: Typed, what: string, position?: { line: number; column: number }): { name: string; value: Typed }[] {
  if (value.type.kind !== 'struct') throw new InvalidQuery(`${what}.* needs a table or a STRUCT, got ${typeName(value.type)}`, position);
  return value.type.fields.map((field) => ({ name: field.name, value: accessField(value, field.name, position) }));
}

/** A LIMIT or OFFSET: an integer literal, or (as BigQuery allows) a parameter declared as an integer. */
function count(expr: Expr, clause: string, parameters: TranslationContext['parameters']): string {
  if (expr.kind === 'parameter') {
    const value = parameterNamed(parameters, expr.name, expr.position);
    if (typeof value === 'string' || value.type !== 'int64') {
      throw new InvalidQuery(`${clause} @${expr.name} must be a parameter declared as an integer`, expr.position);
    }
    if (value.text.startsWith('-')) throw new InvalidQuery(`${clause} must not be negative, @${expr.name} is ${value.text}`, expr.position);
    return BigInt(value.text).toString();
  }
  if (expr.kind !== 'number' || !/^\d+$/.test(expr.text) || BigInt(expr.text) > 2n ** 63n - 1n) {
    throw new InvalidQuery(`${clause} must be a non-negative integer literal`, expr.position);
  }
  return BigInt(expr.text).toString();
}
