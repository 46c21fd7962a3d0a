import type { Client, estypes } from '@elastic/elasticsearch';
import type { EndpointDefinition } from '../queries/endpoint.ts';
import { tableNames } from '../queries/endpoint.ts';
import type { Config } from '../shared/config.ts';
import { validateParameters } from '../src/endpoints/request.ts';
import { savedCteNames, withSavedCtes } from '../src/endpoints/saved-ctes.ts';
import { translateToDuckDb } from '../src/executor/duckdb-sql/index.ts';
import { openLockedDatabase, type LockedDatabase } from '../src/executor/engine/locked-database.ts';
import { inferTableSchema, type DeclaredColumn } from '../src/executor/engine/schema-inference.ts';
import { TableLoad } from '../src/executor/engine/table-loader.ts';
import { FieldCatalogs } from '../src/executor/field-catalogs.ts';
import { columnRows } from '../src/executor/rows/logs.ts';
import { bucketCounts } from '../src/executor/rows/usage.ts';
import { planEndpointQuery, type Plan } from '../src/planner/index.ts';
import type { AggregationScan, Scan } from '../src/planner/plan.ts';
import { initSqlParser, parseSandboxQuery } from '../src/sql/index.ts';
import type { SqlType, TableSchema } from '../src/sql/types.ts';
import { planningSettings } from '../src/server.ts';
import { percentile } from './latency.ts';
import type { LoadPoint } from './results.ts';

/**
 * The floor a sandboxed query is compared with (issue 20): the Elasticsearch requests its plan sends,
 * taken from our planner and sent straight with the client, and, when the plan has a residual step,
 * DuckDB run in this process over the rows they return, in a database kept warm from one run to the
 * next. Planning, schema inference and the SQL translation are done once, before the clock: they are
 * our service's work, not the store's or DuckDB's. A pushed-down aggregation's irregular-event check
 * is one of its requests; when it finds irregular events, the fallback plan is the pipeline.
 */
export interface DirectPipeline {
  /** One run; returns the answer's row count. */
  run(): Promise<number>;
  /** What the run does, e.g. "2 searches + DuckDB". */
  describe: string;
}

interface Sandboxed {
  endpoint: EndpointDefinition;
  /** The request's parameters, `sql` among them. */
  params: Record<string, string>;
  indexPrefix: string;
}

/** The plan our service builds for the request (projects unrestricted, as for the bench's key). */
export async function sandboxPlan(request: Sandboxed, elasticsearch: Client, config: Config): Promise<Plan> {
  await initSqlParser();
  const { endpoint, params } = request;
  const options = { allowedTables: tableNames(endpoint.ctes), parameterNames: endpoint.parameterDocs.map((parameter) => parameter.name) };
  const sql = params.sql;
  if (sql === undefined) throw new Error('the direct pipeline is for sandboxed SQL: give the `sql` parameter');
  let query = parseSandboxQuery(sql, options);
  if (endpoint.selection.kind === 'sql') {
    const saved = parseSandboxQuery(endpoint.selection.text, options);
    query = withSavedCtes(saved, parseSandboxQuery(sql, { ...options, allowedTables: [...options.allowedTables, ...savedCteNames(saved)] }));
  }
  const settings = planningSettings(config);
  const sources = endpoint.ctes.flatMap((cte) => ('source' in cte ? [cte.source] : []));
  const catalogs = await new FieldCatalogs(elasticsearch, 60_000, { now: Date.now }, config.QUERY_TIMEOUT_MS).forSources(request.indexPrefix, sources);
  const context = {
    now: Date.now(),
    projects: null,
    indexPrefix: request.indexPrefix,
    partitionPeriods: settings.partitionPeriods,
    regexLimits: settings.regexLimits,
  };
  return planEndpointQuery(endpoint, validateParameters(endpoint, params), context, { language: 'sql', query, limits: settings.sandboxLimits, catalogs });
}

/** Warm in-process DuckDB databases, one per concurrent run. */
export class DatabasePool {
  private readonly idle: LockedDatabase[] = [];
  private readonly all: LockedDatabase[] = [];

  constructor(private readonly limits: { memoryLimit: string; threads: number }) {}

  async use<T>(work: (database: LockedDatabase) => Promise<T>): Promise<T> {
    let database = this.idle.pop();
    if (!database) {
      database = await openLockedDatabase(this.limits);
      this.all.push(database);
    }
    try {
      return await work(database);
    } finally {
      this.idle.push(database);
    }
  }

  close(): void {
    for (const database of this.all.splice(0)) database.close();
    this.idle.length = 0;
  }
}

type Rows = Record<string, unknown>[];

