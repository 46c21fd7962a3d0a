import type { estypes } from '@elastic/elasticsearch';
import { cteByName, tableNames, type Cte, type EndpointDefinition } from '../../../queries/endpoint.ts';
import type { TimeBounds } from '../../../shared/partitions.ts';
import { SandboxViolation, UnknownTable } from '../../errors.ts';
import { bind } from '../../sql/bind.ts';
import { freezeTree } from '../../sql/frozen-tree.ts';
import { environmentOfTables, implicitName, type BindEnvironment, type Bindings } from '../../sql/bindings.ts';
import type { Expr, Query, Relation, Select } from '../../sql/syntax.ts';
import type { ParameterValue } from '../../sql/types.ts';
import { requestValuesRead } from '../../sql/request-values.ts';
import { INTERNAL_TABLE_PREFIX } from '../../sql/validate.ts';
import { walk } from '../../sql/walk.ts';
import { EMPTY_CATALOG, type FieldCatalog } from '../field-catalog.ts';
import type { Plan, ResidualQuery, Scan, ServiceFinish, ServiceGroupFinish, ServiceUnionFinish } from '../plan.ts';
import type { ScopeContext, ValidatedParameters } from '../scope.ts';
import { eventScan, requestCountScan, windowStartScan } from '../tables.ts';
import { aggregationScan, aggregationShape, type AggregationShape } from './aggregation.ts';
import { ColumnReads } from './column-reads.ts';
import { conjuncts, pushDown, type PredicateContext } from './predicates.ts';
import { recordFilter } from './record-filters.ts';
import { scanEnvironment } from './bind-environment.ts';
import { SelectScope, type ScannedTable } from './select-scope.ts';
import { decideServiceFinish, type FinishSource } from './service-finish.ts';
import { isRowWise } from './row-wise.ts';
import { timeBoundsOf } from './time-bounds.ts';
import { branchLimit, decideUnionFinish, unionQuery, type UnionQuery } from './union-finish.ts';

type QueryDsl = estypes.QueryDslQueryContainer;

export interface SandboxLimits {
  /** The most events all scans of one query may pull into the engine together before it is refused as too broad; also its most groups. */
  maxScanEvents: number;
  /** The most reads of endpoint tables (scans) one query may make. */
  maxScans: number;
}

export interface SandboxContext extends ScopeContext {
  limits: SandboxLimits;
  /** The store's field types per source (over all its partitions), for deciding what can be pushed down. */
  catalogs: ReadonlyMap<string, FieldCatalog>;
}

/** One place a sandboxed query reads an endpoint CTE, renamed to its own scan table. */
interface CteReference {
  relation: Extract<Relation, { kind: 'table' }>;
  cte: Cte;
  table: string;
  /** The SELECT whose FROM holds the reference (its WHERE may be pushed into the scan). */
  select: Select;
}

/**
 * A validated sandboxed query as a plan: every reference to an endpoint CTE becomes a scan with the
 * CTE's mandatory scope (never optional) and whatever WHERE conditions the store can check; the
 * query itself, its CTE references renamed to those scans, is the residual the engine runs. A
 * scan pushes its LIMIT down only when the store's order and filter are exactly the query's.
 */
