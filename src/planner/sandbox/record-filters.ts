import type { estypes } from '@elastic/elasticsearch';
import { SHAPE_FIELDS } from '../../../shared/stored-event.ts';
import type { Expr } from '../../sql/syntax.ts';
import { truthOf, type PredicateContext } from './predicates.ts';
import type { RangeVariable } from './select-scope.ts';

type Query = estypes.QueryDslQueryContainer;

type Unnest = Extract<RangeVariable, { kind: 'unnest' }>;

/**
 * The events on which the record arrays at `paths` (and every array on the way to them) hold at
 * most one element and every value was indexed, as the stored shape says: there a value reached
 * through unnests is the one value the row holds, so a condition on it is the store's filter exactly.
 */
export function regularEvents(paths: readonly string[]): Query {
  const arrays = new Set<string>();
  for (const path of paths) {
    const parts = path.split('.');
    for (let length = 1; length <= parts.length; length += 1) arrays.add(parts.slice(0, length).join('.'));
  }
  const unindexed: Query = { exists: { field: '_ignored' } };
  const multi: Query[] = arrays.size > 0 ? [{ terms: { [SHAPE_FIELDS.multi]: [...arrays].sort() } }] : [];
  return { bool: { filter: [{ exists: { field: SHAPE_FIELDS.version } }], must_not: [...multi, unindexed] } };
}

/** An inner unnest of an empty or missing array yields no row for the event: the arrays each inner unnest needs. */
export function presentArrays(unnests: readonly Unnest[]): Query[] {
  return unnests.filter((unnest) => unnest.join === 'inner').map((unnest): Query => ({ term: { [SHAPE_FIELDS.arrays]: unnest.path } }));
}

export interface RecordFilter {
  /** The events that can give a row passing WHERE: exactly those for regular events, a superset of the others. */
  query: Query;
  /** The regular events `query` matches: exactly those with one row, which passes WHERE. */
  regular: Query;
  /** The other events `query` matches, only as a superset (each may give no row, or several). */
  irregular: Query;
}

/**
 * WHERE over one scan and unnests of its record arrays, as one filter: for a regular event (see
 * regularEvents) it has one row, or none when an inner unnest's array is missing, and the filter is
 * the rows' condition in three-valued logic (`truthOf`); any other event, and a regular one on which
 * the store cannot tell what the engine would make of a value (a CAST of text: `unsure`), passes when
 * `supersets` (the conditions' filters over any element) do, and the residual WHERE, always applied, decides.
 * Undefined when some condition has no exact translation.
 */
export function recordFilter(
  conditions: readonly Expr[],
  unnests: readonly Unnest[],
  supersets: readonly Query[],
  context: PredicateContext,
): RecordFilter | undefined {
  const truths = conditions.map((condition) => truthOf(condition, context, { unsureCasts: true }));
  if (truths.some((truth) => truth === undefined)) return undefined;
  const regular = regularEvents([...unnests.map((unnest) => unnest.path), ...truths.flatMap((truth) => truth!.paths)]);
  const exact: Query = { bool: { filter: [regular, ...presentArrays(unnests), ...truths.map((truth) => truth!.whenTrue)] } };
  // a regular event the store cannot decide (a CAST that may fail) is read whole with the irregular ones, so none of them goes unseen
  const unsure = truths.flatMap((truth) => (truth!.unsure ? [truth!.unsure] : []));
  const decided: Query = unsure.length === 0 ? regular : { bool: { filter: [regular], must_not: unsure } };
  const irregular: Query = { bool: { filter: [...supersets], must_not: [decided] } };
  return { query: { bool: { should: [exact, irregular], minimum_should_match: 1 } }, regular: exact, irregular };
}
