import type { Client } from '@elastic/elasticsearch';
import { tableNames, type EndpointDefinition } from '../../queries/endpoint.ts';
import type { Principal } from '../auth/principal.ts';
import type { ResultCache } from '../cache/result-cache.ts';
import type { EmbeddedEngine } from '../executor/engine/embedded-engine.ts';
import type { FieldCatalogs } from '../executor/field-catalogs.ts';
import { executePlan } from '../executor/index.ts';
import { ApiError, UnknownField } from '../errors.ts';
import { redactText } from '../redaction.ts';
import { elasticsearchQuerySeconds } from '../metrics.ts';
import { planEndpointQuery, type Plan } from '../planner/index.ts';
import type { RegexLimits } from '../planner/regex-budget.ts';
import type { SandboxLimits } from '../planner/sandbox/index.ts';
import type { PartitionPeriod } from '../../shared/partitions.ts';
import type { SourceName } from '../../shared/sources.ts';
import type { SandboxQueryOptions } from '../sql/index.ts';
import { parseLql } from '../lql/index.ts';
import type { LqlQuery } from '../lql/syntax.ts';
import type { Query } from '../sql/syntax.ts';
import type { ServerTiming } from '../http/server-timing.ts';
import type { StoreReads } from '../executor/store-reads.ts';
import type { HeldEvents } from '../executor/held-events.ts';
import { encodeAnswer } from './answer-body.ts';
import { savedCteNames, withSavedCtes } from './saved-ctes.ts';
import { assertEndpointAllowed, cacheKey, redactionRequested, sandboxRequest, validateParameters, type RedactHeaders } from './request.ts';

export interface AnswerDependencies {
  elasticsearch: Client;
  indexPrefix: string;
  /** Sources partitioned other than daily (PARTITION_PERIODS). */
  partitionPeriods?: Partial<Record<SourceName, PartitionPeriod>>;
  /** What one request's regular expressions may cost the store (default DEFAULT_REGEX_LIMITS). */
  regexLimits?: RegexLimits;
  queryTimeoutMs: number;
  /** Current time in epoch milliseconds; injected so look-back windows are exact in tests. */
  clock: { now(): number };
  resultCache: ResultCache;
  sandbox: {
    limits: SandboxLimits;
    /** The most characters of engine SQL a sandboxed query may translate to. */
    maxTranslatedChars: number;
    /** The largest string or array a sandboxed query's functions may build in the engine (its result's byte cap). */
    maxValueBytes: number;
    fieldCatalogs: FieldCatalogs;
    /** The embedded engine, started on first use. */
    engine: () => Promise<EmbeddedEngine>;
    /** The SQL front end (parse, convert, validate), run off the event loop. */
    parseSql: (text: string, options: SandboxQueryOptions) => Promise<Query>;
    /** The events all sandboxed queries of the process may hold at once. */
    heldEvents?: HeldEvents;
  };
}

export interface EndpointRequest {
  endpoint: EndpointDefinition;
  principal: Principal;
  /** Query-string and body parameters, merged. */
  supplied: Record<string, unknown>;
  /** The SVC-ENDPOINT-REDACT-PII header and its alias as received. */
  redactHeaders: RedactHeaders;
  /** Where the caller's run adds up its phases (Server-Timing); warming runs are not the caller's and add nothing. */
  timing: ServerTiming;
  /** Where the caller's own run collects what it read, when the caller asked for statistics. */
  reads?: StoreReads;
}

/** Warming runs take their turns in the engine as one key of their own (API key ids are hex or 'bootstrap'). */
const WARMING_KEY = 'cache-warming';

type ParsedSandbox = { language: 'sql'; query: Query } | { language: 'lql'; query: LqlQuery };

export interface Answer {
  /** The response body, `{"result":[...]}` in UTF-8; a cached one is shared and never modified. */
  body: Buffer;
  cache: 'HIT' | 'MISS' | 'BYPASS';
  ageSeconds: number;
}

/**
 * One request from key scope to rows: scope check, parameters, the cached answer if there is one,
 * else the sandboxed query (SQL or LQL) if any, plan, execution, redaction, cache. A cache hit skips
 * parsing and planning: its key holds everything they depend on but the time (endpoint, parameters,
 * query text, redaction, the key's projects), and only answers that planned and ran are stored. On a
 * miss the plan is built before anything runs, so bad queries and forbidden projects fail first;
 * that plan serves the first run, and each warming run plans anew to measure its window from its own time.
 */
export async function answerEndpointQuery(request: EndpointRequest, dependencies: AnswerDependencies): Promise<Answer> {
  const { endpoint, principal } = request;
  assertEndpointAllowed(principal, endpoint);
  const redact = redactionRequested(request.redactHeaders, endpoint);
  try {
    return await computeAnswer(request, redact, dependencies);
  } catch (error) {
    // messages quote the caller's values and the engine's (a cast that failed on an address): redacted like rows
    if (redact && error instanceof ApiError) error.message = redactText(error.message);
    throw error;
  }
}

