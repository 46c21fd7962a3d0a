import { implicitName, type Bindings } from '../../sql/bindings.ts';
import type { Expr, OrderItem, Query, Relation, Select, SetExpression } from '../../sql/syntax.ts';
import type { SqlType } from '../../sql/types.ts';
import type { ServiceUnionFinish, UnionBranch, UnionValue, ValuePath } from '../plan.ts';
import { finishCondition, literalOf } from './finish-conditions.ts';
import { countLiteral, readScan, staticType, type FinishSource } from './scan-reading.ts';
import { isRowWise } from './row-wise.ts';
import type { SelectScope } from './select-scope.ts';

/**
 * A query whose answer is a UNION ALL of SELECTs ordered and limited as a whole: written directly
 * (`select ... union all select ... order by ... limit n`), or as one CTE of that union which the
 * final SELECT only projects (`with u as (... union all ...) select a, b from u order by ... limit n`).
 * `columns` are the answer's, each reading a position of the union; `order` is by those positions.
 */
export interface UnionQuery {
  branches: Select[];
  columns: ServiceUnionFinish['columns'];
  order: ServiceUnionFinish['order'];
  limit?: number;
  offset: number;
}

/** Each bound query's reading as a union (null: none), kept while its bindings are (one per text, endpoint and field catalogs). */
const unionsOf = new WeakMap<Bindings, { query: Query; union: UnionQuery | null }>();
/** Each union's finish decided over its branches' sources, kept while they read the same columns and leave the same conditions. */
const finishesOf = new WeakMap<UnionQuery, { sources: ReadonlyMap<Select, FinishSource>; decision: ServiceUnionFinish | { refused: string } }>();

/** The query as a UnionQuery, or undefined when it is any other shape; decided once per bound tree. */
export function unionQuery(query: Query, bindings: Bindings): UnionQuery | undefined {
  const known = unionsOf.get(bindings);
  if (known?.query === query) return known.union ?? undefined;
  const union = readUnion(query, bindings);
  unionsOf.set(bindings, { query, union: union ?? null });
  return union;
}

function readUnion(query: Query, bindings: Bindings): UnionQuery | undefined {
  if (query.with.length === 0) return query.body.kind === 'set_operation' ? directUnion(query, bindings) : undefined;
  const [cte, ...others] = query.with;
  const inner = cte!.query;
  if (others.length > 0 || inner.with.length > 0 || inner.orderBy.length > 0 || inner.limit || inner.offset) return undefined;
  const branches = unionBranches(inner.body);
  const names = branches && unionNames(branches);
  const select = query.body;
  if (!names || select.kind !== 'select' || select.distinct || select.where || select.groupBy.length > 0 || select.having || select.qualify) return undefined;
  const [from, ...more] = select.from;
  const relation = from?.relation;
  if (more.length > 0 || from!.joins.length > 0 || relation?.kind !== 'table' || relation.name.length !== 1 || !sameName(relation.name[0]!, cte!.name))
    return undefined;
  const columns: UnionQuery['columns'] = [];
  for (const item of select.items) {
    if (item.kind === 'wildcard') {
      if (item.qualifier || item.except.length > 0) return undefined;
      columns.push(...names.map((name, position) => ({ name, position })));
      continue;
    }
    const position = item.expr.kind === 'identifier' ? cteColumn(item.expr, relation, bindings, names) : undefined;
    const name = item.alias ?? implicitName(item.expr);
    if (position === undefined || name === undefined) return undefined;
    columns.push({ name, position });
  }
  const order = orderOf(query.orderBy, (expr) => {
    if (expr.kind === 'number') return columns[ordinal(expr) - 1]?.position;
    const binding = expr.kind === 'identifier' ? bindings.names.get(expr) : undefined;
    if (binding?.kind === 'alias') return columns.find((column) => sameName(column.name, binding.name))?.position;
    return expr.kind === 'identifier' ? cteColumn(expr, relation, bindings, names) : undefined;
  });
  return order && limited(query, { branches, columns, order });
}

/** `select ... union all select ... [order by ...] [limit ...]`: ORDER BY names a column of the union (the first branch's names) or its ordinal. */
function directUnion(query: Query, bindings: Bindings): UnionQuery | undefined {
  const branches = unionBranches(query.body);
  const names = branches && unionNames(branches);
  if (!names) return undefined;
  const columns = names.map((name, position) => ({ name, position }));
  const order = orderOf(query.orderBy, (expr) => {
    if (expr.kind === 'number') return ordinal(expr) >= 1 && ordinal(expr) <= names.length ? ordinal(expr) - 1 : undefined;
    const binding = expr.kind === 'identifier' ? bindings.names.get(expr) : undefined;
    return binding?.kind === 'alias' ? uniquePosition(names, binding.name) : undefined;
  });
  return order && limited(query, { branches, columns, order });
}

