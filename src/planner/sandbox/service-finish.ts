import { implicitName, type Bindings } from '../../sql/bindings.ts';
import type { Expr, Join, Query, Relation, Select } from '../../sql/syntax.ts';
import type { SqlType, TableColumn } from '../../sql/types.ts';
import type { FinishCondition, ServiceFinish, ValuePath } from '../plan.ts';
import { finishCondition } from './finish-conditions.ts';

/** The one scan a residual query reads, as far as the planner knows it before any row. */
export interface FinishSource {
  table: string;
  columns: readonly TableColumn[];
  /** The scan's filter is the SELECT's WHERE exactly (for the rows of its exact part). */
  whereHeld: boolean;
  /** Otherwise, the conjuncts of WHERE the scan's filter did not apply exactly (it matched a superset of their rows), when known. */
  unapplied?: readonly Expr[];
  /** The scan gives one row whatever the data (an aggregation without keys). */
  oneRow: boolean;
}

export type FinishDecision = { finish: ServiceFinish } | { refused: string };

/** Types whose values the service converts to the answer's JSON exactly as the engine does; `unknown` is known only from the rows. */
const PLAIN_TYPES = new Set<SqlType['kind']>(['string', 'int64', 'float64', 'bool', 'timestamp', 'unknown']);

/**
 * Whether the residual query is only a projection of one scan's rows (columns, record fields and
 * whole records or arrays, through unnests of its arrays), an ORDER BY over them and a LIMIT: then the service finishes it
 * (ServiceFinish) and the engine is needed only when the rows turn out to be ones the service does
 * not convert exactly. A WHERE the scan did not apply exactly is evaluated by the service over the
 * rows when each condition it left is one the service evaluates (finishCondition). Anything else is
 * refused with the reason. Pure.
 */
export function decideServiceFinish(query: Query, bindings: Bindings, source: FinishSource): FinishDecision {
  const refused = (reason: string): FinishDecision => ({ refused: reason });
  if (query.with.length > 0) return refused('the query has a WITH clause of its own');
  const select = query.body;
  if (select.kind !== 'select') return refused('the query is a set operation');
  if (select.distinct) return refused('SELECT DISTINCT compares whole rows');
  if (select.groupBy.length > 0 || select.having || select.qualify) return refused('the query groups, or filters groups or windows');
  if (select.where && !source.whereHeld && !source.unapplied) return refused("its WHERE is not exactly the scan's filter");

  const ranges = unnestRanges(select, source.table);
  if ('refused' in ranges) return ranges;
  const paths = new PathReader(bindings, ranges.table, ranges.unnests);
  const where: FinishCondition[] = [];
  if (select.where && !source.whereHeld) {
    for (const condition of source.unapplied ?? []) {
      const compiled = finishCondition(condition, (expr) => paths.read(expr, ranges.unnests.length));
      if (!compiled) return refused('a condition of its WHERE the scan did not apply is not one the service evaluates');
      where.push(compiled);
    }
  }
  const unnests: ServiceFinish['unnests'] = [];
  const unnestTypes: SqlType[] = [];
  for (const [index, { relation, join }] of ranges.unnests.entries()) {
    const array = relation.array;
    const path = array.kind === 'identifier' ? paths.read(array, index) : undefined;
    if (!path) return refused('an UNNEST reads something other than a column or a record field');
    const type = staticType(path, source.columns, unnestTypes);
    if (type === undefined || (type.kind !== 'array' && type.kind !== 'unknown')) return refused('an UNNEST reads a value that is not an array');
    unnestTypes.push(type.kind === 'array' ? type.element : type);
    unnests.push({ array: path, join });
  }

  const columns: ServiceFinish['columns'] = [];
  for (const item of select.items) {
    if (item.kind !== 'expression') return refused('the select list has a wildcard');
    // a TIMESTAMP cast to DATETIME is the same instant as civil text in UTC (the engine's time zone)
    const cast = item.expr.kind === 'cast' && item.expr.type === 'DATETIME';
    const read = cast ? (item.expr as Extract<Expr, { kind: 'cast' }>).expr : item.expr;
    const path = read.kind === 'identifier' ? paths.read(read, unnests.length) : undefined;
    if (!path) return refused('a selected value is computed, not a column, a record field or a TIMESTAMP cast to DATETIME');
    const type = staticType(path, source.columns, unnestTypes);
    if (cast ? type?.kind !== 'timestamp' : !isPlain(type) && !isWhole(type)) return refused('a selected value is of a type converted in the engine');
    const name = item.alias ?? implicitName(item.expr);
    if (name === undefined) return refused('a selected value has no name');
    columns.push({ name, value: path, ...(cast ? { cast: 'datetime' as const } : {}) });
  }

  const order: ServiceFinish['order'] = [];
  for (const item of query.orderBy) {
    const path = orderPath(item.expr, columns, bindings, paths, unnests.length);
    if (!path) return refused('an ORDER BY key is computed, not a column, a record field or a selected name');
    if (!isPlain(staticType(path, source.columns, unnestTypes))) return refused('an ORDER BY key is a record, an array or of a type compared in the engine');
    order.push({ value: path, descending: item.descending, nulls: item.nulls ?? (item.descending ? 'last' : 'first') });
  }

  const limit = query.limit === undefined ? undefined : countLiteral(query.limit);
  const offset = query.offset === undefined ? 0 : countLiteral(query.offset);
  if ((query.limit && limit === undefined) || offset === undefined) return refused('LIMIT or OFFSET is not a number written in the query');
  // without ORDER BY the engine's order of several rows is its own
  if (order.length === 0 && !source.oneRow && !(limit !== undefined && limit <= 1 && offset === 0))
    return refused('the query has no ORDER BY and may answer several rows');
  return {
    finish: { table: source.table, unnests, columns, order, ...(limit === undefined ? {} : { limit }), offset, ...(where.length > 0 ? { where } : {}) },
  };
}

