import { isEventColumn, type EventColumn } from '../../../shared/stored-event.ts';
import type { Bindings } from '../../sql/bindings.ts';
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
  | { kind: 'scanned'; relation: Relation; scanned: ScannedTable }
  /** `unnest(<path>) as name`: each row is one element of the array at `path` (dotted, from `metadata`). */
  | { kind: 'unnest'; relation: Relation; path: string; join: 'inner' | 'left' }
  | { kind: 'opaque'; relation: Relation };

/** Where an identifier chain points, as far as the store can tell. */
export type FieldReference =
  | { kind: 'column'; column: EventColumn }
  /** A value inside metadata, reached through unnests: any element may hold it (existential). */
  | { kind: 'metadata'; path: string };

/**
 * The FROM clause of one SELECT as the pushdown sees it. Only a SELECT that reads exactly one
 * scanned CTE (plus unnests of its own arrays) can have predicates pushed into that CTE's scan.
 */
export class SelectScope {
  readonly variables: RangeVariable[] = [];

  private constructor(
    readonly scanned: ScannedTable | undefined,
    private readonly bindings: Bindings,
  ) {}

  /** Builds the scope of a SELECT whose table references were already renamed (`scannedBy` maps scan table names) and bound. */
  static of(select: Select, scannedBy: ReadonlyMap<string, ScannedTable>, bindings: Bindings): SelectScope {
    const tables: ScannedTable[] = [];
    const collect = (relation: Relation) => {
      if (relation.kind === 'table' && relation.name.length === 1 && scannedBy.has(relation.name[0]!)) tables.push(scannedBy.get(relation.name[0]!)!);
    };
    for (const item of select.from) {
      collect(item.relation);
      for (const join of item.joins) collect(join.relation);
    }
    const scope = new SelectScope(tables.length === 1 ? tables[0] : undefined, bindings);
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
      this.variables.push(scanned && join !== 'opaque' && scanned === this.scanned ? { kind: 'scanned', relation, scanned } : { kind: 'opaque', relation });
      return;
    }
    if (relation.kind === 'unnest') {
      const path = join === 'opaque' ? undefined : this.arrayPath(relation.array);
      this.variables.push(
        path !== undefined && join !== 'opaque' && !relation.withOffset ? { kind: 'unnest', relation, path, join } : { kind: 'opaque', relation },
      );
      return;
    }
    this.variables.push({ kind: 'opaque', relation });
  }

  /** The dotted path of an unnested array: `metadata`, `t.metadata`, `m.request` with m an unnest of metadata. */
  private arrayPath(expr: Expr): string | undefined {
    const reference = this.resolve(expr);
    if (reference?.kind === 'column') return reference.column === 'metadata' ? 'metadata' : undefined;
    return reference?.kind === 'metadata' ? reference.path : undefined;
  }

  /**
   * Where a name of this SELECT points in the store, as the binder decided: a column of the scanned
   * table, or a path inside metadata through this SELECT's unnests. Undefined for anything else
   * (another table, a derived value, a name of an enclosing query, a select alias).
   */
  resolve(expr: Expr): FieldReference | undefined {
    if (!this.scanned || expr.kind !== 'identifier') return undefined;
    const binding = this.bindings.names.get(expr);
    if (binding?.kind !== 'column' && binding?.kind !== 'element') return undefined;
    const variable = this.variables.find((candidate) => candidate.relation === binding.range);
    if (binding.kind === 'column') return variable?.kind === 'scanned' && binding.fields.length === 0 ? this.column(binding.column) : undefined;
    return variable?.kind === 'unnest' && !binding.offset ? { kind: 'metadata', path: [variable.path, ...binding.fields].join('.') } : undefined;
  }

  /** The select alias a name of GROUP BY, HAVING, QUALIFY or ORDER BY was bound to, if it was. */
  aliasOf(expr: Expr): string | undefined {
    const binding = expr.kind === 'identifier' ? this.bindings.names.get(expr) : undefined;
    return binding?.kind === 'alias' ? binding.name : undefined;
  }

  private column(name: string): FieldReference | undefined {
    const lower = name.toLowerCase();
    if (!isEventColumn(lower) || !this.scanned!.columns.has(lower)) return undefined;
    return { kind: 'column', column: lower };
  }
}
