import type { Query } from './syntax.ts';
import { walk } from './walk.ts';

/** What of the request a query reads besides its tables: an `@parameter`, or the clock (CURRENT_TIMESTAMP and its kin). */
export interface RequestValues {
  parameters: boolean;
  clock: boolean;
}

/** The functions whose value is the request's clock. */
const CLOCK_FUNCTIONS = new Set(['current_timestamp', 'current_datetime', 'current_date']);

const known = new WeakMap<Query, RequestValues>();

/**
 * Whether the query reads a parameter or the clock anywhere (subqueries and CTEs included): where
 * it reads neither, what is made from its tree alone is the same for every request. Kept per tree.
 */
export function requestValuesRead(query: Query): RequestValues {
  const kept = known.get(query);
  if (kept) return kept;
  const read: RequestValues = { parameters: false, clock: false };
  walk(query, {
    expr: (expr) => {
      if (expr.kind === 'parameter') read.parameters = true;
      else if (expr.kind === 'call' && CLOCK_FUNCTIONS.has(expr.name.toLowerCase())) read.clock = true;
      else if (expr.kind === 'identifier' && expr.path.length === 1 && CLOCK_FUNCTIONS.has(expr.path[0]!.toLowerCase())) read.clock = true;
    },
  });
  known.set(query, read);
  return read;
}
