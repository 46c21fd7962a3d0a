import type { estypes } from '@elastic/elasticsearch';
import { QueryTooBroad, QueryTooExpensive, SandboxViolation } from '../errors.ts';
import type { AggregationScan, EventScan, Plan, ResidualQuery, Scan, SelectedColumn } from '../planner/plan.ts';
import { sandboxScansTotal } from '../metrics.ts';
import type { DuckDbQuery } from './duckdb-sql/index.ts';
import { translateResidual } from './residual-translations.ts';
import type { SqlType, TableColumn, TableSchema } from '../sql/types.ts';
import { search, type StoreOptions } from './elasticsearch.ts';
import type { EmbeddedEngine, EngineReservation, EngineTable } from './engine/embedded-engine.ts';
import { inferTableSchema, type DeclaredColumn } from './engine/schema-inference.ts';
import { columnRows } from './rows/logs.ts';
import { logHitRows } from './log-hits.ts';
import { bucketCounts, usageRows } from './rows/usage.ts';
import type { HeldEvents } from './held-events.ts';
import { rowBytes } from './row-bytes.ts';
import { ScanBudget } from './scan-budget.ts';
import { serviceAnswer } from './service-groups.ts';
import { unionInService } from './service-union.ts';
import { hitsTotal } from './store-reads.ts';
import type { ServerTiming } from '../http/server-timing.ts';

export interface ExecutorOptions extends StoreOptions {
  /** Runs residual queries; started on first use, so a service that never sees one never pays for it. */
  engine: () => Promise<EmbeddedEngine>;
  /** The most characters of engine SQL a residual query may translate to (SANDBOX_MAX_TRANSLATED_CHARS). */
  maxTranslatedChars: number;
  /** The largest string or array the residual query's functions may build (SANDBOX_MAX_RESULT_BYTES). */
  maxValueBytes: number;
  /** Whose query it is in the engine's turns (an API key id). */
  engineKey: string;
  /** When the answer is due (StoreOptions): the engine too gets what is left, its wait for a process included; its reservation ends then. */
  deadline: number;
  /** Where the time spent in the store and in the engine is added up, for the caller's own run. */
  timing?: ServerTiming;
  /** The events all sandboxed queries of the process may hold at once (SANDBOX_MAX_HELD_EVENTS); none: no bound. */
  heldEvents?: HeldEvents;
  /**
   * logs.all's rows may come back written from the store's text (LogRowJson), redacted when asked: only for a caller whose
   * encodeAnswer copies them, with the same redaction.
   */
  writtenLogRows?: { redact: boolean };
}

/** Runs a plan: its scans on Elasticsearch, then (for sandboxed queries) the residual query; returns the answer's rows. */
export async function executePlan(plan: Plan, options: ExecutorOptions): Promise<unknown[]> {
  const answer = plan.answer;
  if (answer.kind === 'residual') {
    const translated = checkTranslatedSize(plan, options);
    // a residual plan that ends in the engine takes its place there before any scan, so a key or an
    // engine that can take no more is refused before the store works; one the service may finish
    // itself takes it only if its rows turn out to need the engine
    const admission = new EngineAdmission(options);
    if (!plan.residual?.finish && !plan.residual?.unionFinish) await admission.reservation();
    try {
      return (await residualRows(plan, admission, { ...options, translated })).slice(0, plan.rowCap);
    } finally {
      admission.release();
    }
  }
  const scan = plan.scans.find((candidate) => candidate.table === answer.table);
  if (!scan) throw new Error(`plan answers from ${answer.table}, which none of its scans produces`);
  return timed(options, 'store', async () => {
    if (answer.kind === 'chart') return (await chartRows(scan, options)).slice(0, plan.rowCap);
    if (answer.kind === 'selected') return selectedRows(await eventRows(scan, options), answer.columns).slice(0, plan.rowCap);
    // the saved selection's rows are exactly its four columns, whatever else the CTE declares
    if (answer.format === 'log_rows') {
      const texts = options.writtenLogRows ? await logHitRows(scan, options, options.writtenLogRows.redact) : undefined;
      return (texts ?? (await eventRows(scan, options))).slice(0, plan.rowCap);
    }
    const rows = usageRowsOf(await aggregationsOf(scan, options), scan);
    return rows.slice(0, plan.rowCap);
  });
}