export function planSandboxQuery(endpoint: EndpointDefinition, params: ValidatedParameters, context: SandboxContext, parsed: Query): Plan {
  const renamed = withScanTables(parsed, endpoint);
  const { query, references } = renamed;
  assertScanCount(references, context.limits.maxScans);
  const scannedBy = new Map<string, ScannedTable>(
    references.map((reference) => [reference.table, { table: reference.table, columns: new Set(reference.cte.columns.map((column) => column.name)) }]),
  );

  const catalogOf = (cte: CteReference['cte']) => ('source' in cte ? context.catalogs.get(cte.source) : undefined) ?? EMPTY_CATALOG;
  const bound = boundWith(
    renamed,
    references.map(({ cte }) => catalogOf(cte)),
  );
  const { environment, bindings, unbound } = bound;
  // the event scans whose filter is exactly the top SELECT's WHERE (for the rows of their exact part), and the conditions the others left
  const whereHeld = new Set<string>();
  const unapplied = new Map<string, Expr[]>();
  const union = unionQuery(query, bindings);
  const scanReads = readsOf(renamed, bound, scannedBy, union, context.now);
  const scans: Scan[] = references.map((reference, i) => {
    const { cte, table } = reference;
    if (cte.kind === 'request_counts') return requestCountScan(endpoint, cte, params, context, table);
    if (cte.kind === 'window_start') return windowStartScan(cte, params, context, table);
    const { filter, limit, held, columns } = scanReads[i]!;
    if (held) whereHeld.add(table);
    // held or not, the conditions left are what a superset part's rows (or every row) must still pass
    unapplied.set(table, filter.unapplied);
    return eventScan(cte, params, context, {
      table,
      predicates: filter.predicates,
      order: limit ? limit.order : 'timestamp_desc',
      take: limit ? { kind: 'limit', rows: limit.rows } : { kind: 'all' },
      columns,
      within: filter.within,
      ...(filter.split ? { split: filter.split } : {}),
    });
  });
  const residual = { query, bindings, parameters: queryParameters(endpoint, params), now: context.now };
  const only = scans.length === 1 && scans[0]!.kind === 'events' ? scans[0] : undefined;
  const source =
    only && scans.length === 1
      ? { table: only.table, columns: only.columns, whereHeld: whereHeld.has(only.table), unapplied: unapplied.get(only.table), oneRow: false }
      : undefined;
  const finish = source && keptFinish(bound, () => finishOf(residual, source));
  const unionFinish = !finish && union ? unionFinishOf(union, residual, references, scans, unapplied) : undefined;
  const planned = finish ? { ...residual, finish } : unionFinish ? { ...residual, unionFinish } : residual;
  if (only && only.take.kind === 'all' && references[0]!.select === topSelect(query)) {
    const grouped = keptGroups(bound, () => {
      const shape = aggregationShape({
        query,
        select: references[0]!.select,
        scope: SelectScope.of(references[0]!.select, scannedBy, bindings),
        catalog: catalogOf(references[0]!.cte),
        now: context.now,
        table: only.table,
      });
      if (!shape) return undefined;
      // the rewritten query reads the groups' table: its names are bound again, over that table
      const groups = { tables: [...environment.tables, ...environmentOfTables([{ name: shape.table, columns: shape.columns }]).tables] };
      const rewritten: ResidualQuery = { ...residual, query: shape.residual, bindings: bind(shape.residual, groups) };
      const finish = finishOf(rewritten, { table: shape.table, columns: shape.columns, whereHeld: false, oneRow: shape.keys.length === 0 });
      return { shape, bindings: rewritten.bindings, ...(finish ? { finish } : {}) };
    });
    if (grouped) {
      const { shape, bindings: groupBindings, finish } = grouped;
      return {
        ...unbound,
        scans: [aggregationScan(shape, only, planned, context.limits.maxScanEvents)],
        residual: { ...residual, query: shape.residual, bindings: groupBindings, ...(finish ? { finish } : {}) },
        answer: { kind: 'residual' },
        rowCap: endpoint.maxRows,
        maxScannedEvents: context.limits.maxScanEvents,
      };
    }
  }
  return { ...unbound, scans, residual: planned, answer: { kind: 'residual' }, rowCap: endpoint.maxRows, maxScannedEvents: context.limits.maxScanEvents };
}

function finishOf(residual: ResidualQuery, source: FinishSource): ServiceFinish | ServiceGroupFinish | undefined {
  const decision = decideServiceFinish(residual.query, residual.bindings, source);
  return 'finish' in decision ? decision.finish : undefined;
}

/** The service's finish of a union whose every branch reads one event scan, each with the WHERE conditions its scan left. */
function unionFinishOf(
  union: UnionQuery,
  residual: ResidualQuery,
  references: readonly CteReference[],
  scans: readonly Scan[],
  unapplied: ReadonlyMap<string, Expr[]>,
): ServiceUnionFinish | undefined {
  const sources = new Map<Select, FinishSource>();
  for (const [i, reference] of references.entries()) {
    const scan = scans[i]!;
    if (scan.kind !== 'events' || sources.has(reference.select)) return undefined;
    sources.set(reference.select, { table: scan.table, columns: scan.columns, whereHeld: false, unapplied: unapplied.get(scan.table), oneRow: false });
  }
  const decision = decideUnionFinish(union, residual.bindings, sources);
  return 'refused' in decision ? undefined : decision;
}

interface ScanTables {
  /** The query with each reference to an endpoint CTE renamed to its scan table (frozen). */
  query: Query;
  references: CteReference[];
  reads: ColumnReads;
  /** Its names bound with the field catalogs of its references, kept until a catalog is read again. */
  bound?: Bound;
}

