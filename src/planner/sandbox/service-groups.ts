import { implicitName, type Bindings } from '../../sql/bindings.ts';
import type { Expr, Query, Select } from '../../sql/syntax.ts';
import type { SqlType } from '../../sql/types.ts';
import type { GroupAggregate, GroupKey, GroupOutput, ServiceGroupFinish, ValuePath } from '../plan.ts';
import { finishCondition, operandOf } from './finish-conditions.ts';
import { countLiteral, readScan, staticType, type FinishDecision, type FinishSource, type ScanReading } from './scan-reading.ts';

/** Key types the service groups by exactly as the engine does (a FLOAT64's -0 and NaN are the engine's). */
const KEY_TYPES = new Set<SqlType['kind']>(['string', 'int64', 'bool', 'timestamp', 'unknown']);
/** Types MIN and MAX order here as the engine does; SUM is of INT64 only (its other sums are DuckDB's own arithmetic). */
const ORDERED_TYPES = new Set<SqlType['kind']>(['string', 'int64', 'bool', 'timestamp', 'unknown']);
const SUMMED_TYPES = new Set<SqlType['kind']>(['int64', 'unknown']);
const COUNTED_TYPES = new Set<SqlType['kind']>(['string', 'int64', 'float64', 'bool', 'timestamp', 'unknown']);
const TRUNC_UNITS = new Set(['minute', 'hour', 'day']);

/**
 * Whether a SELECT that groups (GROUP BY, or aggregates without it) is one the service finishes over
 * its scan's rows (ServiceGroupFinish): every key a column or record field, JSON_VALUE of one at
 * `$.a.b`, or TIMESTAMP_TRUNC of a TIMESTAMP to MINUTE, HOUR or DAY; every selected value a key or
 * COUNT(*), COUNT([DISTINCT] x), COUNTIF(condition), SUM(x) of INT64, MIN(x) or MAX(x); HAVING a
 * condition on selected columns named by their aliases; ORDER BY
 * selected columns, keys or those aggregates; LIMIT and OFFSET written as numbers. Whether the rows
 * hold values of the types it compares exactly, and whether the order is total over the answer, is
 * known only from the rows (the executor declines then). Anything else is refused with the reason. Pure.
 */
export function decideServiceGroups(query: Query, select: Select, bindings: Bindings, source: FinishSource): FinishDecision {
  const refused = (reason: string): FinishDecision => ({ refused: reason });
  if (select.rollup) return refused('GROUP BY ROLLUP adds subtotal rows');
  if (select.qualify) return refused('the query filters windows');
  if (select.where && !source.whereHeld && !source.unapplied) return refused("its WHERE is not exactly the scan's filter");
  const scan = readScan(select, bindings, source);
  if ('refused' in scan) return scan;
  const reader = new GroupReader(scan, source);

  const keys: GroupKey[] = [];
  for (const written of select.groupBy) {
    const expr = groupedExpr(written, select, bindings);
    const key = expr && reader.key(expr);
    if (!key) return refused('a GROUP BY key is computed, not a column, a record field, JSON_VALUE of one or TIMESTAMP_TRUNC of a timestamp');
    keys.push(key);
  }
  const aggregates: GroupAggregate[] = [];
  const output = (expr: Expr): GroupOutput | undefined => {
    if (expr.kind === 'call' && AGGREGATES.has(expr.name)) {
      const aggregate = reader.aggregate(expr);
      return aggregate && { from: 'aggregate', index: indexOf(aggregates, aggregate) };
    }
    const key = reader.key(expr);
    const index = key ? keys.findIndex((candidate) => sameJson(candidate, key)) : -1;
    return index >= 0 ? { from: 'key', index } : undefined;
  };

  const columns: ServiceGroupFinish['columns'] = [];
  for (const item of select.items) {
    if (item.kind !== 'expression') return refused('the select list has a wildcard');
    const value = output(item.expr);
    if (!value) return refused('a selected value is neither a grouping key nor an aggregate the service computes');
    const name = item.alias ?? implicitName(item.expr);
    if (name === undefined) return refused('a selected value has no name');
    columns.push({ name, value });
  }

  let having: ServiceGroupFinish['having'];
  if (select.having) {
    having = finishCondition(select.having, (expr) => namedColumn(expr, columns, bindings));
    if (!having) return refused('its HAVING is not a condition on selected columns, by their names, that the service evaluates');
  }

  const order: ServiceGroupFinish['order'] = [];
  for (const item of query.orderBy) {
    const value = selectedColumn(item.expr, columns, bindings) ?? output(item.expr);
    if (!value) return refused('an ORDER BY key is neither a selected column, a grouping key nor an aggregate the service computes');
    order.push({ value, descending: item.descending, nulls: item.nulls ?? (item.descending ? 'last' : 'first') });
  }

  const limit = query.limit === undefined ? undefined : countLiteral(query.limit);
  const offset = query.offset === undefined ? 0 : countLiteral(query.offset);
  if ((query.limit && limit === undefined) || offset === undefined) return refused('LIMIT or OFFSET is not a number written in the query');
  return {
    finish: {
      table: source.table,
      unnests: scan.unnests,
      ...(scan.where.length > 0 ? { where: scan.where } : {}),
      groups: { keys, aggregates },
      columns,
      ...(having ? { having } : {}),
      order,
      ...(limit === undefined ? {} : { limit }),
      offset,
    },
  };
}

