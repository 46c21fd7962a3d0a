import type { z } from 'zod';
import type { ProjectField, SourceName } from '../shared/sources.ts';
import type { ParameterValue, SqlType } from '../shared/sql-type.ts';
import type { ParameterType } from './endpoint-record.ts';
import { EVENT_COLUMNS, type EventColumn } from '../shared/stored-event.ts';

/**
 * A saved endpoint as data: its parameters, the CTEs its saved query defines (each with its output
 * columns and how it is scoped), and its final selection. The planner turns these into plans; the
 * cache, the OpenAPI document and the sandbox read them too.
 */
export interface EndpointDefinition<Params extends Record<string, unknown> = Record<string, unknown>> {
  /** Fixed UUID, usable in the path instead of the name. */
  readonly id: string;
  readonly name: string;
  readonly description: string;
  /** Declared parameters; anything else a caller sends is ignored. */
  readonly parameters: z.ZodType<Params>;
  /** One line per declared parameter, for error messages and the OpenAPI document. */
  readonly parameterDocs: readonly ParameterDoc[];
  /**
   * Declared parameters whose `@name` reaches the SQL as a value of their type; any other parameter
   * reaches it as text, which BigQuery coerces where it is compared (the spec endpoints' way).
   */
  readonly parameterTypes?: Readonly<Record<string, Exclude<ParameterValue, string>['type']>>;
  readonly ctes: readonly Cte[];
  readonly selection: Selection;
  /** No response ever carries more rows than this. */
  readonly maxRows: number;
  /** null = never cached. */
  readonly cache: { ttlSeconds: number; warmEverySeconds: number | null } | null;
  /** Whether callers may send `sql` / `lql` over the CTEs. */
  readonly sandboxable: boolean;
  /** Redaction when the caller does not ask for it. */
  readonly redactPii: boolean;
  /** The stored version this definition was made from; absent for a definition that is code only. */
  readonly version?: number;
}

export interface ParameterDoc {
  name: string;
  required: boolean;
  description: string;
  allowedValues?: readonly string[];
  /** The declared type; absent = text. */
  type?: ParameterType;
  /** Used when the caller sends nothing. */
  default?: string | number | boolean;
  /** A regular expression the whole value must match. */
  pattern?: string;
}

/** One output column of a CTE, as a sandboxed query sees it. */
export interface CteColumn {
  name: string;
  type: SqlType;
}

/** Equality of a source's project field with a parameter (docs/design/SPEC.md 2.4). */
export interface ProjectMatch {
  field: ProjectField;
  parameter: string;
}

/** Optional time bounds read from parameters: start exclusive, end inclusive (docs/design/SPEC.md 4.2). */
export interface TimeBounds {
  startExclusive: string;
  endInclusive: string;
}

/** Events of one source for one project: project match first, then the time bounds (docs/design/SPEC.md 4.2 rule 2). */
export interface SourceCte {
  kind: 'source';
  name: string;
  /** Other names a sandboxed query may use for this CTE (the reference implementation's). */
  aliases: readonly string[];
  source: SourceName;
  columns: readonly CteColumn[];
  scope: { project: ProjectMatch; timeBounds: TimeBounds };
}

export type BucketUnit = 'minute' | 'hour' | 'day';

export interface UsageWindow {
  /** Look-back from the current time, in milliseconds. */
  lookBackMs: number;
  bucket: BucketUnit;
}

/** A look-back window chosen by a parameter (usage.api-counts' `interval`). */
export interface WindowScope {
  parameter: string;
  windows: Readonly<Record<string, UsageWindow>>;
}

/**
 * Events of one source inside a look-back window that have at least one request record whose url
 * matches a pattern parameter (the rows usage.api-counts counts, before bucketing).
 */
export interface WindowedSourceCte {
  kind: 'windowed_source';
  name: string;
  source: SourceName;
  columns: readonly CteColumn[];
  scope: {
    window: WindowScope;
    /** Nested records whose `url` is matched anywhere by the pattern parameter. */
    requestPath: 'metadata.request';
    urlPatternParameter: string;
  };
}

/** The start of the look-back window as a one-row table (the saved query's `dates`). */
export interface WindowStartCte {
  kind: 'window_start';
  name: string;
  columns: readonly CteColumn[];
  window: WindowScope;
}

/** Counts of matching request records per time bucket, per path text (docs/design/SPEC.md 4.1). */
export interface RequestCountsCte {
  kind: 'request_counts';
  name: string;
  /** The windowed source it counts; its scope is this CTE's scope. */
  from: string;
  columns: readonly CteColumn[];
  /** Output column -> text its request path must contain. */
  pathColumns: Readonly<Record<string, string>>;
}

export type Cte = SourceCte | WindowedSourceCte | WindowStartCte | RequestCountsCte;

/** Raw events of one CTE, newest first (id breaks ties so pages are stable). */
export interface EventSelection {
  kind: 'events';
  from: string;
  columns: readonly Exclude<EventColumn, 'project'>[];
  limit: number;
}

/** Every bucket of a request-counts CTE, oldest first. */
export interface BucketSelection {
  kind: 'buckets';
  from: string;
}

/**
 * An operator's saved SQL over the endpoint's CTEs, answered through the sandbox pipeline like a
 * caller's `sql`; its rows are whatever the query selects.
 */
export interface SqlSelection {
  kind: 'sql';
  text: string;
}

export type Selection = EventSelection | BucketSelection | SqlSelection;

const EVENT_COLUMN_TYPES: Readonly<Record<EventColumn, SqlType>> = {
  id: { kind: 'string' },
  timestamp: { kind: 'timestamp' },
  event_message: { kind: 'string' },
  // the element type is inferred from the scanned rows
  metadata: { kind: 'array', element: { kind: 'unknown' } },
  project: { kind: 'string' },
};

/** The columns every source CTE exposes, plus `project` where the source keeps it as a column. */
export function sourceColumns(hasProjectColumn: boolean): CteColumn[] {
  return EVENT_COLUMNS.filter((name) => name !== 'project' || hasProjectColumn).map((name) => ({ name, type: EVENT_COLUMN_TYPES[name] }));
}

/** The CTE a sandboxed query names, by its name or one of its aliases. */
export function cteByName(ctes: readonly Cte[], name: string): Cte | undefined {
  return ctes.find((cte) => cte.name === name || (cte.kind === 'source' && cte.aliases.includes(name)));
}

/** Every table name a sandboxed query on this endpoint may read. */
export function tableNames(ctes: readonly Cte[]): string[] {
  return ctes.flatMap((cte) => [cte.name, ...(cte.kind === 'source' ? cte.aliases : [])]);
}

/**
 * The parameters the CTEs' scopes read, whether or not the saved SQL names them: those a CTE needs
 * (a source's project) and those it reads when sent (a source's time bounds).
 */
export function scopeParameters(ctes: readonly Cte[]): { required: Set<string>; optional: Set<string> } {
  const required = new Set<string>();
  const optional = new Set<string>();
  for (const cte of ctes) {
    if (cte.kind === 'source') {
      required.add(cte.scope.project.parameter);
      optional.add(cte.scope.timeBounds.startExclusive).add(cte.scope.timeBounds.endInclusive);
    } else if (cte.kind === 'windowed_source') {
      required.add(cte.scope.window.parameter).add(cte.scope.urlPatternParameter);
    } else if (cte.kind === 'window_start') {
      required.add(cte.window.parameter);
    }
  }
  return { required, optional };
}
