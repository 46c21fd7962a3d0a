/**
 * What Elasticsearch mapped each field of an index as, so the planner pushes a predicate down only
 * where the store compares the way SQL would (a numeric range on a numeric field, a term on a
 * keyword). Read from the store by the executor; the planner only consults it.
 */
export interface FieldCatalog {
  /** The mapped type (`keyword`, `long`, `double`, `boolean`, `date_nanos`, `text`, `nested`, `object`...), `conflict` when indices disagree, undefined when unmapped. */
  typeOf(field: string): string | undefined;
}

/** A catalog from a field -> type list (as field_caps reports it). */
export function fieldCatalog(types: Record<string, string>): FieldCatalog {
  return { typeOf: (field) => types[field] };
}

export const NUMERIC_FIELD_TYPES = new Set(['long', 'integer', 'short', 'byte', 'double', 'float', 'half_float', 'scaled_float', 'unsigned_long']);