function limited(query: Query, union: Omit<UnionQuery, 'limit' | 'offset'>): UnionQuery | undefined {
  const limit = query.limit === undefined ? undefined : countLiteral(query.limit);
  const offset = query.offset === undefined ? 0 : countLiteral(query.offset);
  if ((query.limit && limit === undefined) || offset === undefined) return undefined;
  return { ...union, ...(limit === undefined ? {} : { limit }), offset };
}

function orderOf(items: readonly OrderItem[], position: (expr: Expr) => number | undefined): UnionQuery['order'] | undefined {
  const order: UnionQuery['order'] = [];
  for (const item of items) {
    const at = position(item.expr);
    if (at === undefined) return undefined;
    order.push({ position: at, descending: item.descending, nulls: item.nulls ?? (item.descending ? 'last' : 'first') });
  }
  return order;
}

/** The SELECTs of a chain of UNION ALL (each a plain SELECT), in order. */
function unionBranches(body: SetExpression): Select[] | undefined {
  if (body.kind === 'select') return [body];
  if (body.kind !== 'set_operation' || body.operator !== 'union_all') return undefined;
  const left = unionBranches(body.left);
  const right = unionBranches(body.right);
  return left && right && [...left, ...right];
}

/** The union's column names (the first branch's), when every branch lists as many values without a wildcard and no name repeats. */
function unionNames(branches: readonly Select[]): string[] | undefined {
  const names: string[] = [];
  for (const item of branches[0]!.items) {
    const name = item.kind === 'expression' ? (item.alias ?? implicitName(item.expr)) : undefined;
    if (name === undefined || names.some((known) => sameName(known, name))) return undefined;
    names.push(name);
  }
  const sameWidth = branches.every((branch) => branch.items.length === names.length && branch.items.every((item) => item.kind === 'expression'));
  return sameWidth ? names : undefined;
}

function cteColumn(expr: Expr, relation: Relation, bindings: Bindings, names: readonly string[]): number | undefined {
  const binding = bindings.names.get(expr);
  if (binding?.kind !== 'column' || binding.range !== relation || binding.fields.length > 0 || binding.merged) return undefined;
  return uniquePosition(names, binding.column);
}

function uniquePosition(names: readonly string[], name: string): number | undefined {
  const position = names.findIndex((known) => sameName(known, name));
  return position < 0 ? undefined : position;
}

function ordinal(expr: Extract<Expr, { kind: 'number' }>): number {
  return /^\d+$/.test(expr.text) ? Number(expr.text) : 0;
}

