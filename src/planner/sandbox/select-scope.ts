import { isEventColumn, type EventColumn } from '../../../shared/stored-event.ts';
import type { Expr, FromItem, Relation, Select } from '../../sql/syntax.ts';


/** One endpoint-CTE reference, renamed to the scan table that serves it. */
export interface ScannedTable {
  /** The scan table's name, as the residual query reads it. */
  table: string;
  /** The columns the CTE declares. */
  columns: ReadonlySet<string>;
}

/** A name in FROM: a scanned CTE, an unnest of a path inside it, or something the planner does not look into. */
export type RangeVariable =
  | { kind: 'scanned'; name: string; scanned: ScannedTable }
  /** `unnest(<path>) as name`: each row is one element of the array at `path` (dotted, from `metadata`). */
  | { kind: 'unnest'; name: string; path: string; join: 'inner' | 'left' }
  | { kind: 'opaque'; name: string };

/** Where an identifier chain points, as far as the store can tell. */
export type FieldReference =
  | { kind: 'column'; column: EventColumn }
  /** A value inside metadata, reached through unnests: any element may hold it (existential). */
  | { kind: 'metadata'; path: string }
  /** A bare name that may be a field of any of several unnested records. */
  | { kind: 'one_of'; paths: string[] };

/**
 * The FROM clause of one SELECT as the pushdown sees it. Only a SELECT that reads exactly one
 * scanned CTE (plus unnests of its own arrays) can have predicates pushed into that CTE's scan.
 */
export class SelectScope {
  readonly variables: RangeVariable[] = [];

  private constructor(readonly scanned: ScannedTable | undefined) {}

  /** Builds the scope of a SELECT whose table references were already renamed (`scannedBy` maps scan table names). */
  static of(select: Select, scannedBy: ReadonlyMap<string, ScannedTable>): SelectScope {
    const tables: ScannedTable[] = [];
    const collect = (relation: Relation) => {
      if (relation.kind === 'table' && relation.name.length === 1 && scannedBy.has(relation.name[0]!)) tables.push(scannedBy.get(relation.name[0]!)!);
    };
    for (const item of select.from) {
      collect(item.relation);
      for (const join of item.joins) collect(join.relation);
    }
    const scope = new SelectScope(tables.length === 1 ? tables[0] : undefined);
    for (const item of select.from) scope.addFromItem(item, scannedBy);
    return scope;
  }

  /** Whether every FROM element is the scanned table or an unnest of its arrays (no other tables, no derived tables). */
  get readsOnlyTheScan(): boolean {
    return this.scanned !== undefined && this.variables.every((variable) => variable.kind !== 'opaque');
  }

  /** The unnest joins of this SELECT, in order (empty when it reads the events one row each). */
  get unnests(): Extract<RangeVariable, { kind: 'unnest' }>[] {
    return this.variables.filter((variable): variable is Extract<RangeVariable, { kind: 'unnest' }> => variable.kind === 'unnest');
  }

  private addFromItem(item: FromItem, scannedBy: ReadonlyMap<string, ScannedTable>): void {
    this.addRelation(item.relation, 'inner', scannedBy);
    for (const join of item.joins) {
      const kind = join.kind === 'cross' || join.kind === 'inner' ? 'inner' : join.kind === 'left' ? 'left' : undefined;
      // ON conditions other than TRUE change which rows exist; the planner does not reason about them
      const trivialOn = join.on === undefined || (join.on.kind === 'boolean' && join.on.value);
      if (kind === undefined || !trivialOn || join.using) this.addRelation(join.relation, 'opaque', scannedBy);
      else this.addRelation(join.relation, kind, scannedBy);
    }
  }

  private addRelation(relation: Relation, join: 'inner' | 'left' | 'opaque', scannedBy: ReadonlyMap<string, ScannedTable>): void {
    if (relation.kind === 'table') {
      const scanned = relation.name.length === 1 ? scannedBy.get(relation.name[0]!) : undefined;
      const name = relation.alias ?? relation.name[relation.name.length - 1]!;
      this.variables.push(scanned && join !== 'opaque' && scanned === this.scanned ? { kind: 'scanned', name, scanned } : { kind: 'opaque', name });
      return;
    }
    if (relation.kind === 'unnest') {
      const path = join === 'opaque' ? undefined : this.arrayPath(relation.array);
      const name = relation.alias ?? '';
      this.variables.push(path !== undefined && join !== 'opaque' && !relation.withOffset ? { kind: 'unnest', name, path, join } : { kind: 'opaque', name });
      return;
    }
    this.variables.push({ kind: 'opaque', name: relation.alias ?? '' });
  }

  /** The dotted path of an unnested array: `metadata`, `t.metadata`, `m.request` with m an unnest of metadata. */
  private arrayPath(expr: Expr): string | undefined {
    if (expr.kind !== 'identifier') return undefined;
    const reference = this.resolve(expr.path);
    if (reference?.kind === 'column') return reference.column === 'metadata' ? 'metadata' : undefined;
    return reference?.kind === 'metadata' ? reference.path : undefined;
  }

  /**
   * BigQuery's name resolution, as far as pushdown needs it: a range variable first (an unnest
   * alias shadows a column of the same name), then a column of the scanned table, then a field of
   * one of the unnested records.
   */
  resolve(path: readonly string[]): FieldReference | undefined {
    if (!this.scanned || path.length === 0) return undefined;
    const [head, ...rest] = path as [string, ...string[]];
    const variable = this.variables.find((candidate) => candidate.name.toLowerCase() === head.toLowerCase());
    if (variable) {
      if (variable.kind === 'opaque') return undefined;
      if (variable.kind === 'unnest') return { kind: 'metadata', path: [variable.path, ...rest].join('.') };
      if (rest.length !== 1) return undefined;
      return this.column(rest[0]!);
    }
    if (rest.length === 0) {
      const column = this.column(head);
      if (column) return column;
    }
    const unnests = this.unnests;
    if (unnests.length === 0 || this.variables.some((candidate) => candidate.kind === 'opaque')) return undefined;
    const paths = unnests.map((unnest) => [unnest.path, ...path].join('.'));
    return paths.length === 1 ? { kind: 'metadata', path: paths[0]! } : { kind: 'one_of', paths };
  }

  private column(name: string): FieldReference | undefined {
    const lower = name.toLowerCase();
    if (!isEventColumn(lower) || !this.scanned!.columns.has(lower)) return undefined;
    return { kind: 'column', column: lower };
  }
}
