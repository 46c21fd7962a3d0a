/**
 * The one traversal of the syntax tree in syntax.ts: the planner's passes (CTE binding, aggregate
 * detection, column reads, predicate push-down) walk it here, and the validator reads each
 * expression's children from `childExpressions`, so a new node kind is taught to one place. The
 * switches end in `unreachable`, so a kind added to syntax.ts without a case here is a type error.
 *
 * Order is the validator's: a query's CTEs, body, ORDER BY, LIMIT, OFFSET; a SELECT's FROM (each
 * relation, then its join condition), items, WHERE, GROUP BY, HAVING, QUALIFY; an expression's
 * operands left to right.
 */
import type { CommonTableExpression, Expr, FromItem, Join, OrderItem, Query, Relation, Select, SelectItem, SetExpression, WindowSpec } from './syntax.ts';

/** The clause an expression stands in, within its nearest SELECT or query (a subquery starts its own). */
export type Clause = 'select' | 'where' | 'group_by' | 'having' | 'qualify' | 'order_by' | 'join_condition' | 'from';

/**
 * What a pass wants to see. Each callback may return `false` to skip what lies below that node
 * (its children, and so its subqueries); anything else descends.
 */
export interface Visitor {
  query?(query: Query): boolean | void;
  cte?(cte: CommonTableExpression): boolean | void;
  select?(select: Select): boolean | void;
  selectItem?(item: SelectItem): boolean | void;
  relation?(relation: Relation): boolean | void;
  join?(join: Join): boolean | void;
  expr?(expr: Expr, clause: Clause): boolean | void;
}

/** A node walk can start from. */
export type WalkRoot = Query | SetExpression | Relation | Expr;

export function walk(root: WalkRoot, visitor: Visitor, clause: Clause = 'select'): void {
  switch (root.kind) {
    case 'query':
      return walkQuery(root, visitor);
    case 'select':
    case 'set_operation':
    case 'nested_query':
      return walkSetExpression(root, visitor);
    case 'table':
    case 'unnest':
    case 'derived':
    case 'nested_join':
      return walkRelation(root, visitor);
    default:
      return walkExpr(root, visitor, clause);
  }
}

/** Every expression directly below `expr` (not inside its subqueries), in order. */
export function childExpressions(expr: Expr): Expr[] {
  switch (expr.kind) {
    case 'identifier':
    case 'string':
    case 'number':
    case 'boolean':
    case 'null':
    case 'typed_literal':
    case 'date_part':
    case 'parameter':
    case 'array_subquery':
    case 'subquery':
    case 'exists':
      return [];
    case 'interval':
      return [expr.value];
    case 'unary':
      return [expr.operand];
    case 'binary':
      return [expr.left, expr.right];
    case 'like':
      return [expr.expr, expr.pattern];
    case 'between':
      return [expr.expr, expr.low, expr.high];
    case 'in_list':
      return [expr.expr, ...expr.list];
    case 'in_subquery':
    case 'is':
    case 'cast':
    case 'extract':
    case 'field':
      return [expr.expr];
    case 'in_unnest':
      return [expr.expr, expr.array];
    case 'call':
      return [...expr.args, ...orderExpressions(expr.orderBy ?? []), ...(expr.limit ? [expr.limit] : []), ...(expr.over ? windowExpressions(expr.over) : [])];
    case 'case':
      return [...(expr.operand ? [expr.operand] : []), ...expr.whens.flatMap((branch) => [branch.when, branch.then]), ...(expr.else ? [expr.else] : [])];
    case 'subscript':
      return [expr.expr, expr.index];
    case 'struct':
      return expr.fields.map((field) => field.expr);
    case 'array':
      return expr.elements;
    default:
      return unreachable(expr);
  }
}

/** The query directly below `expr`, for the kinds that hold one. */
export function subqueryOf(expr: Expr): Query | undefined {
  return expr.kind === 'in_subquery' || expr.kind === 'array_subquery' || expr.kind === 'subquery' || expr.kind === 'exists' ? expr.query : undefined;
}

/**
 * A copy of `expr` with every sub-expression for which `replace` returns a node swapped for it
 * (top down: a replaced node's own children are not looked at). Subqueries are kept, not copied.
 */