type UnnestRange = { relation: Extract<Relation, { kind: 'unnest' }>; join: 'inner' | 'left' };

/** FROM as the scan's table followed by unnests only (joined by comma, CROSS JOIN, or INNER / LEFT JOIN ... ON TRUE). */
function unnestRanges(select: Select, table: string): { table: Relation; unnests: UnnestRange[] } | { refused: string } {
  const [first, ...rest] = select.from;
  if (first?.relation.kind !== 'table' || first.relation.name.length !== 1 || first.relation.name[0] !== table)
    return { refused: 'FROM does not start with the scanned table' };
  const unnests: UnnestRange[] = [];
  const add = (relation: Relation, join: Join | undefined): boolean => {
    if (relation.kind !== 'unnest' || relation.withOffset) return false;
    const kind = unnestJoin(join);
    if (!kind) return false;
    unnests.push({ relation, join: kind });
    return true;
  };
  for (const join of first.joins) if (!add(join.relation, join)) return { refused: 'FROM joins something other than an UNNEST' };
  for (const item of rest) {
    if (item.joins.length > 0 || !add(item.relation, undefined)) return { refused: 'FROM joins something other than an UNNEST' };
  }
  return { table: first.relation, unnests };
}

function unnestJoin(join: Join | undefined): 'inner' | 'left' | undefined {
  if (!join) return 'inner';
  if (join.using) return undefined;
  const onTrue = join.on?.kind === 'boolean' && join.on.value;
  if (join.kind === 'cross' && !join.on) return 'inner';
  if (join.kind === 'inner' && onTrue) return 'inner';
  if (join.kind === 'left' && onTrue) return 'left';
  return undefined;
}

/** Identifiers as paths from the scanned table's columns or from the elements of its unnests, as the binder resolved them. */
class PathReader {
  private readonly unnestIndex: Map<Relation, number>;

  constructor(
    private readonly bindings: Bindings,
    private readonly table: Relation,
    unnests: readonly UnnestRange[],
  ) {
    this.unnestIndex = new Map(unnests.map((unnest, index) => [unnest.relation, index]));
  }

  /** The path of `expr`, which may read only the unnests before `visibleUnnests`. */
  read(expr: Expr, visibleUnnests: number): ValuePath | undefined {
    const binding = this.bindings.names.get(expr);
    if (binding?.kind === 'column' && binding.range === this.table && !binding.merged)
      return { from: 'column', column: binding.column, fields: binding.fields };
    if (binding?.kind !== 'element' || binding.offset) return undefined;
    const unnest = this.unnestIndex.get(binding.range);
    return unnest !== undefined && unnest < visibleUnnests ? { from: 'unnest', unnest, fields: binding.fields } : undefined;
  }
}

/**
 * An ORDER BY key: an ordinal or a select alias (the item's path, as the printer prints its position;
 * a cast to DATETIME orders as its TIMESTAMP), or a path of its own.
 */
function orderPath(expr: Expr, columns: ServiceFinish['columns'], bindings: Bindings, paths: PathReader, unnests: number): ValuePath | undefined {
  if (expr.kind === 'number') {
    const ordinal = /^\d+$/.test(expr.text) ? Number(expr.text) : 0;
    return columns[ordinal - 1]?.value;
  }
  if (expr.kind !== 'identifier') return undefined;
  const binding = bindings.names.get(expr);
  if (binding?.kind === 'alias') return columns.find((column) => column.name.toLowerCase() === binding.name.toLowerCase())?.value;
  return paths.read(expr, unnests);
}

/**
 * The type of a path as far as the declared columns tell (`unknown` where only the rows will);
 * undefined where the path cannot be read (fields of a value that is no record).
 */
function staticType(path: ValuePath, columns: readonly TableColumn[], unnestTypes: readonly SqlType[]): SqlType | undefined {
  let type: SqlType | undefined = path.from === 'column' ? columns.find((column) => column.name === path.column)?.type : unnestTypes[path.unnest];
  if (type === undefined) return undefined;
  for (const field of path.fields) {
    if (type.kind === 'unknown') return type;
    if (type.kind !== 'struct') return undefined;
    type = type.fields.find((candidate) => candidate.name.toLowerCase() === field.toLowerCase())?.type ?? { kind: 'unknown' };
  }
  return type;
}

function isPlain(type: SqlType | undefined): boolean {
  return type !== undefined && PLAIN_TYPES.has(type.kind);
}

/** A record or an array selected as it is: the evaluator converts it by the type the engine infers from the rows. */
function isWhole(type: SqlType | undefined): boolean {
  return type?.kind === 'struct' || type?.kind === 'array';
}

function countLiteral(expr: Expr): number | undefined {
  if (expr.kind !== 'number' || !/^\d+$/.test(expr.text)) return undefined;
  const value = Number(expr.text);
  return Number.isSafeInteger(value) ? value : undefined;
}
