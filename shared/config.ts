import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { z } from 'zod';
import { SOURCE_NAMES, type SourceName } from './sources.ts';

export const repositoryRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const port = z.coerce.number().int().min(0).max(65535);
const optionalText = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === '' ? undefined : value.trim()));
const brokerList = optionalText.transform((value) =>
  value === undefined ? undefined : value.split(',').map((broker) => broker.trim()).filter(Boolean),
);

/**
 * Every environment variable the platform reads, validated once at start-up.
 * Entry points call loadConfig(process.env); everything else receives the parsed object.
 */
export const configSchema = z.object({
  HOST: z.string().default('127.0.0.1'),
  PORT: port.default(4000),
  KAFKA_BROKERS: brokerList,
  ELASTICSEARCH_URL: optionalText.pipe(z.url().optional()),
  BOOTSTRAP_API_KEY: optionalText.pipe(z.string().min(16, 'BOOTSTRAP_API_KEY must be at least 16 characters').optional()),
  INDEX_PREFIX: z.string().regex(/^[a-z0-9][a-z0-9_.-]*$/, 'lower-case letters, digits, _ . - only').default('logplatform-'),
  TOPIC_PREFIX: z.string().regex(/^[a-zA-Z0-9._-]*$/).default(''),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  // query service: API keys and result cache
  API_KEY_CACHE_SECONDS: z.coerce.number().min(0).max(60).default(5),
  CACHE_MAX_BYTES: z.coerce.number().int().min(0).default(64 * 1024 * 1024),
  // query service: saved endpoints (an Elasticsearch query running longer gets 504)
  QUERY_TIMEOUT_MS: z.coerce.number().int().min(1).max(600_000).default(30_000),
  // query service: per-API-key token bucket on /api/ routes, per process (0 per minute = off)
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(600),
  RATE_LIMIT_BURST: z.coerce.number().int().min(1).default(60),
  // query service: sandboxed sql / lql (scans pull at most this many events each; the engine runs the rest)
  SANDBOX_MAX_SCAN_EVENTS: z.coerce.number().int().min(1).max(5_000_000).default(100_000),
  SANDBOX_ENGINE_MEMORY_LIMIT: z.string().regex(/^\d+(\.\d+)?\s*(KB|MB|GB|KiB|MiB|GiB)$/i, 'use a size such as 512MB or 1GiB').default('1GiB'),
  SANDBOX_ENGINE_THREADS: z.coerce.number().int().min(1).max(64).default(2),
  // sandboxed SQL is parsed in a worker thread; a parse running longer is refused
  SANDBOX_PARSE_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(3000),
  // how long the cached field types of an index (what can be pushed down) are trusted
  FIELD_CATALOG_SECONDS: z.coerce.number().min(0).max(3600).default(30),
  // query service: failed authentication (timing, look-ups, per-address rate limit)
  API_KEY_MISS_CACHE_SECONDS: z.coerce.number().min(0).max(600).default(10),
  AUTH_FAILURE_MIN_MS: z.coerce.number().int().min(0).max(5000).default(50),
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(0).default(30),
  AUTH_FAILURE_BURST: z.coerce.number().int().min(1).default(10),
  // query service: HTTP bounds (bytes) and timeouts (ms) against slow or oversized clients
  HTTP_MAX_BODY_BYTES: z.coerce.number().int().min(1024).max(64 * 1024 * 1024).default(1024 * 1024),
  HTTP_MAX_HEADER_BYTES: z.coerce.number().int().min(16 * 1024).max(1024 * 1024).default(80 * 1024),
  HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(5000),
  HTTP_CONNECTION_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).default(120_000),

  // ingest worker
  INGEST_HOST: z.string().default('127.0.0.1'),
  INGEST_PORT: port.default(4001),
  INGEST_GROUP_ID: z.string().min(1).default('logplatform-ingest'),
  INGEST_TOPIC_PARTITIONS: z.coerce.number().int().min(1).max(1000).default(3),
  SOURCE_TOPICS: optionalText.transform((value, context) => parseSourceTopics(value, context)),
  INGEST_MAX_MESSAGE_BYTES: z.coerce.number().int().min(1024).default(1024 * 1024),
  INGEST_BULK_MAX_BYTES: z.coerce.number().int().min(1024).default(5 * 1024 * 1024),
  INGEST_BULK_MAX_EVENTS: z.coerce.number().int().min(1).default(2000),
  INGEST_FETCH_MAX_BYTES: z.coerce.number().int().min(1024).default(8 * 1024 * 1024),
  INGEST_CONCURRENT_PARTITIONS: z.coerce.number().int().min(1).max(64).default(9),
  INGEST_RETRY_INITIAL_MS: z.coerce.number().int().min(1).default(200),
  INGEST_RETRY_MAX_MS: z.coerce.number().int().min(1).default(10_000),
  INGEST_SESSION_TIMEOUT_MS: z.coerce.number().int().min(6000).default(30_000),
  // ingest worker: how often ingest_consumer_lag is read from Kafka (0 = never)
  INGEST_LAG_POLL_MS: z.coerce.number().int().min(0).max(3_600_000).default(5000),
  // ingest worker: producer field names read as event fields, before the built-in aliases
  INGEST_FIELD_MAP: optionalText.transform((value, context) => parseFieldMap(value, context)),

  STACK_CACHE_DIR: z.string().default(path.join(repositoryRoot, '.stack-cache')),
  STACK_KAFKA_PORT: port.default(39092),
  STACK_KAFKA_CONTROLLER_PORT: port.default(39093),
  STACK_ELASTICSEARCH_PORT: port.default(39200),
  STACK_ELASTICSEARCH_TRANSPORT_PORT: port.default(39300),
  STACK_ELASTICSEARCH_HEAP: z.string().regex(/^\d+[mg]$/, 'use a JVM size such as 1g or 768m').default('1g'),
  STACK_KAFKA_HEAP: z.string().regex(/^\d+[mg]$/, 'use a JVM size such as 512m').default('512m'),
  STACK_ELASTICSEARCH_USER: z.string().regex(/^[a-z_][a-z0-9_-]*$/).default('logplatform-es'),
}).superRefine((config, context) => {
  // Node refuses a headers timeout above the request timeout
  if (config.HTTP_HEADERS_TIMEOUT_MS > config.HTTP_REQUEST_TIMEOUT_MS) {
    context.addIssue({ code: 'custom', path: ['HTTP_HEADERS_TIMEOUT_MS'], message: `must not exceed HTTP_REQUEST_TIMEOUT_MS (${config.HTTP_REQUEST_TIMEOUT_MS})` });
  }
  // an idle-socket timeout shorter than a query would cut callers off while their answer is computed
  if (config.HTTP_CONNECTION_TIMEOUT_MS <= config.QUERY_TIMEOUT_MS) {
    context.addIssue({ code: 'custom', path: ['HTTP_CONNECTION_TIMEOUT_MS'], message: `must exceed QUERY_TIMEOUT_MS (${config.QUERY_TIMEOUT_MS})` });
  }
});

