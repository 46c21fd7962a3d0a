/**
 * GROUP BY ALL, read as BigQuery infers it: the keys are the select items that hold no aggregate
 * or window call and read a name (a constant or a parameter alone is no key). It becomes GROUP BY
 * of those items' ordinals, so the planner and the printer see an ordinary GROUP BY.
 */
import { InvalidQuery, type QueryPosition } from '../errors.ts';
import { isAggregateCall } from './functions.ts';
import type { Expr, SelectItem } from './syntax.ts';
import { childExpressions } from './walk.ts';

export function groupByAllKeys(items: readonly SelectItem[], position?: QueryPosition): Expr[] {
  const keys: Expr[] = [];
  let aggregated = false;
  items.forEach((item, index) => {
    if (item.kind === 'wildcard') {
      throw new InvalidQuery('GROUP BY ALL with SELECT * is not supported; name the columns to group by', item.position ?? position);
    }
    const found = inspect(item.expr);
    aggregated ||= found.aggregateOrWindow;
    if (found.aggregateOrWindow || !found.readsName) return;
    keys.push({ kind: 'number', text: String(index + 1), ...(item.position ? { position: item.position } : {}) });
  });
  // BigQuery reads an empty key set as one group of all rows; without an aggregate there is no way to say that here
  if (keys.length === 0 && !aggregated) {
    throw new InvalidQuery('GROUP BY ALL found no column to group by and no aggregate; name the grouping columns', position);
  }
  return keys;
}

/** What an item holds at its own query level (subqueries are their own). */
function inspect(expr: Expr): { aggregateOrWindow: boolean; readsName: boolean } {
  const found = { aggregateOrWindow: false, readsName: false };
  const pending = [expr];
  for (let next = pending.pop(); next; next = pending.pop()) {
    if (next.kind === 'call' && (next.over !== undefined || isAggregateCall(next))) found.aggregateOrWindow = true;
    if (next.kind === 'identifier') found.readsName = true;
    pending.push(...childExpressions(next));
  }
  return found;
}
