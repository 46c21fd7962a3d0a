/** Where an expression is translated: what it may see and contain, and the query's budget. */
import type { Bindings } from '../../sql/bindings.ts';
import type { Query } from '../../sql/syntax.ts';
import type { ParameterValue } from '../../sql/types.ts';
import type { SqlBudget } from './budget.ts';
import type { ColumnShape, Scope } from './scope.ts';

/** A select-list column, as GROUP BY, HAVING, QUALIFY and ORDER BY may name it. */
export interface SelectColumn extends ColumnShape {
  sql: string;
  /** The item contains an aggregate (GROUP BY may not name it). */
  aggregate: boolean;
}

export interface QueryResult {
  sql: string;
  columns: ColumnShape[];
}

/** What an expression may see and contain where it stands. */
export interface ExprContext {
  scope: Scope;
  /** What each name of the query means (src/sql/bind.ts). */
  bindings: Bindings;
  /** Translates a subquery whose FROM clause sees `scope` as its outer scope. */
  subquery(query: Query, outer: Scope): QueryResult;
  parameters: Record<string, ParameterValue | undefined>;
  now: number;
  /** Where the expression stands, for messages ("WHERE", "GROUP BY"). */
  clause: string;
  aggregates: boolean;
  windows: boolean;
  /** Select-list aliases visible here (GROUP BY, HAVING, QUALIFY, ORDER BY), preferred to FROM names. */
  aliases?: SelectColumn[];
  /** Set when an aggregate or window function was translated. */
  seen: { aggregate: boolean };
  /** The whole query's translation budget, which every expression is checked against as it is built. */
  budget: SqlBudget;
  /** The largest string or array a function may build in the engine (SANDBOX_MAX_RESULT_BYTES). */
  maxValueBytes: number;
}