export function mapExpression(expr: Expr, replace: (expr: Expr) => Expr | undefined): Expr {
  const replaced = replace(expr);
  if (replaced) return replaced;
  const map = (inner: Expr) => mapExpression(inner, replace);
  const mapOrder = (items: OrderItem[]) => items.map((item) => ({ ...item, expr: map(item.expr) }));
  switch (expr.kind) {
    case 'identifier':
    case 'string':
    case 'number':
    case 'boolean':
    case 'null':
    case 'typed_literal':
    case 'date_part':
    case 'parameter':
    case 'array_subquery':
    case 'subquery':
    case 'exists':
      return { ...expr };
    case 'interval':
      return { ...expr, value: map(expr.value) };
    case 'unary':
      return { ...expr, operand: map(expr.operand) };
    case 'binary':
      return { ...expr, left: map(expr.left), right: map(expr.right) };
    case 'like':
      return { ...expr, expr: map(expr.expr), pattern: map(expr.pattern) };
    case 'between':
      return { ...expr, expr: map(expr.expr), low: map(expr.low), high: map(expr.high) };
    case 'in_list':
      return { ...expr, expr: map(expr.expr), list: expr.list.map(map) };
    case 'in_subquery':
    case 'is':
    case 'cast':
    case 'extract':
    case 'field':
      return { ...expr, expr: map(expr.expr) };
    case 'in_unnest':
      return { ...expr, expr: map(expr.expr), array: map(expr.array) };
    case 'call': {
      const { orderBy, limit, over } = expr;
      return {
        ...expr,
        args: expr.args.map(map),
        ...(orderBy ? { orderBy: mapOrder(orderBy) } : {}),
        ...(limit ? { limit: map(limit) } : {}),
        ...(over
          ? {
              over: {
                ...over,
                partitionBy: over.partitionBy.map(map),
                orderBy: mapOrder(over.orderBy),
                ...(over.frame ? { frame: mapFrame(over.frame, map) } : {}),
              },
            }
          : {}),
      };
    }
    case 'case':
      return {
        ...expr,
        ...(expr.operand ? { operand: map(expr.operand) } : {}),
        whens: expr.whens.map((branch) => ({ when: map(branch.when), then: map(branch.then) })),
        ...(expr.else ? { else: map(expr.else) } : {}),
      };
    case 'subscript':
      return { ...expr, expr: map(expr.expr), index: map(expr.index) };
    case 'struct':
      return { ...expr, fields: expr.fields.map((field) => ({ ...field, expr: map(field.expr) })) };
    case 'array':
      return { ...expr, elements: expr.elements.map(map) };
    default:
      return unreachable(expr);
  }
}

function mapFrame(frame: NonNullable<WindowSpec['frame']>, map: (expr: Expr) => Expr): NonNullable<WindowSpec['frame']> {
  const bound = (value: typeof frame.start) =>
    value.kind === 'preceding' || value.kind === 'following' ? { ...value, offset: map(value.offset) } : { ...value };
  return { ...frame, start: bound(frame.start), ...(frame.end ? { end: bound(frame.end) } : {}) };
}

function orderExpressions(items: readonly OrderItem[]): Expr[] {
  return items.map((item) => item.expr);
}

function windowExpressions(spec: WindowSpec): Expr[] {
  const bounds = [spec.frame?.start, spec.frame?.end].flatMap((bound) =>
    bound && (bound.kind === 'preceding' || bound.kind === 'following') ? [bound.offset] : [],
  );
  return [...spec.partitionBy, ...orderExpressions(spec.orderBy), ...bounds];
}

function walkQuery(query: Query, visitor: Visitor): void {
  if (visitor.query?.(query) === false) return;
  for (const cte of query.with) {
    if (visitor.cte?.(cte) !== false) walkQuery(cte.query, visitor);
  }
  walkSetExpression(query.body, visitor);
  for (const item of query.orderBy) walkExpr(item.expr, visitor, 'order_by');
  if (query.limit) walkExpr(query.limit, visitor, 'order_by');
  if (query.offset) walkExpr(query.offset, visitor, 'order_by');
}

function walkSetExpression(body: SetExpression, visitor: Visitor): void {
  switch (body.kind) {
    case 'select':
      return walkSelect(body, visitor);
    case 'nested_query':
      return walkQuery(body.query, visitor);
    case 'set_operation':
      walkSetExpression(body.left, visitor);
      return walkSetExpression(body.right, visitor);
    default:
      return unreachable(body);
  }
}

function walkSelect(select: Select, visitor: Visitor): void {
  if (visitor.select?.(select) === false) return;
  for (const item of select.from) walkFromItem(item, visitor);
  for (const item of select.items) {
    if (visitor.selectItem?.(item) === false) continue;
    if (item.kind === 'expression') walkExpr(item.expr, visitor, 'select');
  }
  if (select.where) walkExpr(select.where, visitor, 'where');
  for (const expr of select.groupBy) walkExpr(expr, visitor, 'group_by');
  if (select.having) walkExpr(select.having, visitor, 'having');
  if (select.qualify) walkExpr(select.qualify, visitor, 'qualify');
}

function walkFromItem(item: FromItem, visitor: Visitor): void {
  walkRelation(item.relation, visitor);
  for (const join of item.joins) {
    if (visitor.join?.(join) === false) continue;
    walkRelation(join.relation, visitor);
    if (join.on) walkExpr(join.on, visitor, 'join_condition');
  }
}

function walkRelation(relation: Relation, visitor: Visitor): void {
  if (visitor.relation?.(relation) === false) return;
  switch (relation.kind) {
    case 'table':
      return;
    case 'unnest':
      return walkExpr(relation.array, visitor, 'from');
    case 'derived':
      return walkQuery(relation.query, visitor);
    case 'nested_join':
      return walkFromItem(relation.item, visitor);
    default:
      return unreachable(relation);
  }
}

function walkExpr(expr: Expr, visitor: Visitor, clause: Clause): void {
  // iterative over expressions: a long operator chain (`a or b or c ...`) is a deep tree, and the stack is not the place for it
  const pending: (Expr | Query)[] = [expr];
  while (pending.length > 0) {
    const next = pending.pop()!;
    if (next.kind === 'query') {
      walkQuery(next, visitor);
      continue;
    }
    if (visitor.expr?.(next, clause) === false) continue;
    // the subquery after the operands (the operand of IN comes first)
    const query = subqueryOf(next);
    if (query) pending.push(query);
    const children = childExpressions(next);
    for (let index = children.length - 1; index >= 0; index--) pending.push(children[index]!);
  }
}

function unreachable(node: never): never {
  throw new Error(`unknown syntax node ${JSON.stringify(node)}`);
}