/** Prepares the direct pipeline of `plan`: one first run decides the plan actually taken and the residual's table types. */
export async function directPipeline(plan: Plan, elasticsearch: Client, databases: DatabasePool): Promise<DirectPipeline> {
  const aggregation = plan.scans.find((scan): scan is AggregationScan => scan.kind === 'aggregation');
  let taken: Pick<Plan, 'scans' | 'residual' | 'rowCap'> = plan;
  if (aggregation && totalHits(await elasticsearch.search(aggregation.irregular)) > 0) {
    taken = { ...plan, scans: [aggregation.fallback.scan], residual: aggregation.fallback.residual };
  }
  const searches = taken.scans.reduce((count, scan) => count + searchesOf(scan), 0);
  const fetchTables = () => Promise.all(taken.scans.map((scan) => scanRows(scan, elasticsearch)));
  const residual = taken.residual;
  if (!residual) {
    return {
      describe: `${searches} search${searches === 1 ? '' : 'es'}`,
      run: async () => (await fetchTables()).reduce((count, rows) => count + rows.length, 0),
    };
  }
  const first = await fetchTables();
  const schemas = taken.scans.map((scan, position) => schemaOf(scan, first[position]!));
  const { sql } = translateToDuckDb(residual.query, {
    tables: schemas,
    bindings: residual.bindings,
    parameters: residual.parameters,
    now: residual.now,
    maxChars: Number.MAX_SAFE_INTEGER,
    maxValueBytes: 16 * 1024 * 1024,
  });
  const run = async () => {
    const tables = await fetchTables();
    return databases.use(async ({ connection }) => {
      try {
        for (const [position, schema] of schemas.entries()) {
          const load = await TableLoad.begin(connection, schema, position);
          load.append(tables[position]!, 0);
          await load.finish();
        }
        const reader = await connection.runAndReadAll(sql);
        return Math.min(reader.getRowObjectsJson().length, taken.rowCap);
      } finally {
        for (const schema of schemas) await connection.run(`DROP TABLE IF EXISTS "${schema.name.replaceAll('"', '""')}"`);
      }
    });
  };
  return { describe: `${searches} search${searches === 1 ? '' : 'es'} + DuckDB`, run };
}

/** Searches a scan sends at least (event scans page on when a page comes back full). */
function searchesOf(scan: Scan): number {
  if (scan.kind === 'constant') return 0;
  if (scan.kind === 'aggregation' || (scan.kind === 'events' && scan.take.kind === 'limit' && scan.take.irregular && !scan.take.superset)) return 2;
  return 1;
}

async function scanRows(scan: Scan, elasticsearch: Client): Promise<Rows> {
  switch (scan.kind) {
    case 'constant':
      return scan.rows;
    case 'request_counts': {
      const response = await elasticsearch.search(scan.search);
      return bucketCounts(response.aggregations as Record<string, unknown> | undefined, scan.countColumns).map((row) => ({
        ...row,
        timestamp: row.timestamp * 1000,
      }));
    }
    case 'aggregation': {
      const [irregular, groups] = await Promise.all([elasticsearch.search(scan.irregular), aggregationRows(scan, elasticsearch)]);
      if (totalHits(irregular) > 0) throw new Error(`${scan.table}: irregular events appeared after the pipeline was prepared`);
      return groups;
    }
    case 'events': {
      const columns = scan.columns.map((column) => column.name);
      const wanted = scan.take.kind === 'limit' ? scan.take.rows : Number.POSITIVE_INFINITY;
      const irregularSearch = scan.take.kind === 'limit' ? scan.take.irregular : undefined;
      // a split limit reads a superset of both parts first, and sends the two searches only when that page is full
      const superset = scan.take.kind === 'limit' ? scan.take.superset : undefined;
      const first = superset ? await eventPages(superset, wanted, columns, elasticsearch) : undefined;
      if (first && first.length < wanted) return first;
      const irregular = irregularSearch ? eventPages(irregularSearch, Number.POSITIVE_INFINITY, columns, elasticsearch) : Promise.resolve([]);
      const [rows, rest] = await Promise.all([eventPages(scan.search, wanted, columns, elasticsearch), irregular]);
      return [...rows, ...rest];
    }
    case 'chart':
      throw new Error('a chart scan belongs to LQL, not to sandboxed SQL');
  }
}

/** Page after page with search_after, as a store client pages a sorted search. */
async function eventPages(search: estypes.SearchRequest, wanted: number, columns: string[], elasticsearch: Client): Promise<Rows> {
  const pageSize = search.size ?? 10;
  const rows: Rows = [];
  let after: estypes.SortResults | undefined;
  for (;;) {
    const size = Math.min(pageSize, wanted - rows.length);
    const response = await elasticsearch.search<Record<string, unknown>>({ ...search, size, ...(after ? { search_after: after } : {}) });
    const hits = response.hits?.hits ?? [];
    rows.push(...columnRows(hits, columns));
    if (hits.length < size || rows.length >= wanted) return rows;
    after = hits[hits.length - 1]!.sort;
  }
}

