import { isAggregateCall } from '../../sql/functions.ts';
import type { Expr, Select } from '../../sql/syntax.ts';
import { subqueryOf, walk } from '../../sql/walk.ts';

/**
 * Whether a SELECT gives one row per row it reads: no GROUP BY, HAVING, QUALIFY or DISTINCT, and no
 * aggregate or window call among its items (a subquery's own calls do not count). What a pushed
 * LIMIT and a service-finished union branch both need.
 */
export function isRowWise(select: Select): boolean {
  if (select.groupBy.length > 0 || select.having || select.qualify || select.distinct) return false;
  let found = false;
  const visitor = {
    expr: (expr: Expr): boolean => {
      if (expr.kind === 'call' && (expr.over !== undefined || isAggregateCall(expr))) found = true;
      return !found && subqueryOf(expr) === undefined;
    },
  };
  for (const item of select.items) if (item.kind === 'expression') walk(item.expr, visitor);
  return !found;
}