interface Bound {
  catalogs: readonly FieldCatalog[];
  environment: BindEnvironment;
  bindings: Bindings;
  unbound: Pick<Plan, 'unboundNames'>;
  /** How each reference reads its scan, kept when the query reads no clock (its filters are then the same for every request). */
  reads?: (ReferenceRead | undefined)[];
  /** The service's finish of the query over its one event scan, kept with the reads it was decided from. */
  finish?: { decided: ServiceFinish | ServiceGroupFinish | undefined };
  /** The groups the store may compute instead (none: undefined), kept with the reads. */
  groups?: { decided: Groups | undefined };
}

/** A pushed-down aggregation's shape, the rewritten query's bindings over the groups' table, and its finish. */
interface Groups {
  shape: AggregationShape;
  bindings: Bindings;
  finish?: ServiceFinish | ServiceGroupFinish;
}

function keptGroups(bound: Bound, decide: () => Groups | undefined): Groups | undefined {
  if (bound.groups) return bound.groups.decided;
  const decided = decide();
  if (bound.reads) bound.groups = { decided };
  return decided;
}

/** The finish decided from the reads: once, when the reads are kept. */
function keptFinish(bound: Bound, decide: () => ServiceFinish | ServiceGroupFinish | undefined): ServiceFinish | ServiceGroupFinish | undefined {
  if (bound.finish) return bound.finish.decided;
  const decided = decide();
  if (bound.reads) bound.finish = { decided };
  return decided;
}

/** What an event reference's scan takes from the query: its filter, a pushed limit, whether WHERE is held, the columns read. */
interface ReferenceRead {
  filter: ScanFilter;
  limit: { rows: number; order: 'timestamp_desc' } | undefined;
  held: boolean;
  columns: readonly string[];
}

/** Each reference's read (undefined for tables other than events), made from the query, its bindings and its catalogs. */
function readsOf(
  renamed: ScanTables,
  bound: Bound,
  scannedBy: ReadonlyMap<string, ScannedTable>,
  union: UnionQuery | undefined,
  now: number,
): (ReferenceRead | undefined)[] {
  if (bound.reads) return bound.reads;
  const { query, references } = renamed;
  const reads = references.map((reference, i): ReferenceRead | undefined => {
    const { cte, table } = reference;
    if (cte.kind === 'request_counts' || cte.kind === 'window_start') return undefined;
    const scope = SelectScope.of(reference.select, scannedBy, bound.bindings);
    const readsTheScan = scope.readsOnlyTheScan && scope.scanned?.table === table;
    const filter: ScanFilter = readsTheScan
      ? scanFilter(reference.select, scope, { scope, catalog: bound.catalogs[i]!, now })
      : { predicates: [], exact: false, within: {}, unapplied: conjuncts(reference.select.where) };
    const byShape = filter.split !== undefined;
    const limit =
      filter.exact && reference.select === topSelect(query)
        ? pushableLimit(query, scope, byShape)
        : filter.exact && union
          ? branchLimit(union, reference.select, scope, byShape)
          : undefined;
    // without a limit, a split filter's superset part is read with the rest: only the residual WHERE tells its rows apart
    const held = filter.exact && reference.select === topSelect(query) && (!filter.split || limit !== undefined);
    const columns = renamed.reads.columnsOf(
      cte.columns.map((column) => column.name),
      reference.relation.alias ?? cte.name,
    );
    return { filter, limit, held, columns };
  });
  if (!requestValuesRead(query).clock) bound.reads = reads;
  return reads;
}

/** The names bound (sql/bind.ts) over the scan tables, each read with the catalog of its source: the same while the catalogs are the same objects. */
function boundWith(renamed: ScanTables, catalogs: readonly FieldCatalog[]): Bound {
  const known = renamed.bound;
  if (known?.catalogs.every((catalog, i) => catalog === catalogs[i])) return known;
  const environment = scanEnvironment(
    renamed.references.map(({ table, cte }, i) => ({ table, columns: cte.columns, ...('source' in cte ? { catalog: catalogs[i] } : {}) })),
  );
  const bindings = bind(renamed.query, environment);
  const bound = { catalogs, environment, bindings, unbound: unboundNamesOf(bindings) };
  renamed.bound = bound;
  return bound;
}

/** The renamed copy of each shared (frozen: from the parsed-query cache) tree, per endpoint: the renaming depends on nothing else. */
const renamedTrees = new WeakMap<Query, WeakMap<EndpointDefinition, ScanTables>>();