interface Bucket {
  key?: Record<string, unknown>;
  doc_count: number;
  [aggregation: string]: unknown;
}

const at = (node: unknown, path: string[]) => path.reduce<unknown>((inner, step) => (inner as Record<string, unknown> | undefined)?.[step], node);

/** The composite's buckets page after page (or the one bucket of an aggregation without keys), as rows of keys then metrics. */
async function aggregationRows(scan: AggregationScan, elasticsearch: Client): Promise<Rows> {
  const rows: Rows = [];
  let after: Record<string, unknown> | undefined;
  for (;;) {
    const request = structuredClone(scan.search);
    const container = at(
      request.aggs,
      scan.groupsAt.flatMap((name, step) => (step === 0 ? [name] : ['aggs', name])),
    ) as estypes.AggregationsAggregationContainer;
    if (container.composite && after) container.composite.after = after as Record<string, estypes.FieldValue>;
    const response = await elasticsearch.search(request);
    const groups = (at(response.aggregations, scan.groupsAt) ?? { doc_count: 0 }) as { buckets?: Bucket[]; after_key?: Record<string, unknown> } & Bucket;
    const buckets = container.composite ? (groups.buckets ?? []) : [groups];
    for (const bucket of buckets) rows.push(groupRow(scan, bucket));
    if (!container.composite || !groups.after_key || buckets.length === 0) return rows;
    after = groups.after_key;
  }
}

function groupRow(scan: AggregationScan, bucket: Bucket): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (const key of scan.keys) {
    const value = bucket.key?.[key.column] ?? null;
    row[key.column] = key.kind === 'date' && typeof value === 'number' ? value * 1000 : value;
  }
  for (const metric of scan.metrics) {
    if (metric.present && ((at(bucket, metric.present) as { doc_count?: number } | undefined)?.doc_count ?? 0) === 0) {
      row[metric.column] = null;
      continue;
    }
    const node = at(bucket, metric.path) as { doc_count?: number; value?: number | null } | undefined;
    row[metric.column] = metric.value === 'doc_count' ? (node?.doc_count ?? 0) : (node?.value ?? null);
  }
  return row;
}

function totalHits(response: estypes.SearchResponse<unknown>): number {
  const total = response.hits.total;
  return typeof total === 'number' ? total : (total?.value ?? 0);
}

/** The residual's table as our executor types it: declared columns, record columns' types read from the rows. */
function schemaOf(scan: Scan, rows: Rows): TableSchema {
  if (scan.kind === 'aggregation') return { name: scan.table, columns: scan.columns };
  const declared: DeclaredColumn[] = scan.columns.map((column) => (holdsUnknown(column.type) ? { name: column.name, type: 'inferred' } : column));
  return inferTableSchema(scan.table, declared, rows);
}

function holdsUnknown(type: SqlType): boolean {
  if (type.kind === 'unknown') return true;
  if (type.kind === 'array') return holdsUnknown(type.element);
  return type.kind === 'struct' && type.fields.some((field) => holdsUnknown(field.type));
}

/**
 * Runs `run` from `concurrency` loops at once, in this process: by time (`seconds`, each loop at
 * least `minPerLoop` runs, so a slow pipeline still yields latencies) or by count (`requests`).
 */
export async function measureInProcess(
  run: () => Promise<unknown>,
  settings: { concurrency: number; seconds?: number; requests?: number; minPerLoop?: number },
): Promise<LoadPoint> {
  const latencies: number[] = [];
  let errors = 0;
  let started = 0;
  const begin = performance.now();
  const until = settings.seconds === undefined ? Number.POSITIVE_INFINITY : begin + settings.seconds * 1000;
  const more = (done: number) =>
    settings.requests === undefined ? performance.now() < until || done < (settings.minPerLoop ?? 0) : started < settings.requests;
  const loop = async () => {
    for (let done = 0; more(done); done += 1) {
      started += 1;
      const at = performance.now();
      try {
        await run();
        latencies.push(performance.now() - at);
      } catch {
        errors += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: settings.concurrency }, loop));
  const seconds = (performance.now() - begin) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    concurrency: settings.concurrency,
    requestsPerSecond: latencies.length / seconds,
    p50Ms: latencies.length > 0 ? percentile(latencies, 50) : NaN,
    p99Ms: latencies.length > 0 ? percentile(latencies, 99) : NaN,
    requests: latencies.length + errors,
    errors,
  };
}