function timed<T>(options: ExecutorOptions, phase: 'store' | 'engine', work: () => Promise<T>): Promise<T> {
  return options.timing ? options.timing.measureAsync(phase, work) : work();
}

/**
 * Each residual query's trial translation, and the tables it was made over (as JSON): when the
 * scanned tables turn out the same (no column typed from the rows), it is the run's translation too.
 */
type Translations = Map<ResidualQuery, { tables: string; translation: DuckDbQuery }>;

/** The executor's options for one residual plan: its trial translations besides. */
interface ResidualOptions extends ExecutorOptions {
  translated: Translations;
}

/** A query's place in the engine's turns, taken once when first needed. */
class EngineAdmission {
  private taken: EngineReservation | undefined;

  constructor(private readonly options: ExecutorOptions) {}

  async reservation(): Promise<EngineReservation> {
    if (!this.taken) {
      const engine = await timed(this.options, 'engine', this.options.engine);
      this.taken = engine.reserve(this.options.engineKey, this.options.deadline);
    }
    return this.taken;
  }

  release(): void {
    this.taken?.release();
  }
}

async function residualRows(plan: Plan, admission: EngineAdmission, options: ResidualOptions): Promise<unknown[]> {
  if (!plan.residual) throw new Error('a residual answer needs a residual query');
  const aggregation = plan.scans.find((scan): scan is AggregationScan => scan.kind === 'aggregation');
  if (aggregation) {
    // both at once: the check decides which answer stands, and usually it is the aggregation; one failing stops the other
    const stop = new AbortController();
    const both = { ...options, signal: stop.signal };
    const abort = (reason: unknown) => stop.abort(reason);
    const [irregular, groups] = await timed(options, 'store', () =>
      Promise.all([stoppingOthers(search(aggregation.irregular, both), abort), stoppingOthers(groupRows(aggregation, both), abort)]),
    );
    if (totalHits(irregular) > 0) {
      sandboxScansTotal.inc({ kind: 'aggregation_fallback' });
      return residualRows({ ...plan, scans: [aggregation.fallback.scan], residual: aggregation.fallback.residual }, admission, options);
    }
    sandboxScansTotal.inc({ kind: 'aggregation' });
    const table = { schema: { name: aggregation.table, columns: aggregation.columns }, rows: groups, supersetRows: 0 };
    return runResidual(plan, [table], admission, options);
  }
  // the scanned events count as held until the answer is made from them
  const hold = options.heldEvents?.open(options.deadline);
  try {
    const budget = new ScanBudget(plan.maxScannedEvents ?? Number.POSITIVE_INFINITY, hold);
    const tables: ScannedTable[] = await timed(options, 'store', () =>
      Promise.all(
        plan.scans.map((scan) =>
          stoppingOthers(
            tableRows(scan, options, budget).then(({ rows, supersetRows }) => {
              return { schema: inferTableSchema(scan.table, declaredColumns(scan.columns), rows), rows, supersetRows };
            }),
            (reason) => budget.cancel(reason),
          ),
        ),
      ),
    );
    return await runResidual(plan, tables, admission, options);
  } finally {
    hold?.close();
  }
}

interface ScanRows {
  rows: Record<string, unknown>[];
  supersetRows: number;
}

/** A table of the residual query, and how many of its rows its scan matched only as a superset. */
interface ScannedTable extends EngineTable {
  supersetRows: number;
}

