import type { z } from 'zod';
import type { ProjectField, SourceName } from '../shared/sources.ts';

/**
 * A saved endpoint as data: what the route validates, what the compiler turns into an
 * Elasticsearch request, and what the cache, the OpenAPI document and (later) the sandbox read.
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
  readonly ctes: readonly Cte[];
  readonly selection: Selection;
  /** No response ever carries more rows than this. */
  readonly maxRows: number;
  /** null = never cached. */
  readonly cache: { ttlSeconds: number; warmEverySeconds: number | null } | null;
  /** Whether callers may send `sql` / `lql` over the CTEs (the planner is a later issue). */
  readonly sandboxable: boolean;
  /** Redaction when the caller does not ask for it. */
  readonly redactPii: boolean;
}

export interface ParameterDoc {
  name: string;
  required: boolean;
  description: string;
  allowedValues?: readonly string[];
}

/** Equality of a source's project field with a parameter (SPEC.md 2.4). */
export interface ProjectFilter {
  field: ProjectField;
  parameter: string;
}

/** Optional time bounds read from parameters: start exclusive, end inclusive (SPEC.md 4.2). */
export interface TimeBounds {
  startExclusive: string;
  endInclusive: string;
}

/** One source, project filter first, then time bounds (SPEC.md 4.2 rule 2). */
export interface SourceCte {
  kind: 'source';
  name: SourceName;
  source: SourceName;
  projectFilter: ProjectFilter;
  timeBounds: TimeBounds;
}

export type BucketUnit = 'minute' | 'hour' | 'day';

export interface UsageWindow {
  /** Look-back from the current time, in milliseconds. */
  lookBackMs: number;
  bucket: BucketUnit;
}

/** Counts of request records per time bucket, as the saved usage SQL computes them (SPEC.md 4.1). */
export interface RequestCountsCte {
  kind: 'request_counts';
  name: string;
  source: SourceName;
  /** Path of the nested request records inside an event. */
  requestPath: 'metadata.request';
  /** Parameter naming the window; its values are the keys of `windows`. */
  windowParameter: string;
  windows: Readonly<Record<string, UsageWindow>>;
  /** Parameter holding a regular expression matched anywhere in each request record's url. */
  urlPatternParameter: string;
  /** Output column -> text its request path must contain. */
  pathColumns: Readonly<Record<string, string>>;
}

export type Cte = SourceCte | RequestCountsCte;

/** Raw events of one CTE. */
export interface EventSelection {
  kind: 'events';
  from: SourceName;
  columns: readonly ('id' | 'timestamp' | 'event_message' | 'metadata')[];
  /** Newest first; id breaks ties so pages are stable. */
  order: 'timestamp_desc';
  limit: number;
}

/** Every bucket of a request-counts CTE, oldest first. */
export interface BucketSelection {
  kind: 'buckets';
  from: string;
  order: 'timestamp_asc';
}

export type Selection = EventSelection | BucketSelection;