function sameName(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/**
 * The limit a branch's scan may take: under an outer `ORDER BY timestamp DESC [, id DESC] LIMIT n
 * OFFSET m`, where the branch selects its scan's own `timestamp` (and `id`) at those positions, no
 * more than its first n + m rows in that order can reach the answer; the store orders by timestamp
 * then id, descending, both always present. As for one scan (index.ts, pushableLimit), each event
 * matched must give exactly one row (left unnests, or with `byShape` its regular events).
 */
export function branchLimit(union: UnionQuery, select: Select, scope: SelectScope, byShape: boolean): { rows: number; order: 'timestamp_desc' } | undefined {
  if (union.limit === undefined || !union.branches.includes(select)) return undefined;
  if (!isRowWise(select)) return undefined;
  if (!byShape && scope.unnests.some((unnest) => unnest.join !== 'left')) return undefined;
  const [first, second, ...rest] = union.order;
  if (!first || rest.length > 0) return undefined;
  const reads = (position: number, column: string) => {
    const item = select.items[position];
    const reference = item?.kind === 'expression' ? scope.resolve(item.expr) : undefined;
    return reference?.kind === 'column' && reference.column === column;
  };
  if (!first.descending || !reads(first.position, 'timestamp')) return undefined;
  if (second && (!second.descending || !reads(second.position, 'id'))) return undefined;
  return { rows: union.limit + union.offset, order: 'timestamp_desc' };
}

/** Types a branch's path value may have: converted to the answer's JSON as the engine does (service-finish.ts). */
const PLAIN_TYPES = new Set<SqlType['kind']>(['string', 'int64', 'float64', 'bool', 'timestamp', 'unknown']);

/**
 * Whether the service finishes the union (ServiceUnionFinish): each branch reads one scan through
 * unnests of its arrays (`sources`, by the branch's SELECT), leaves conditions of its WHERE the
 * service evaluates (as for one scan), and selects only values the service computes exactly.
 * Otherwise the reason. Decided once while the union's sources are the same.
 */
export function decideUnionFinish(union: UnionQuery, bindings: Bindings, sources: ReadonlyMap<Select, FinishSource>): ServiceUnionFinish | { refused: string } {
  const known = finishesOf.get(union);
  if (known && sameSources(known.sources, sources)) return known.decision;
  const decision = decideAnew(union, bindings, sources);
  finishesOf.set(union, { sources, decision });
  return decision;
}

/** Whether two maps of sources read the same tables and columns and leave the same conditions (the same nodes of the tree). */
function sameSources(a: ReadonlyMap<Select, FinishSource>, b: ReadonlyMap<Select, FinishSource>): boolean {
  if (a.size !== b.size) return false;
  const same = <T>(x: readonly T[] | undefined, y: readonly T[] | undefined) => x === y || (x?.length === y?.length && x!.every((item, i) => item === y![i]));
  for (const [select, source] of a) {
    const other = b.get(select);
    if (!other || other.table !== source.table || other.whereHeld !== source.whereHeld || !same(other.columns, source.columns)) return false;
    if (!same(other.unapplied, source.unapplied)) return false;
  }
  return true;
}

function decideAnew(union: UnionQuery, bindings: Bindings, sources: ReadonlyMap<Select, FinishSource>): ServiceUnionFinish | { refused: string } {
  const refused = (reason: string) => ({ refused: reason });
  if (union.order.length === 0 && union.limit === undefined) return refused('the union has neither ORDER BY nor LIMIT');
  const branches: UnionBranch[] = [];
  for (const select of union.branches) {
    const source = sources.get(select);
    if (!source) return refused('a branch of the union reads no one scan');
    if (!isRowWise(select)) return refused('a branch of the union groups, filters groups or computes windows');
    const scan = readScan(select, bindings, source);
    if ('refused' in scan) return scan;
    const { paths, unnests, unnestTypes, where } = scan;
    const read = (expr: Expr) => paths.read(expr, unnests.length);
    const values: UnionValue[] = [];
    for (const item of select.items) {
      if (item.kind !== 'expression') return refused('a branch of the union has a wildcard');
      const value = unionValue(item.expr, read, (path) => staticType(path, source.columns, unnestTypes));
      if (!value) return refused('a value of a branch of the union is not one the service computes');
      values.push(value);
    }
    branches.push({ table: source.table, unnests, values, ...(where.length > 0 ? { where } : {}) });
  }
  return {
    branches,
    columns: union.columns,
    order: union.order,
    ...(union.limit === undefined ? {} : { limit: union.limit }),
    offset: union.offset,
  };
}

/** A value the service computes exactly as the engine does: a path of a plain type, NULL, text, CAST(path AS STRING), or a CASE of text. */
function unionValue(expr: Expr, read: (expr: Expr) => ValuePath | undefined, typeOf: (path: ValuePath) => SqlType | undefined): UnionValue | undefined {
  const text = (result: Expr | undefined): { text: string | null } | undefined => {
    if (result === undefined || result.kind === 'null') return { text: null };
    const literal = literalOf(result);
    return typeof literal === 'string' ? { text: literal } : undefined;
  };
  switch (expr.kind) {
    case 'identifier': {
      const path = read(expr);
      const type = path && typeOf(path);
      return path && type && PLAIN_TYPES.has(type.kind) ? { kind: 'path', value: path } : undefined;
    }
    case 'null':
    case 'string': {
      const literal = text(expr);
      return literal && { kind: 'literal', ...literal };
    }
    case 'cast': {
      if (expr.type !== 'STRING' || expr.expr.kind !== 'identifier') return undefined;
      const path = read(expr.expr);
      const type = path && typeOf(path);
      return path && type && ['string', 'int64', 'unknown'].includes(type.kind) ? { kind: 'string_cast', value: path } : undefined;
    }
    case 'case': {
      if (expr.operand) return undefined;
      const whens: Extract<UnionValue, { kind: 'case' }>['whens'] = [];
      for (const { when, then } of expr.whens) {
        const condition = finishCondition(when, read);
        const result = text(then);
        if (!condition || !result) return undefined;
        whens.push({ condition, ...result });
      }
      const otherwise = text(expr.else);
      return otherwise && { kind: 'case', whens, otherwise: otherwise.text };
    }
    default:
      return undefined;
  }
}