/** One of a request's searches run side by side: the answer is lost if it fails, so the others are stopped before its failure is passed on. */
async function stoppingOthers<T>(work: Promise<T>, stop: (reason: unknown) => void): Promise<T> {
  try {
    return await work;
  } catch (error) {
    stop(error);
    throw error;
  }
}

/**
 * The residual query (and the fallback of an aggregation, which may replace it) translated over the
 * scans' declared columns before any scan runs, so a query over the budget or another sandbox limit
 * costs no store work. The types inside record columns come from the scanned rows: unknown here, so
 * type errors wait for the translation after the scans, which checks the budget again.
 */
function checkTranslatedSize(plan: Plan, options: ExecutorOptions): Translations {
  return translateBeforeScans(plan, options, { everyError: false });
}

/**
 * The trial translation over the scans' declared columns: a refusal by the sandbox's limits is
 * thrown, and with `everyError` any other error too (a saved query's check, when
 * typesKnownBeforeScans says its types are the run's: its mistakes are found before it is stored).
 * Returns the translations made, for the run to use where its tables are the same.
 */
export function translateBeforeScans(
  plan: Plan,
  { maxTranslatedChars: maxChars, maxValueBytes }: Pick<ExecutorOptions, 'maxTranslatedChars' | 'maxValueBytes'>,
  { everyError }: { everyError: boolean },
): Translations {
  const translated: Translations = new Map();
  for (const { scans, residual } of plansItMayRun(plan)) {
    if (!residual) continue;
    const tables = scans.map(declaredSchema);
    const tablesKey = JSON.stringify(tables);
    try {
      const translation = translateResidual(residual, tables, tablesKey, { maxChars, maxValueBytes });
      translated.set(residual, { tables: tablesKey, translation });
    } catch (error) {
      if (everyError || error instanceof QueryTooExpensive || error instanceof SandboxViolation) throw error;
    }
  }
  return translated;
}

/**
 * Whether the trial translation sees every type the run will: no table it reads has a column whose
 * type comes from the scanned rows (metadata). Then its type errors are the run's own.
 */
export function typesKnownBeforeScans(plan: Plan): boolean {
  const scans = plansItMayRun(plan).flatMap((candidate) => candidate.scans);
  return scans.every((scan) => scan.kind === 'aggregation' || !scan.columns.some((column) => holdsUnknown(column.type)));
}

/** The plan, and for a pushed-down aggregation also the fallback it runs when an event is irregular. */
function plansItMayRun(plan: Plan): Pick<Plan, 'scans' | 'residual'>[] {
  const aggregation = plan.scans.find((scan): scan is AggregationScan => scan.kind === 'aggregation');
  return aggregation ? [plan, { scans: [aggregation.fallback.scan], residual: aggregation.fallback.residual }] : [plan];
}

/** A scan's table as the engine will load it, before its rows are known. */
function declaredSchema(scan: Scan): TableSchema {
  return scan.kind === 'aggregation' ? { name: scan.table, columns: scan.columns } : inferTableSchema(scan.table, declaredColumns(scan.columns), []);
}

async function runResidual(plan: Plan, scanned: ScannedTable[], admission: EngineAdmission, options: ResidualOptions): Promise<unknown[]> {
  const residual = plan.residual!;
  const tables = scanned.map(({ schema, rows }) => ({ schema, rows }));
  const schemas = tables.map((table) => table.schema);
  const trial = options.translated.get(residual);
  const tablesKey = JSON.stringify(schemas);
  // translated even when the service finishes the query: the printer's errors and output columns are the answer's
  const { sql, columns } =
    trial && trial.tables === tablesKey
      ? trial.translation
      : translateResidual(residual, schemas, tablesKey, { maxChars: options.maxTranslatedChars, maxValueBytes: options.maxValueBytes });
  if (residual.unionFinish) {
    const rows = unionInService({ finish: residual.unionFinish, tables: scanned, columns, maxRows: plan.rowCap, maxBytes: options.maxValueBytes });
    if (rows) return rows;
  }
  const finish = residual.finish;
  const table = finish && scanned.find((candidate) => candidate.schema.name === finish.table);
  if (finish && table) {
    // SANDBOX_MAX_RESULT_BYTES bounds the engine's answers and its values alike
    const bounds = { maxRows: plan.rowCap, maxBytes: options.maxValueBytes };
    const rows = serviceAnswer({ finish, schema: table.schema, rows: table.rows, supersetRows: table.supersetRows, columns, ...bounds });
    if (rows) return rows;
  }
  const reservation = await admission.reservation();
  const result = await timed(options, 'engine', () => reservation.run({ tables, sql, maxRows: plan.rowCap }));
  if (options.reads) options.reads.engineRan = true;
  return result.rows;
}