/**
 * The query with its endpoint-table references renamed (a copy: the parsed tree is not changed),
 * frozen, so that nothing planned from it may change it. A tree every request of the same text
 * shares (frozen by the parsed-query cache) is copied once per endpoint, and the plans of those
 * requests share the copy.
 */
function withScanTables(parsed: Query, endpoint: EndpointDefinition): ScanTables {
  const shared = Object.isFrozen(parsed);
  const known = shared ? renamedTrees.get(parsed)?.get(endpoint) : undefined;
  if (known) return known;
  const query = structuredClone(parsed);
  const references: CteReference[] = [];
  collectReferences(query, new Set(), endpoint, references);
  const renamed: ScanTables = { query: freezeTree(query), references, reads: ColumnReads.of(query) };
  if (shared) {
    const byEndpoint = renamedTrees.get(parsed) ?? new WeakMap<EndpointDefinition, ScanTables>();
    byEndpoint.set(endpoint, renamed);
    renamedTrees.set(parsed, byEndpoint);
  }
  return renamed;
}

/** The bare names bound to no record (NULL), when there are any. */
function unboundNamesOf(bindings: Bindings): Pick<Plan, 'unboundNames'> {
  const names = [...bindings.names].flatMap(([node, binding]) => (binding.kind === 'missing' && node.kind === 'identifier' ? [node.path[0]!] : []));
  return names.length > 0 ? { unboundNames: [...new Set(names)] } : {};
}

/**
 * What a SELECT reading one scan (and unnests of its arrays) lets the store filter. `exact`: every
 * event the predicates match gives at least one row and all its rows pass WHERE, or, with `split`,
 * every `regular` one does (exactly one row) and the `irregular` ones are matched as a superset.
 * Conditions on columns alone translate exactly on their own; a condition on a record field, or an
 * inner unnest (which drops the events without that array), needs the events' stored shape.
 * `within`: where the exactly pushed conditions on `timestamp` confine every event, for the partitions read.
 * `unapplied`: the conjuncts of WHERE not pushed exactly on their own (the store matched a superset of their rows).
 */
interface ScanFilter {
  predicates: QueryDsl[];
  exact: boolean;
  within: TimeBounds;
  unapplied: Expr[];
  split?: { regular: QueryDsl; irregular: QueryDsl; loose: QueryDsl[] };
}

function scanFilter(select: Select, scope: SelectScope, context: PredicateContext): ScanFilter {
  const conditions = conjuncts(select.where);
  const pushed = conditions.map((condition) => pushDown(condition, context));
  const all = pushed.filter((predicate) => predicate !== undefined).map((predicate) => predicate.query);
  const others = conditions.filter((_, i) => !pushed[i]?.exact);
  // every exactly pushed conjunct stays among the predicates on each path below
  const within = timeBoundsOf(
    conditions.filter((_, i) => pushed[i]?.exact),
    context,
  );
  if (others.length === 0 && scope.unnests.every((unnest) => unnest.join === 'left')) return { predicates: all, exact: true, within, unapplied: others };
  const exactAlone = pushed.filter((predicate) => predicate?.exact).map((predicate) => predicate!.query);
  const supersets = pushed.filter((predicate) => predicate !== undefined && !predicate.exact).map((predicate) => predicate!.query);
  const record = recordFilter(others, scope.unnests, supersets, context);
  if (!record) return { predicates: all, exact: false, within, unapplied: others };
  return {
    predicates: [...exactAlone, record.query],
    exact: true,
    within,
    unapplied: others,
    split: { regular: record.regular, irregular: record.irregular, loose: all },
  };
}

/** Each read of a table that the store serves is at least one search: their number is bounded before any is made. */
function assertScanCount(references: readonly CteReference[], maxScans: number): void {
  const scans = references.filter((reference) => reference.cte.kind !== 'window_start').length;
  if (scans > maxScans) {
    throw new SandboxViolation(
      `the query reads the endpoint's tables ${scans} times, more than ${maxScans} (SANDBOX_MAX_SCANS); read each table once, in a WITH clause, and use that name wherever it is needed`,
    );
  }
}

/** The SELECT that is the whole body of the query (no set operation around it), if any. */
function topSelect(query: Query): Select | undefined {
  return query.body.kind === 'select' ? query.body : undefined;
}

/**
 * `ORDER BY timestamp [DESC|ASC] [, id same direction] LIMIT n [OFFSET m]` over one scan each of
 * whose events gives at least one row (left unnests keep every event; with `byShape`, each regular
 * event matched gives exactly one, and the others are all read), with no grouping: the first
 * n + m of those events in the store's order are all the query can return.
 */
