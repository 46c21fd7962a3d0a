/**
 * The nine log sources (docs/design/SPEC.md 2.4). Each has a CTE name (also the default Kafka topic), time
 * partitioned Elasticsearch indices of its own, and the field that ties an event to a project.
 */
export type ProjectField = 'project' | 'metadata.project_ref' | 'metadata.project';

export interface Source {
  /** CTE name in the saved queries, default topic name, and the suffix of the index name. */
  readonly name: SourceName;
  /** The upstream source name the samples are named after. */
  readonly upstream: string;
  readonly kind: string;
  /** Elasticsearch field compared for equality with the `project` parameter. */
  readonly projectField: ProjectField;
}

export const SOURCE_NAMES = [
  'edge_logs',
  'postgres_logs',
  'function_edge_logs',
  'function_logs',
  'auth_logs',
  'realtime_logs',
  'storage_logs',
  'rest_api_logs',
  'connection_pooler_logs',
] as const;

export type SourceName = (typeof SOURCE_NAMES)[number];

export const SOURCES: readonly Source[] = [
  { name: 'edge_logs', upstream: 'cloudflare.logs.prod', kind: 'HTTP gateway (edge) request logs', projectField: 'project' },
  { name: 'postgres_logs', upstream: 'postgres.logs', kind: 'database logs', projectField: 'project' },
  { name: 'function_edge_logs', upstream: 'deno-relay-logs', kind: 'serverless function gateway logs', projectField: 'metadata.project_ref' },
  { name: 'function_logs', upstream: 'deno-subhosting-events', kind: 'serverless function runtime events', projectField: 'metadata.project_ref' },
  { name: 'auth_logs', upstream: 'gotrue.logs.prod', kind: 'authentication service logs', projectField: 'project' },
  { name: 'realtime_logs', upstream: 'realtime.logs.prod', kind: 'realtime service logs', projectField: 'metadata.project' },
  { name: 'storage_logs', upstream: 'storage.logs.prod.2', kind: 'storage service logs', projectField: 'metadata.project' },
  { name: 'rest_api_logs', upstream: 'postgREST.logs.prod', kind: 'auto-generated REST API logs', projectField: 'project' },
  { name: 'connection_pooler_logs', upstream: 'pgbouncer.logs.prod', kind: 'database connection pooler logs', projectField: 'project' },
];

export function sourceByName(name: string): Source | undefined {
  return SOURCES.find((source) => source.name === name);
}

/**
 * Where each source lives. The index prefix keeps our indices clear of the built-in `logs-*-*`
 * templates of full Elasticsearch distributions, and lets tests isolate themselves; the indices
 * themselves are time partitions (shared/partitions.ts).
 */
export interface SourceLocations {
  indexPrefix: string;
  topicPrefix: string;
}

export function topicName(locations: Pick<SourceLocations, 'topicPrefix'>, source: SourceName): string {
  return `${locations.topicPrefix}${source}`;
}

export function deadLetterTopicName(locations: Pick<SourceLocations, 'topicPrefix'>, source: SourceName): string {
  return `${locations.topicPrefix}${source}.dead-letter`;
}