function totalHits(response: estypes.SearchResponse<unknown>): number {
  const total = response.hits.total;
  return typeof total === 'number' ? total : (total?.value ?? 0);
}

interface GroupBucket {
  key?: Record<string, unknown>;
  doc_count: number;
  [aggregation: string]: unknown;
}

/** The aggregation's groups as rows: key columns (dates in microseconds), then each metric (NULL for a sum over no values). */
async function groupRows(scan: AggregationScan, options: ExecutorOptions): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  for await (const bucket of compositeBuckets(scan.search, scan.groupsAt, options)) {
    rows.push(groupRow(scan, bucket));
    if (rows.length > scan.maxGroups) {
      throw new QueryTooBroad(
        `the query makes more than ${scan.maxGroups} groups of ${scan.cte}; group by fewer values or a coarser time bucket, or narrow the time range`,
      );
    }
  }
  return rows;
}

/**
 * The buckets of the aggregation at `at` (names from the response's `aggregations`): a composite's,
 * page after page (after_key), or the one bucket of an aggregation without keys.
 */
async function* compositeBuckets(aggregationSearch: estypes.SearchRequest, at: string[], options: ExecutorOptions): AsyncGenerator<GroupBucket> {
  let after: Record<string, unknown> | undefined;
  for (;;) {
    const { request, container } = pageAfter(aggregationSearch, at, after);
    const response = await search(request, options);
    // every page answers the same total: the events in scope are counted once
    if (!after) options.reads?.scanned(request.index, hitsTotal(response));
    type Groups = { buckets?: GroupBucket[]; after_key?: Record<string, unknown> } & GroupBucket;
    const result = (at.reduce<unknown>((node, name) => (node as Record<string, unknown> | undefined)?.[name], response.aggregations) as Groups | undefined) ?? {
      doc_count: 0,
    };
    if (!container.composite) {
      yield result;
      return;
    }
    const buckets = result.buckets ?? [];
    yield* buckets;
    if (!result.after_key || buckets.length === 0) return;
    after = result.after_key;
  }
}

/**
 * The search for the page after `after`: the aggregations on the way to `at` are copied, everything
 * else is shared with the plan (its queries keep what the planner attached to them).
 */
export function pageAfter(aggregationSearch: estypes.SearchRequest, at: string[], after: Record<string, unknown> | undefined) {
  const request: estypes.SearchRequest = { ...aggregationSearch };
  let siblings = (request.aggs = { ...request.aggs });
  let container: estypes.AggregationsAggregationContainer = {};
  at.forEach((name, step) => {
    container = siblings[name] = { ...siblings[name] };
    if (step < at.length - 1) siblings = container.aggs = { ...container.aggs };
  });
  if (container.composite && after) container.composite = { ...container.composite, after: after as Record<string, estypes.FieldValue> };
  return { request, container };
}

