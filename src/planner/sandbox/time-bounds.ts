import type { TimeBounds } from '../../../shared/partitions.ts';
import { millisFromNanosText } from '../../../shared/stored-timestamp.ts';
import type { Expr } from '../../sql/syntax.ts';
import { timestampConstant, type PredicateContext } from './predicates.ts';

type Side = 'from' | 'to';

/** Which side of the range `timestamp <op> constant` bounds; `=` bounds both. */
const SIDES: Partial<Record<string, Side[]>> = { '<': ['to'], '<=': ['to'], '>': ['from'], '>=': ['from'], '=': ['from', 'to'] };
const FLIPPED: Partial<Record<string, string>> = { '<': '>', '<=': '>=', '>': '<', '>=': '<=', '=': '=' };

/**
 * Where every event of a scan lies in time, from the WHERE conjuncts pushed into it exactly: each
 * one compares the scan's own `timestamp` with a constant the planner fixed. Its filter is in the
 * scan, so the bounds only pick the partitions to search; anything else (OR, NOT, another column,
 * a value known only at run time) bounds nothing. Milliseconds rounded outwards.
 */
export function timeBoundsOf(pushedConjuncts: readonly Expr[], context: PredicateContext): TimeBounds {
  let fromMs = -Infinity;
  let toMs = Infinity;
  for (const condition of pushedConjuncts) {
    for (const { side, bound } of boundsOf(condition, context)) {
      if (side === 'from') fromMs = Math.max(fromMs, millisFromNanosText(bound, 'down') ?? -Infinity);
      else toMs = Math.min(toMs, millisFromNanosText(bound, 'up') ?? Infinity);
    }
  }
  return { ...(Number.isFinite(fromMs) ? { fromMs } : {}), ...(Number.isFinite(toMs) ? { toMs } : {}) };
}

function boundsOf(condition: Expr, context: PredicateContext): { side: Side; bound: string }[] {
  if (condition.kind === 'between') {
    if (condition.negated || !isTimestamp(condition.expr, context)) return [];
    return [...constantBound('from', condition.low, context), ...constantBound('to', condition.high, context)];
  }
  if (condition.kind !== 'binary') return [];
  if (isTimestamp(condition.left, context)) return sidesOf(condition.operator, condition.right, context);
  if (isTimestamp(condition.right, context)) return sidesOf(FLIPPED[condition.operator], condition.left, context);
  return [];
}

function sidesOf(operator: string | undefined, value: Expr, context: PredicateContext): { side: Side; bound: string }[] {
  const sides = operator === undefined ? undefined : SIDES[operator];
  return sides ? sides.flatMap((side) => constantBound(side, value, context)) : [];
}

function constantBound(side: Side, value: Expr, context: PredicateContext): { side: Side; bound: string }[] {
  const bound = timestampConstant(value, context.now);
  return bound === undefined ? [] : [{ side, bound }];
}

function isTimestamp(expr: Expr, context: PredicateContext): boolean {
  const field = context.scope.resolve(expr);
  return field?.kind === 'column' && field.column === 'timestamp';
}
