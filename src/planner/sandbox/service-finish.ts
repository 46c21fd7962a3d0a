import { implicitName, type Bindings } from '../../sql/bindings.ts';
import { isAggregateCall } from '../../sql/functions.ts';
import type { Expr, Query, Select } from '../../sql/syntax.ts';
import type { SqlType } from '../../sql/types.ts';
import { subqueryOf, walk } from '../../sql/walk.ts';
import type { ServiceFinish, ValuePath } from '../plan.ts';
import { readScan, staticType, countLiteral, type FinishDecision, type FinishSource, type PathReader } from './scan-reading.ts';
import { decideServiceGroups } from './service-groups.ts';

export type { FinishDecision, FinishSource } from './scan-reading.ts';

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
  if (select.groupBy.length > 0 || hasAggregate(select)) return decideServiceGroups(query, select, bindings, source);
  if (select.having || select.qualify) return refused('the query filters groups or windows');
  if (select.where && !source.whereHeld && !source.unapplied) return refused("its WHERE is not exactly the scan's filter");

  const scan = readScan(select, bindings, source);
  if ('refused' in scan) return scan;
  const { paths, unnests, unnestTypes, where, supersetWhere } = scan;

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
    finish: {
      table: source.table,
      unnests,
      columns,
      order,
      ...(limit === undefined ? {} : { limit }),
      offset,
      ...(where.length > 0 ? { where } : {}),
      ...(supersetWhere ? { supersetWhere } : {}),
    },
  };
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

function isPlain(type: SqlType | undefined): boolean {
  return type !== undefined && PLAIN_TYPES.has(type.kind);
}

/** A record or an array selected as it is: the evaluator converts it by the type the engine infers from the rows. */
function isWhole(type: SqlType | undefined): boolean {
  return type?.kind === 'struct' || type?.kind === 'array';
}

/** Whether the select list or HAVING calls an aggregate outside its subqueries (the SELECT makes groups). */
function hasAggregate(select: Select): boolean {
  let found = false;
  const visitor = {
    expr: (expr: Expr): boolean => {
      if (expr.kind === 'call' && isAggregateCall(expr)) found = true;
      return !found && subqueryOf(expr) === undefined;
    },
  };
  for (const item of select.items) if (item.kind === 'expression') walk(item.expr, visitor);
  if (select.having) walk(select.having, visitor);
  return found;
}