function pushableLimit(query: Query, scope: SelectScope, byShape: boolean): { rows: number; order: 'timestamp_desc' } | undefined {
  const select = topSelect(query)!;
  if (!isRowWise(select)) return undefined;
  if (!byShape && scope.unnests.some((unnest) => unnest.join !== 'left')) return undefined;
  const limit = numberLiteral(query.limit);
  const offset = query.offset ? numberLiteral(query.offset) : 0;
  if (limit === undefined || offset === undefined) return undefined;
  const [first, second, ...rest] = query.orderBy;
  if (rest.length > 0) return undefined;
  if (first && (!first.descending || !isColumn(first.expr, 'timestamp', select, scope))) return undefined;
  if (second && (!second.descending || !isColumn(second.expr, 'id', select, scope))) return undefined;
  return { rows: limit + offset, order: 'timestamp_desc' };
}

/** Whether an ORDER BY key is the scan's column (directly, or through a select alias that is exactly that column). */
function isColumn(expr: Expr, column: string, select: Select, scope: SelectScope): boolean {
  const alias = scope.aliasOf(expr);
  if (alias === undefined) {
    const reference = scope.resolve(expr);
    return reference?.kind === 'column' && reference.column === column;
  }
  const lower = alias.toLowerCase();
  const item = select.items.find((candidate) => candidate.kind === 'expression' && (candidate.alias ?? implicitName(candidate.expr))?.toLowerCase() === lower);
  // a TIMESTAMP cast to DATETIME (its civil time in UTC) orders as the TIMESTAMP does
  if (item?.kind === 'expression')
    return isColumn(item.expr.kind === 'cast' && item.expr.type === 'DATETIME' ? item.expr.expr : item.expr, column, select, scope);
  // a column `*` brought in: the scanned table's when it is the first thing FROM reads
  return lower === column && scope.variables[0]?.kind === 'scanned' && select.items.some((candidate) => candidate.kind === 'wildcard' && !candidate.qualifier);
}

function numberLiteral(expr: Expr | undefined): number | undefined {
  if (expr?.kind !== 'number') return undefined;
  const value = Number(expr.text);
  return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/** The values `@name` reads: each validated text, typed where the endpoint declares a type for it. */
function queryParameters(endpoint: EndpointDefinition, params: ValidatedParameters): Record<string, ParameterValue | undefined> {
  return Object.fromEntries(
    Object.entries(params).map(([name, value]) => {
      if (typeof value !== 'string') return [name, undefined];
      const type = endpoint.parameterTypes?.[name];
      return [name, type ? { type, text: value } : value];
    }),
  );
}

/**
 * Finds every reference to an endpoint CTE (in the body, the query's own CTEs, derived tables,
 * subqueries and set operations) and renames it to a scan table of its own, keeping the name it
 * was written with as its alias so qualified columns still resolve. The query's own CTEs shadow
 * the endpoint's from their definition on.
 */
function collectReferences(query: Query, ownCtes: ReadonlySet<string>, endpoint: EndpointDefinition, into: CteReference[]): void {
  const visible = new Set(ownCtes);
  // the relations met after a SELECT are its own: a query below it is collected by its own call
  let select: Select | undefined;
  walk(query, {
    query: (inner) => {
      if (inner === query) return true;
      collectReferences(inner, visible, endpoint, into);
      return false;
    },
    cte: (cte) => {
      collectReferences(cte.query, visible, endpoint, into);
      visible.add(cte.name.toLowerCase());
      return false;
    },
    select: (found) => {
      select = found;
    },
    relation: (relation) => {
      if (relation.kind === 'table') bindTable(relation, select!, visible, endpoint, into);
    },
  });
}

function bindTable(
  relation: Extract<Relation, { kind: 'table' }>,
  select: Select,
  visible: ReadonlySet<string>,
  endpoint: EndpointDefinition,
  into: CteReference[],
): void {
  const written = relation.name.join('.');
  if (relation.name.length === 1 && visible.has(written.toLowerCase())) return;
  const cte = relation.name.length === 1 ? (cteByName(endpoint.ctes, written) ?? cteByName(endpoint.ctes, written.toLowerCase())) : undefined;
  if (!cte) throw new UnknownTable(written, tableNames(endpoint.ctes), relation.position);
  const table = `${INTERNAL_TABLE_PREFIX}${into.length}`;
  relation.alias ??= written;
  relation.name = [table];
  into.push({ relation, cte, table, select });
}