const AGGREGATES = new Set(['count', 'countif', 'sum', 'min', 'max']);

/** A GROUP BY item as the expression it groups by: an ordinal or a select alias names a select item's. */
function groupedExpr(expr: Expr, select: Select, bindings: Bindings): Expr | undefined {
  const named = (predicate: (item: Select['items'][number]) => boolean) => {
    const item = select.items.find(predicate);
    return item?.kind === 'expression' ? item.expr : undefined;
  };
  if (expr.kind === 'number') return named((item) => select.items.indexOf(item) === Number(expr.text) - 1);
  const binding = expr.kind === 'identifier' ? bindings.names.get(expr) : undefined;
  if (binding?.kind !== 'alias') return expr;
  const alias = binding.name.toLowerCase();
  return named((item) => item.kind === 'expression' && (item.alias ?? implicitName(item.expr))?.toLowerCase() === alias);
}

/** A name in HAVING as the path of the select column it names (by the binder's alias), when it names one. */
function namedColumn(expr: Expr, columns: ServiceGroupFinish['columns'], bindings: Bindings): ValuePath | undefined {
  const binding = expr.kind === 'identifier' ? bindings.names.get(expr) : undefined;
  if (binding?.kind !== 'alias') return undefined;
  const named = columns.filter((column) => column.name.toLowerCase() === binding.name.toLowerCase());
  return named.length === 1 ? { from: 'column', column: named[0]!.name, fields: [] } : undefined;
}

/** An ORDER BY item naming a select column: an ordinal or an alias the binder found. */
function selectedColumn(expr: Expr, columns: ServiceGroupFinish['columns'], bindings: Bindings): GroupOutput | undefined {
  if (expr.kind === 'number') return /^\d+$/.test(expr.text) ? columns[Number(expr.text) - 1]?.value : undefined;
  const binding = expr.kind === 'identifier' ? bindings.names.get(expr) : undefined;
  if (binding?.kind !== 'alias') return undefined;
  return columns.find((column) => column.name.toLowerCase() === binding.name.toLowerCase())?.value;
}

/** Keys and aggregates compiled over the scan's paths, with the types the declared columns give them. */
class GroupReader {
  constructor(
    private readonly scan: ScanReading,
    private readonly source: FinishSource,
  ) {}

  /** A value to group by or aggregate: a path, JSON_VALUE of one, or TIMESTAMP_TRUNC of a timestamp; with its type. */
  value(expr: Expr): { key: GroupKey; type: SqlType } | undefined {
    if (expr.kind === 'call' && expr.name === 'timestamp_trunc') {
      const [value, part] = expr.args;
      if (expr.args.length !== 2 || expr.over || part?.kind !== 'date_part' || !TRUNC_UNITS.has(part.part)) return undefined;
      const path = value?.kind === 'identifier' ? this.read(value) : undefined;
      if (!path || this.typeOf(path)?.kind !== 'timestamp') return undefined;
      return { key: { operand: { value: path }, trunc: part.part as GroupKey['trunc'] }, type: { kind: 'timestamp' } };
    }
    const operand = operandOf(expr, (identifier) => this.read(identifier));
    if (!operand || operand.cast) return undefined;
    const type = this.typeOf(operand.value);
    if (type === undefined) return undefined;
    if (operand.json) return type.kind === 'string' || type.kind === 'unknown' ? { key: { operand }, type: { kind: 'string' } } : undefined;
    return { key: { operand }, type };
  }

  key(expr: Expr): GroupKey | undefined {
    const value = this.value(expr);
    return value && KEY_TYPES.has(value.type.kind) ? value.key : undefined;
  }

  aggregate(call: Extract<Expr, { kind: 'call' }>): GroupAggregate | undefined {
    if (call.over || call.ignoreNulls || call.orderBy || call.limit) return undefined;
    if (call.name === 'count' && call.star) return { fn: 'count', distinct: false };
    if (call.args.length !== 1 || call.star) return undefined;
    const arg = call.args[0]!;
    if (call.name === 'countif') {
      const condition = call.distinct ? undefined : finishCondition(arg, (identifier) => this.read(identifier));
      return condition && { fn: 'countif', condition };
    }
    const value = this.value(arg);
    if (!value) return undefined;
    const kind = value.type.kind;
    if (call.name === 'count')
      return (call.distinct ? KEY_TYPES : COUNTED_TYPES).has(kind) ? { fn: 'count', operand: value.key, distinct: call.distinct } : undefined;
    if (call.distinct) return undefined;
    const types = call.name === 'sum' ? SUMMED_TYPES : ORDERED_TYPES;
    return types.has(kind) ? { fn: call.name as 'sum' | 'min' | 'max', operand: value.key } : undefined;
  }

  private read(expr: Expr) {
    return this.scan.paths.read(expr, this.scan.unnests.length);
  }

  private typeOf(path: GroupKey['operand']['value']): SqlType | undefined {
    return staticType(path, this.source.columns, this.scan.unnestTypes);
  }
}

/** The position of an aggregate among those computed, added when it is not one already. */
function indexOf(aggregates: GroupAggregate[], aggregate: GroupAggregate): number {
  const index = aggregates.findIndex((candidate) => sameJson(candidate, aggregate));
  if (index >= 0) return index;
  aggregates.push(aggregate);
  return aggregates.length - 1;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
