import type { ResidualQuery } from '../planner/plan.ts';
import type { Bindings } from '../sql/bindings.ts';
import type { Query } from '../sql/syntax.ts';
import type { TableSchema } from '../sql/types.ts';
import { requestValuesRead } from '../sql/request-values.ts';
import { translateToDuckDb, type DuckDbQuery } from './duckdb-sql/index.ts';

export interface TranslationLimits {
  maxChars: number;
  maxValueBytes: number;
}

/** Translations kept per table shapes and limits: few per query (a record column's inferred type varies with the rows), the oldest let go. */
const KEPT_PER_QUERY = 8;

/**
 * The printer is pure: a residual query whose tree and bindings are shared by every request of its
 * text (a frozen plan part) translates to the same DuckDB text over the same tables, unless it reads
 * the request's parameters or clock. Those translations are made once and kept with the tree.
 */
const kept = new WeakMap<Query, WeakMap<Bindings, Map<string, DuckDbQuery>>>();

/** The residual query translated over `tables` (`tablesKey`: their JSON, which the caller has made anyway). */
export function translateResidual(residual: ResidualQuery, tables: TableSchema[], tablesKey: string, limits: TranslationLimits): DuckDbQuery {
  const translate = () =>
    translateToDuckDb(residual.query, {
      tables,
      bindings: residual.bindings,
      parameters: residual.parameters,
      now: residual.now,
      maxChars: limits.maxChars,
      maxValueBytes: limits.maxValueBytes,
    });
  // a tree not frozen is the request's own (an aggregation's rewrite): nothing to share
  const reads = requestValuesRead(residual.query);
  if (!Object.isFrozen(residual.query) || reads.parameters || reads.clock) return translate();
  const byBindings = kept.get(residual.query) ?? new WeakMap<Bindings, Map<string, DuckDbQuery>>();
  kept.set(residual.query, byBindings);
  const translations = byBindings.get(residual.bindings) ?? new Map<string, DuckDbQuery>();
  byBindings.set(residual.bindings, translations);
  const key = `${limits.maxChars}\u0000${limits.maxValueBytes}\u0000${tablesKey}`;
  const known = translations.get(key);
  if (known) return known;
  const translation = translate();
  Object.freeze(translation.columns);
  translations.set(key, Object.freeze(translation));
  if (translations.size > KEPT_PER_QUERY) translations.delete(translations.keys().next().value!);
  return translation;
}
