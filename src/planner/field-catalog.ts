import type { estypes } from '@elastic/elasticsearch';

/**
 * What Elasticsearch mapped each field of an index as, so the planner pushes a predicate down only
 * where the store compares the way SQL would (a numeric range on a numeric field, a term on a
 * keyword). Read from the store by the executor; the planner only consults it.
 */
export interface FieldCatalog {
  /** The mapped type (`keyword`, `long`, `double`, `boolean`, `date_nanos`, `text`, `nested`, `object`...), `conflict` when indices disagree, undefined when unmapped. */
  typeOf(field: string): string | undefined;
  /** The names of the fields directly inside `path` (`request` for `metadata`), as mapped. */
  fieldsUnder(path: string): readonly string[];
}

/** A catalog from a field -> type list (as field_caps reports it). */
export function fieldCatalog(types: Record<string, string>): FieldCatalog {
  const children = new Map<string, Set<string>>();
  for (const field of Object.keys(types)) {
    // every step of a path is inside the one before, whether or not the list names the parent
    const parts = field.split('.');
    for (let length = 1; length < parts.length; length += 1) {
      const parent = parts.slice(0, length).join('.');
      const names = children.get(parent) ?? new Set();
      names.add(parts[length]!);
      children.set(parent, names);
    }
  }
  return { typeOf: (field) => (Object.hasOwn(types, field) ? types[field] : undefined), fieldsUnder: (path) => [...(children.get(path) ?? [])] };
}

export const EMPTY_CATALOG: FieldCatalog = fieldCatalog({});

export const NUMERIC_FIELD_TYPES = new Set(['long', 'integer', 'short', 'byte', 'double', 'float', 'half_float', 'scaled_float', 'unsigned_long']);

/** The outermost nested records a field lives in, if any (aggregations on it must enter them). */
export function nestedAncestor(path: string, catalog: FieldCatalog): string | undefined {
  const parts = path.split('.');
  for (let length = 1; length < parts.length; length += 1) {
    const prefix = parts.slice(0, length).join('.');
    if (catalog.typeOf(prefix) === 'nested') return prefix;
  }
  return undefined;
}

/** A query on a field wrapped in one `nested` query per nested ancestor, innermost first, so it matches any record. */
export function inNestedRecords(path: string, query: estypes.QueryDslQueryContainer, catalog: FieldCatalog): estypes.QueryDslQueryContainer {
  const parts = path.split('.');
  let wrapped = query;
  for (let length = parts.length - 1; length > 0; length -= 1) {
    const prefix = parts.slice(0, length).join('.');
    if (catalog.typeOf(prefix) === 'nested') wrapped = { nested: { path: prefix, query: wrapped } };
  }
  return wrapped;
}