async function computeAnswer(request: EndpointRequest, redact: boolean, dependencies: AnswerDependencies): Promise<Answer> {
  const startedAt = performance.now();
  const { endpoint, principal } = request;
  const callerQuery = endpoint.sandboxable ? sandboxRequest(request.supplied) : undefined;
  // an operator's saved SQL runs through the sandbox pipeline, as a caller's query does
  const sandbox = callerQuery ?? (endpoint.selection.kind === 'sql' ? { language: 'sql' as const, text: endpoint.selection.text } : undefined);
  const parameters = validateParameters(endpoint, request.supplied);
  const key = endpoint.cache === null ? undefined : cacheKey(endpoint, parameters, redact, principal, callerQuery);
  const { timing } = request;
  const hit = key === undefined ? undefined : timing.measure('cache', () => dependencies.resultCache.lookUp(key));
  if (hit) return { body: hit.body, cache: 'HIT', ageSeconds: hit.ageSeconds };
  const planStarted = performance.now();
  let parsed: ParsedSandbox | undefined;
  const sources = endpoint.ctes.flatMap((cte) => ('source' in cte ? [cte.source] : []));
  const plan = async (): Promise<Plan> => {
    const context = {
      now: dependencies.clock.now(),
      projects: principal.projects,
      indexPrefix: dependencies.indexPrefix,
      partitionPeriods: dependencies.partitionPeriods,
      regexLimits: dependencies.regexLimits,
    };
    const query = parsed;
    if (!query) return planEndpointQuery(endpoint, parameters, context);
    const planWith = async (fresh: boolean) => {
      const catalogs = await dependencies.sandbox.fieldCatalogs.forSources(dependencies.indexPrefix, sources, { fresh });
      return planEndpointQuery(endpoint, parameters, context, { ...query, limits: dependencies.sandbox.limits, catalogs });
    };
    try {
      const planned = await planWith(false);
      // a name bound to no record may be a field newer than the kept field types: read them again once
      return planned.unboundNames ? await planWith(true) : planned;
    } catch (error) {
      // the kept field types may predate the field's first event: read them again before refusing
      if (error instanceof UnknownField) return planWith(true);
      throw error;
    }
  };
  let firstPlan: Plan | undefined;
  try {
    parsed =
      sandbox?.language === 'lql'
        ? { language: 'lql', query: parseLql(sandbox.text) }
        : sandbox
          ? { language: 'sql', query: await sandboxSql(endpoint, sandbox.text, sandbox === callerQuery, dependencies) }
          : undefined;
    firstPlan = await plan();
  } finally {
    timing.add('plan', performance.now() - planStarted);
  }
  const run = async () => {
    // the caller's run is timed from the request's start; a warming run (every later one) from its own, as its own key
    const warming = firstPlan === undefined;
    const current = firstPlan ?? (await plan());
    firstPlan = undefined;
    const rows = await executePlan(current, {
      elasticsearch: dependencies.elasticsearch,
      timeoutMs: dependencies.queryTimeoutMs,
      observe: (seconds) => elasticsearchQuerySeconds.observe({ endpoint: endpoint.name }, seconds),
      engine: dependencies.sandbox.engine,
      maxTranslatedChars: dependencies.sandbox.maxTranslatedChars,
      maxValueBytes: dependencies.sandbox.maxValueBytes,
      engineKey: warming ? WARMING_KEY : principal.keyId,
      deadline: (warming ? performance.now() : startedAt) + dependencies.queryTimeoutMs,
      timing: warming ? undefined : timing,
      reads: warming ? undefined : request.reads,
      heldEvents: dependencies.sandbox.heldEvents,
      writtenLogRows: { redact },
    });
    return warming ? encodeAnswer(rows, { redact }) : timing.measureAsync('encode', () => encodeAnswer(rows, { redact }));
  };
  if (endpoint.cache === null || key === undefined) return { body: await run(), cache: 'BYPASS', ageSeconds: 0 };
  const cached = await dependencies.resultCache.fetch({ key, policy: endpoint.cache, run });
  return { body: cached.body, cache: cached.status, ageSeconds: cached.ageSeconds };
}

/**
 * The SQL to plan: an operator's saved SQL, a caller's query over the endpoint's tables, or (on an
 * endpoint with saved SQL) a caller's query that may also read the saved query's CTEs.
 */
async function sandboxSql(endpoint: EndpointDefinition, text: string, fromCaller: boolean, dependencies: AnswerDependencies): Promise<Query> {
  const options = { allowedTables: tableNames(endpoint.ctes), parameterNames: endpoint.parameterDocs.map((parameter) => parameter.name) };
  if (!fromCaller || endpoint.selection.kind !== 'sql') return dependencies.sandbox.parseSql(text, options);
  const saved = await dependencies.sandbox.parseSql(endpoint.selection.text, options);
  const caller = await dependencies.sandbox.parseSql(text, { ...options, allowedTables: [...options.allowedTables, ...savedCteNames(saved)] });
  return withSavedCtes(saved, caller);
}