function groupRow(scan: AggregationScan, bucket: GroupBucket): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (const key of scan.keys) {
    const value = bucket.key?.[key.column] ?? null;
    row[key.column] = key.kind === 'date' && typeof value === 'number' ? value * 1000 : value;
  }
  for (const metric of scan.metrics) {
    const at = (path: string[]) =>
      path.reduce<unknown>((node, step) => (node as Record<string, unknown> | undefined)?.[step], bucket) as
        | { doc_count?: number; value?: number | null }
        | undefined;
    if (metric.present && (at(metric.present)?.doc_count ?? 0) === 0) {
      row[metric.column] = null;
      continue;
    }
    const node = at(metric.path);
    row[metric.column] = metric.value === 'doc_count' ? (node?.doc_count ?? 0) : (node?.value ?? null);
  }
  return row;
}

/** Columns declared with a type still unknown somewhere inside (metadata's records) take the type the rows show. */
function declaredColumns(columns: TableColumn[]): DeclaredColumn[] {
  return columns.map((column) => (holdsUnknown(column.type) ? { name: column.name, type: 'inferred' } : column));
}

function holdsUnknown(type: SqlType): boolean {
  if (type.kind === 'unknown') return true;
  if (type.kind === 'array') return holdsUnknown(type.element);
  return type.kind === 'struct' && type.fields.some((field) => holdsUnknown(field.type));
}

/**
 * A scan's rows as the engine loads them (timestamps in microseconds, metadata in the record-array
 * form), and how many of them (the last ones) are events matched only as a superset.
 */
async function tableRows(scan: Scan, options: ExecutorOptions, budget: ScanBudget): Promise<ScanRows> {
  sandboxScansTotal.inc({ kind: scan.kind === 'events' ? (scan.take.kind === 'limit' ? 'limited' : 'pulled') : scan.kind });
  if (scan.kind === 'constant') return { rows: scan.rows, supersetRows: 0 };
  if (scan.kind === 'request_counts') {
    const aggregations = (await aggregationsOf(scan, { ...options, signal: budget.signal })) as Record<string, unknown> | undefined;
    const counts = bucketCounts(aggregations, scan.countColumns);
    return { rows: counts.map((row) => ({ ...row, timestamp: row.timestamp * 1000 })), supersetRows: 0 };
  }
  if (scan.kind === 'events' && scan.take.kind === 'limit' && scan.take.irregular)
    return splitRows(scan, { ...scan.take, irregular: scan.take.irregular }, options, budget);
  return { rows: await eventRows(scan, options, budget), supersetRows: 0 };
}

type SplitTake = Extract<EventScan['take'], { kind: 'limit' }> & { irregular: estypes.SearchRequest };

/**
 * A limit split by shape: the first rows of the events matched exactly, and every event matched only
 * as a superset (the rows after the exact ones). A first search of the limit's size over a superset
 * of both, when it falls short, read every event either part matches: all its rows are checked as a
 * superset part's. Only a full page sends the two searches, the exact one limited.
 */
async function splitRows(scan: EventScan, take: SplitTake, options: ExecutorOptions, budget: ScanBudget): Promise<ScanRows> {
  if (take.superset) {
    const first = await eventRows({ ...scan, search: take.superset }, options, budget);
    if (first.length < take.rows) return { rows: first, supersetRows: first.length };
  }
  const irregular: Scan = { ...scan, search: take.irregular, take: { kind: 'all' } };
  const [exact, rest] = await Promise.all([eventRows(scan, options, budget), eventRows(irregular, options, budget)]);
  return { rows: [...exact, ...rest], supersetRows: rest.length };
}

/**
 * The events of a scan, its columns only, page after page in the search's order (search_after on
 * timestamp and id) until the events run out or a limited scan has its rows. With a budget, each
 * page is no larger than the budget grants, and the budget refuses the query once the request's
 * scans have read more than its total.
 */
