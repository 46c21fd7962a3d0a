import { SandboxViolation } from '../errors.ts';
import { tableKey } from '../sql/index.ts';
import type { CommonTableExpression, Query } from '../sql/syntax.ts';
import { walk } from '../sql/walk.ts';

/** The names of the CTEs an operator's saved SQL defines: a caller's `sql` may read them besides the endpoint's tables. */
export function savedCteNames(saved: Query): string[] {
  return saved.with.map((cte) => cte.name);
}

/**
 * A caller's query over an operator's endpoint, with the saved query's CTEs it reads (directly or
 * through one another) put before its own: the sandbox then plans one query, each CTE's reads of
 * the endpoint's tables scoped as always. CTEs the caller does not read are left out, so they cost
 * no scan. A caller's CTE may not take a saved CTE's name: what that name means would be unclear.
 */
export function withSavedCtes(saved: Query, caller: Query): Query {
  const savedByKey = new Map(saved.with.map((cte) => [tableKey(cte.name), cte]));
  for (const own of caller.with) {
    if (savedByKey.has(tableKey(own.name))) {
      throw new SandboxViolation(`the endpoint's saved query already defines ${own.name}; give your CTE another name`, own.position);
    }
  }
  const needed = new Set<string>();
  const visit = (query: Query) => {
    for (const name of tablesRead(query)) {
      const cte = savedByKey.get(name);
      if (cte && !needed.has(name)) {
        needed.add(name);
        visit(cte.query);
      }
    }
  };
  visit(caller);
  const kept: CommonTableExpression[] = saved.with.filter((cte) => needed.has(tableKey(cte.name)));
  return { ...caller, with: [...kept, ...caller.with] };
}

/** The one-part table names a query reads anywhere (its CTEs and subqueries included), by tableKey. */
function tablesRead(query: Query): Set<string> {
  const names = new Set<string>();
  walk(query, {
    relation: (relation) => {
      if (relation.kind === 'table' && relation.name.length === 1) names.add(tableKey(relation.name[0]!));
    },
  });
  return names;
}
