import type { BindEnvironment, NamedShape, Shape } from '../../sql/bindings.ts';
import { shapeOfType } from '../../sql/bindings.ts';
import { freezeTree } from '../../sql/frozen-tree.ts';
import type { SqlType } from '../../sql/types.ts';
import type { FieldCatalog } from '../field-catalog.ts';

/** A table the planner's residual query reads, with the store's catalog of the source behind it (if any). */
export interface ScanTableColumns {
  table: string;
  columns: readonly { name: string; type: SqlType }[];
  catalog?: FieldCatalog;
}

/**
 * What the binder may know of the scan tables before any scan: each CTE column's declared type, and
 * for a column whose type the rows decide (metadata), the records and fields the store's mapping
 * has for the source. Which unnested record holds a bare field is so the same in every time window.
 */
export function scanEnvironment(tables: readonly ScanTableColumns[]): BindEnvironment {
  return {
    tables: tables.map(({ table, columns, catalog }) => ({
      name: table,
      columns: columns.map(
        (column): NamedShape => ({
          name: column.name,
          shape: catalog && holdsUnknown(column.type) ? columnShape(catalog, column.name) : shapeOfType(column.type),
        }),
      ),
    })),
  };
}

/** Each catalog's column shapes, made once: a catalog is kept for a while and read by every request (metadata maps many fields). */
const shapesOfCatalogs = new WeakMap<FieldCatalog, Map<string, Shape>>();

function columnShape(catalog: FieldCatalog, column: string): Shape {
  let shapes = shapesOfCatalogs.get(catalog);
  if (!shapes) {
    shapes = new Map<string, Shape>();
    shapesOfCatalogs.set(catalog, shapes);
  }
  let shape = shapes.get(column);
  if (!shape) {
    shape = freezeTree(catalogShape(catalog, column));
    shapes.set(column, shape);
  }
  return shape;
}

/**
 * A mapped path in the form logs.all returns it: an object (or nested object) is an array of
 * records; a leaf is a value; a path the mapping lacks is known only from the rows.
 */
function catalogShape(catalog: FieldCatalog, path: string): Shape {
  const type = catalog.typeOf(path);
  const fields = catalog.fieldsUnder(path);
  if (fields.length === 0 && type !== 'object' && type !== 'nested') return type === undefined ? { kind: 'open' } : { kind: 'scalar' };
  return { kind: 'array', element: { kind: 'record', fields: fields.map((name) => ({ name, shape: catalogShape(catalog, `${path}.${name}`) })) } };
}

function holdsUnknown(type: SqlType): boolean {
  if (type.kind === 'unknown') return true;
  if (type.kind === 'array') return holdsUnknown(type.element);
  return type.kind === 'struct' && type.fields.some((field) => holdsUnknown(field.type));
}