/** `edge_logs=cf-edge,postgres_logs=pg`: per-source topic names that replace TOPIC_PREFIX + source name. */
function parseSourceTopics(value: string | undefined, context: z.RefinementCtx): Partial<Record<SourceName, string>> {
  const topics: Partial<Record<SourceName, string>> = {};
  for (const entry of (value ?? '').split(',').map((part) => part.trim()).filter(Boolean)) {
    const [source, topic, ...rest] = entry.split('=').map((part) => part.trim());
    if (!source || !topic || rest.length > 0 || !/^[a-zA-Z0-9._-]+$/.test(topic)) {
      context.addIssue({ code: 'custom', message: `"${entry}" is not source=topic (topic: letters, digits, . _ -)` });
    } else if (!(SOURCE_NAMES as readonly string[]).includes(source)) {
      context.addIssue({ code: 'custom', message: `unknown source "${source}"; sources are ${SOURCE_NAMES.join(', ')}` });
    } else {
      topics[source as SourceName] = topic;
    }
  }
  return topics;
}

/** The event fields a producer's field can be mapped to. */
export const MAPPABLE_EVENT_FIELDS = ['event_message', 'timestamp', 'id', 'project', 'metadata'] as const;
export type MappableEventField = (typeof MAPPABLE_EVENT_FIELDS)[number];

export interface FieldMapping {
  /** A source, or `*` for all of them. */
  source: SourceName | '*';
  /** The producer's top-level field name. */
  field: string;
  target: MappableEventField;
}

/** `auth_logs:msg_text=event_message,*:created=timestamp`: a producer's field read as one of the event fields. */
function parseFieldMap(value: string | undefined, context: z.RefinementCtx): FieldMapping[] {
  const mappings: FieldMapping[] = [];
  for (const entry of (value ?? '').split(',').map((part) => part.trim()).filter(Boolean)) {
    const match = /^([^:=]+):([^=]+)=(.+)$/.exec(entry);
    const [source, field, target] = (match?.slice(1) ?? []).map((part) => part.trim());
    if (!source || !field || !target) {
      context.addIssue({ code: 'custom', message: `"${entry}" is not source:field=event_field (e.g. auth_logs:msg_text=event_message)` });
    } else if (source !== '*' && !(SOURCE_NAMES as readonly string[]).includes(source)) {
      context.addIssue({ code: 'custom', message: `unknown source "${source}" in "${entry}"; sources are ${SOURCE_NAMES.join(', ')}, or * for all` });
    } else if (!(MAPPABLE_EVENT_FIELDS as readonly string[]).includes(target)) {
      context.addIssue({ code: 'custom', message: `"${target}" in "${entry}" is not an event field; map to one of ${MAPPABLE_EVENT_FIELDS.join(', ')}` });
    } else {
      mappings.push({ source: source as SourceName | '*', field, target: target as MappableEventField });
    }
  }
  return mappings;
}

export type Config = z.infer<typeof configSchema>;

export class ConfigError extends Error {
  constructor(readonly issues: string[]) {
    super(`invalid configuration:\n  ${issues.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

export function loadConfig(env: Record<string, string | undefined>): Config {
  const parsed = configSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`));
  }
  return parsed.data;
}