async function eventRows(scan: Scan, options: ExecutorOptions, budget?: ScanBudget): Promise<Record<string, unknown>[]> {
  if (scan.kind !== 'events') throw new Error(`log rows come from an event scan, not ${scan.kind}`);
  const columns = scan.columns.map((column) => column.name);
  const wanted = scan.take.kind === 'limit' ? scan.take.rows : Number.POSITIVE_INFINITY;
  const pageSize = scan.search.size ?? 10;
  const rows: Record<string, unknown>[] = [];
  let after: estypes.SortResults | undefined;
  for (;;) {
    const size = Math.min(pageSize, wanted - rows.length);
    const granted = budget ? await budget.reserve(size) : size;
    let hits: estypes.SearchHit<Record<string, unknown>>[];
    try {
      hits = hitsOf(await search({ ...scan.search, size: granted, ...(after ? { search_after: after } : {}) }, { ...options, signal: budget?.signal }));
    } catch (error) {
      budget?.release(granted);
      throw error;
    }
    const page = columnRows(hits, columns);
    budget?.settle(scan, granted, hits.length, budget.weighsPages ? rowBytes(page) : 0);
    options.reads?.scanned(scan.search.index, hits.length);
    if (scan.take.kind === 'limit') options.reads?.pushed.add('limit');
    rows.push(...page);
    if (hits.length < granted || rows.length >= wanted) return rows;
    after = hits[hits.length - 1]!.sort;
  }
}

/** An event scan's hits; its filter_path leaves no `hits` at all when nothing matched. */
function hitsOf(response: estypes.SearchResponse<Record<string, unknown>>): estypes.SearchHit<Record<string, unknown>>[] {
  return response.hits?.hits ?? [];
}

async function aggregationsOf(scan: Scan, options: ExecutorOptions): Promise<Record<string, unknown> | undefined> {
  if (scan.kind !== 'request_counts') throw new Error(`bucket rows come from a request-count scan, not ${scan.kind}`);
  const response = await search(scan.search, options);
  options.reads?.scanned(scan.search.index, hitsTotal(response));
  return response.aggregations as Record<string, unknown> | undefined;
}

function usageRowsOf(aggregations: Record<string, unknown> | undefined, scan: Scan): unknown[] {
  if (scan.kind !== 'request_counts') throw new Error(`usage rows come from a request-count scan, not ${scan.kind}`);
  return usageRows(aggregations, scan.countColumns);
}

/** The chosen columns of each event row; a metadata path reads the first record on its way (records are arrays of records in a row). */
function selectedRows(rows: Record<string, unknown>[], columns: SelectedColumn[]): Record<string, unknown>[] {
  return rows.map((row) => Object.fromEntries(columns.map((column) => [column.name, valueAt(row, column.path)])));
}

function valueAt(row: Record<string, unknown>, path: string): unknown {
  let value: unknown = row;
  for (const step of path.split('.')) {
    if (Array.isArray(value) && value.length > 0 && typeof value[0] === 'object' && value[0] !== null && !Array.isArray(value[0])) value = value[0];
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
    value = (value as Record<string, unknown>)[step];
  }
  return value ?? null;
}

/** A chart's buckets, oldest first: the bucket start in microseconds and the aggregate. */
async function chartRows(scan: Scan, options: ExecutorOptions): Promise<Record<string, unknown>[]> {
  if (scan.kind !== 'chart') throw new Error(`chart rows come from a chart scan, not ${scan.kind}`);
  const rows: Record<string, unknown>[] = [];
  for await (const bucket of compositeBuckets(scan.search, ['buckets'], options)) {
    const node = scan.value.path.reduce<unknown>((inner, step) => (inner as Record<string, unknown> | undefined)?.[step], bucket) as
      | { doc_count?: number; value?: number | null; values?: Record<string, number | null> }
      | undefined;
    const value =
      scan.value.from === 'doc_count'
        ? (node?.doc_count ?? bucket.doc_count)
        : scan.value.from === 'percentile'
          ? (node?.values?.[scan.value.percentile!] ?? null)
          : (node?.value ?? null);
    rows.push({ timestamp: (bucket.key!.timestamp as number) * 1000, [scan.value.column]: value });
  }
  return rows;
}
