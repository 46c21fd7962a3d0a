/**
 * The residual query's printer: a validated sandbox query (src/sql/syntax.ts) as DuckDB SQL with
 * BigQuery's meaning, and its output columns with their types. Pure.
 */
import { InvalidQuery } from '../../errors.ts';
import { bind } from '../../sql/bind.ts';
import { environmentOfTables } from '../../sql/bindings.ts';
import type { Query } from '../../sql/syntax.ts';
import type { SqlType } from '../../sql/types.ts';
import { QueryTranslator, type TranslationContext } from './query.ts';

export type { TranslationContext } from './query.ts';

export interface DuckDbQuery {
  sql: string;
  columns: { name: string; type: SqlType }[];
}

/**
 * `context.tables` are the tables the executor loads into DuckDB under exactly those names;
 * `context.now` (epoch ms) is what CURRENT_TIMESTAMP() means, so a query is deterministic.
 */
export function translateToDuckDb(query: Query, context: TranslationContext): DuckDbQuery {
  const bindings = context.bindings ?? bind(query, environmentOfTables(context.tables));
  const result = new QueryTranslator(context, bindings).query(query, undefined, undefined);
  // BigQuery refuses a result with two columns of the same name (and a JSON row could not hold them)
  const seen = new Set<string>();
  for (const column of result.columns) {
    const key = column.name.toLowerCase();
    if (seen.has(key)) throw new InvalidQuery(`Duplicate column names in the result are not supported. Found duplicate(s): ${column.name}`);
    seen.add(key);
  }
  return { sql: result.sql, columns: result.columns.map(({ name, type }) => ({ name, type })) };
}
