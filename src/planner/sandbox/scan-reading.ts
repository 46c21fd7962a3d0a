import type { Bindings } from '../../sql/bindings.ts';
import type { Expr, Join, Relation, Select } from '../../sql/syntax.ts';
import type { SqlType, TableColumn } from '../../sql/types.ts';
import type { FinishCondition, ServiceFinish, ServiceGroupFinish, ValuePath } from '../plan.ts';
import { finishCondition } from './finish-conditions.ts';

/** The one scan a residual query reads, as far as the planner knows it before any row. */
export interface FinishSource {
  table: string;
  columns: readonly TableColumn[];
  /** The scan's filter is the SELECT's WHERE exactly (for the rows of its exact part). */
  whereHeld: boolean;
  /** The conjuncts of WHERE the scan's filter did not apply exactly on their own (it matched a superset of their rows), when known. */
  unapplied?: readonly Expr[];
  /** The scan gives one row whatever the data (an aggregation without keys). */
  oneRow: boolean;
}

export type FinishDecision = { finish: ServiceFinish | ServiceGroupFinish } | { refused: string };

/** How a SELECT reads its one scan: its unnests, the paths of its names, and the conditions of WHERE the service applies. */
export interface ScanReading {
  paths: PathReader;
  unnests: ServiceFinish['unnests'];
  unnestTypes: SqlType[];
  where: FinishCondition[];
  /** The conditions the scan left, for the rows of its superset part when its filter is WHERE exactly for the rest; none when one is not the service's. */
  supersetWhere: FinishCondition[] | undefined;
}

/** FROM and WHERE of a SELECT over the scan, as the service reads them, or the reason it cannot. */
export function readScan(select: Select, bindings: Bindings, source: FinishSource): ScanReading | { refused: string } {
  const refused = (reason: string) => ({ refused: reason });
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
  // the scan's superset part, when it has one, is checked by the conditions it left; the finish declines those rows without them
  const left = select.where ? (source.unapplied ?? []) : [];
  const compiledLeft = left.map((condition) => finishCondition(condition, (expr) => paths.read(expr, ranges.unnests.length)));
  const supersetWhere = source.whereHeld && compiledLeft.every((condition) => condition !== undefined) ? (compiledLeft as FinishCondition[]) : undefined;
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
  return { paths, unnests, unnestTypes, where, supersetWhere };
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
export class PathReader {
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
 * The type of a path as far as the declared columns tell (`unknown` where only the rows will);
 * undefined where the path cannot be read (fields of a value that is no record).
 */
export function staticType(path: ValuePath, columns: readonly TableColumn[], unnestTypes: readonly SqlType[]): SqlType | undefined {
  let type: SqlType | undefined = path.from === 'column' ? columns.find((column) => column.name === path.column)?.type : unnestTypes[path.unnest];
  if (type === undefined) return undefined;
  for (const field of path.fields) {
    if (type.kind === 'unknown') return type;
    if (type.kind !== 'struct') return undefined;
    type = type.fields.find((candidate) => candidate.name.toLowerCase() === field.toLowerCase())?.type ?? { kind: 'unknown' };
  }
  return type;
}

export function countLiteral(expr: Expr): number | undefined {
  if (expr.kind !== 'number' || !/^\d+$/.test(expr.text)) return undefined;
  const value = Number(expr.text);
  return Number.isSafeInteger(value) ? value : undefined;
}
