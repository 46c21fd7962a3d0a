import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { badPortReason } from './fetch-bad-ports.ts';
import { repositoryRoot } from './module-runtime.ts';
import { PARTITION_PERIODS, type PartitionPeriod } from './partitions.ts';
import { SOURCE_NAMES, type SourceName } from './sources.ts';

export { repositoryRoot };

const port = z.coerce.number().int().min(0).max(65535);
/** A port our own health checks fetch from. */
const fetchedPort = port.superRefine((value, context) => {
  const reason = badPortReason(value);
  if (reason) context.addIssue({ code: 'custom', message: reason });
});
const optionalText = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === '' ? undefined : value.trim()));
/** `true`/`false` (also 1/0, yes/no): z.coerce.boolean would read "false" as true. */
const flag = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.enum(['true', 'false', '1', '0', 'yes', 'no'], 'use true or false'))
  .transform((value) => value === 'true' || value === '1' || value === 'yes');
/** A file that must exist and be readable when set: a missing CA file is a configuration error, not a TLS error later. */
const readableFile = optionalText.refine((value) => value === undefined || isReadableFile(value), 'no readable file at this path');
const brokerList = optionalText.transform((value) =>
  value === undefined ? undefined : value.split(',').map((broker) => broker.trim()).filter(Boolean),
);

export const KAFKA_SECURITY_PROTOCOLS = ['PLAINTEXT', 'SSL', 'SASL_SSL'] as const;
export type KafkaSecurityProtocol = (typeof KAFKA_SECURITY_PROTOCOLS)[number];
export const KAFKA_SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;
export type KafkaSaslMechanism = (typeof KAFKA_SASL_MECHANISMS)[number];

/**
 * Every environment variable the platform reads, validated once at start-up.
 * Entry points call loadConfig(process.env); everything else receives the parsed object.
 */
export const configSchema = z.object({
  HOST: z.string().default('127.0.0.1'),
  PORT: fetchedPort.default(4000),
  KAFKA_BROKERS: brokerList,
  // one URL, or several nodes of one cluster comma-separated (a request a node cannot answer goes to the next)
  ELASTICSEARCH_URL: optionalText.transform((value, context) => parseElasticsearchUrls(value, context)),
  // replicas of every index the platform creates: 0 for a single node, 1 on a cluster of 3 (survives a node's loss)
  ELASTICSEARCH_INDEX_REPLICAS: z.coerce.number().int().min(0).max(10).default(0),
  // Elasticsearch with security on: an API key (the base64 `encoded` form) or a user and password
  ELASTICSEARCH_API_KEY: optionalText,
  ELASTICSEARCH_USERNAME: optionalText,
  ELASTICSEARCH_PASSWORD: optionalText,
  // PEM file of the CA that signed the server's HTTP certificate (default: the system's trusted CAs)
  ELASTICSEARCH_CA_FILE: readableFile,
  // false accepts any server certificate: for tests only, never production
  ELASTICSEARCH_TLS_VERIFY: flag.default(true),
  // Kafka security: PLAINTEXT, SSL (TLS, optionally a client certificate) or SASL_SSL (TLS plus user and password)
  KAFKA_SECURITY_PROTOCOL: optionalText.transform((value) => value?.toUpperCase()).pipe(z.enum(KAFKA_SECURITY_PROTOCOLS, `use one of ${KAFKA_SECURITY_PROTOCOLS.join(', ')}`).default('PLAINTEXT')),
  KAFKA_SASL_MECHANISM: optionalText.transform((value) => value?.toUpperCase()).pipe(z.enum(KAFKA_SASL_MECHANISMS, `use one of ${KAFKA_SASL_MECHANISMS.join(', ')}`).optional()),
  KAFKA_SASL_USERNAME: optionalText,
  KAFKA_SASL_PASSWORD: optionalText,
  KAFKA_CA_FILE: readableFile,
  KAFKA_CLIENT_CERT_FILE: readableFile,
  KAFKA_CLIENT_KEY_FILE: readableFile,
  KAFKA_TLS_VERIFY: flag.default(true),
  BOOTSTRAP_API_KEY: optionalText.pipe(z.string().min(16, 'BOOTSTRAP_API_KEY must be at least 16 characters').optional()),
  // both processes: when set, /metrics and /health's details need `Authorization: Bearer <OPS_TOKEN>`
  OPS_TOKEN: optionalText.pipe(z.string().min(16, 'OPS_TOKEN must be at least 16 characters').optional()),
  INDEX_PREFIX: z.string().regex(/^[a-z0-9][a-z0-9_.-]*$/, 'lower-case letters, digits, _ . - only').default('logplatform-'),
  TOPIC_PREFIX: z.string().regex(/^[a-zA-Z0-9._-]*$/).default(''),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  // query service: API keys and result cache
  API_KEY_CACHE_SECONDS: z.coerce.number().min(0).max(60).default(5),
  CACHE_MAX_BYTES: z.coerce.number().int().min(0).default(64 * 1024 * 1024),
  // query service: how often each replica reads the saved endpoints again (the bound on how late it sees another replica's change)
  ENDPOINT_REFRESH_SECONDS: z.coerce.number().min(0.1).max(300).default(5),
  // query service: cached results warmed per period (the most recently read first; the rest expire at their TTL), and in flight at once
  CACHE_WARM_MAX_ENTRIES: z.coerce.number().int().min(0).max(100_000).default(200),
  CACHE_WARM_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
  // query service: saved endpoints (an Elasticsearch query running longer gets 504)
  QUERY_TIMEOUT_MS: z.coerce.number().int().min(1).max(600_000).default(30_000),
  // query service: per-API-key token bucket on /api/ routes, per process (0 per minute = off)
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(600),
  RATE_LIMIT_BURST: z.coerce.number().int().min(1).default(60),
  // query service: sandboxed sql / lql (all scans of one query pull at most this many events together; the engine runs the rest)
  SANDBOX_MAX_SCAN_EVENTS: z.coerce.number().int().min(1).max(5_000_000).default(100_000),
  // sandboxed sql: the most characters of engine SQL one query may translate to (checked as it is built, before any scan)
  SANDBOX_MAX_TRANSLATED_CHARS: z.coerce.number().int().min(10_000).max(64 * 1024 * 1024).default(2_000_000),
  // reads of the endpoint's tables in one sandboxed SQL query (each one a scan of the store); more are refused before any is run
  SANDBOX_MAX_SCANS: z.coerce.number().int().min(1).max(64).default(32),
  // query service: regular expressions of one request (sql, lql, a project pattern): how many, their length together, and the
  // max_determinized_states sent with each (Elasticsearch 8.19 measured keeping its own 10,000 whatever is sent)
  SANDBOX_MAX_REGEX_PER_QUERY: z.coerce.number().int().min(1).max(100).default(16),
  SANDBOX_MAX_REGEX_CHARS: z.coerce.number().int().min(1000).max(100_000).default(4096),
  SANDBOX_MAX_REGEX_STATES: z.coerce.number().int().min(100).max(100_000).default(10_000),
  SANDBOX_ENGINE_MEMORY_LIMIT: z.string().regex(/^\d+(\.\d+)?\s*(KB|MB|GB|KiB|MiB|GiB)$/i, 'use a size such as 512MB or 1GiB').default('1GiB'),
  SANDBOX_ENGINE_THREADS: z.coerce.number().int().min(1).max(64).default(2),
  // each engine process runs one residual query at a time: one process held every sandboxed SQL query to about 25 requests a second
  SANDBOX_ENGINE_PROCESSES: z.coerce.number().int().min(1).max(32).default(2),
  // engine queries one API key may run at once: below SANDBOX_ENGINE_PROCESSES, no key holds every process
  SANDBOX_ENGINE_PER_KEY: z.coerce.number().int().min(1).max(32).default(1),
  // engine queries waiting for a process, or still scanning before their turn: per key (more get 429) and in all (more get 503),
  // refused before any scan; waiting counts in QUERY_TIMEOUT_MS
  SANDBOX_ENGINE_QUEUE_PER_KEY: z.coerce.number().int().min(0).max(1000).default(6),
  SANDBOX_ENGINE_QUEUE_MAX: z.coerce.number().int().min(0).max(10_000).default(16),
  // JSON bytes of the rows one engine query may return (its first rows up to the endpoint's row cap); more is a 400
  SANDBOX_MAX_RESULT_BYTES: z.coerce.number().int().min(1024).max(1024 * 1024 * 1024).default(16 * 1024 * 1024),
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
  INGEST_PORT: fetchedPort.default(4001),
  INGEST_GROUP_ID: z.string().min(1).default('logplatform-ingest'),
  INGEST_TOPIC_PARTITIONS: z.coerce.number().int().min(1).max(1000).default(3),
  // copies of each partition of the topics the worker creates: 1 for a single broker, 3 on a cluster
  INGEST_TOPIC_REPLICATION_FACTOR: z.coerce.number().int().min(1).max(16).default(1),
  SOURCE_TOPICS: optionalText.transform((value, context) => parseSourceTopics(value, context)),
  INGEST_MAX_MESSAGE_BYTES: z.coerce.number().int().min(1024).default(1024 * 1024),
  INGEST_BULK_MAX_BYTES: z.coerce.number().int().min(1024).default(5 * 1024 * 1024),
  INGEST_BULK_MAX_EVENTS: z.coerce.number().int().min(1).default(5000),
  INGEST_BULK_MAX_IN_FLIGHT: z.coerce.number().int().min(1).max(16).default(2),
  INGEST_FETCH_MAX_BYTES: z.coerce.number().int().min(1024).default(8 * 1024 * 1024),
  INGEST_FETCH_PARTITION_MAX_BYTES: z.coerce.number().int().min(1024).default(2 * 1024 * 1024),
  // ingest worker: decompressed message bytes held at once, half for chunks queued for or in bulk requests (the fetch loop
  // waits above it), the rest for the fetch being decoded (a compressed batch past it is fetched again later)
  INGEST_MEMORY_BUDGET_BYTES: z.coerce.number().int().min(1024 * 1024).default(32 * 1024 * 1024),
  INGEST_CONCURRENT_PARTITIONS: z.coerce.number().int().min(1).max(64).default(9),
  INGEST_RETRY_INITIAL_MS: z.coerce.number().int().min(1).default(200),
  INGEST_RETRY_MAX_MS: z.coerce.number().int().min(1).default(10_000),
  INGEST_SESSION_TIMEOUT_MS: z.coerce.number().int().min(6000).default(30_000),
  // ingest worker: how often ingest_consumer_lag is read from Kafka (0 = never)
  INGEST_LAG_POLL_MS: z.coerce.number().int().min(0).max(3_600_000).default(5000),
  // ingest worker: producer field names read as event fields, before the built-in aliases
  INGEST_FIELD_MAP: optionalText.transform((value, context) => parseFieldMap(value, context)),

  // time partitions and retention (shared/partitions.ts): both processes read the periods
  PARTITION_PERIOD: z.enum(PARTITION_PERIODS).default('daily'),
  PARTITION_PERIODS: optionalText.transform((value, context) => parsePerSource(value, context, 'period', (text) => ((PARTITION_PERIODS as readonly string[]).includes(text) ? { value: text as PartitionPeriod } : { error: `use ${PARTITION_PERIODS.join(', ')}` }))),
  RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(30),
  RETENTION_DAYS_BY_SOURCE: optionalText.transform((value, context) => parsePerSource(value, context, 'days', (text) => (/^\d{1,5}$/.test(text) && Number(text) >= 1 ? { value: Number(text) } : { error: 'use a whole number of days, at least 1' }))),
  // ingest worker: how often the current and next partition of every source are created ahead of their period (0 = never:
  // each is then created by its first event); shorter than an hour, so an hourly source's next hour is always made in time
  PARTITION_PRECREATE_SECONDS: z.coerce.number().int().min(0).max(1800).default(300),
  // ingest worker: how often partitions past retention are deleted (0 = never, from this process)
  RETENTION_INTERVAL_SECONDS: z.coerce.number().int().min(0).max(86_400).default(600),
  // ingest worker: an event whose partition is already past retention is dead-lettered, or kept until the next retention run
  EXPIRED_EVENTS: z.enum(['dead_letter', 'keep']).default('dead_letter'),

  STACK_CACHE_DIR: z.string().default(path.join(repositoryRoot, '.stack-cache')),
  STACK_KAFKA_PORT: port.default(39092),
  STACK_KAFKA_CONTROLLER_PORT: port.default(39093),
  STACK_ELASTICSEARCH_PORT: port.default(39200),
  STACK_ELASTICSEARCH_TRANSPORT_PORT: port.default(39300),
  // unset: 1g / 512m for the single-node stack, 384m / 256m per node for the cluster (stack/index.ts)
  STACK_ELASTICSEARCH_HEAP: optionalText.pipe(z.string().regex(/^\d+[mg]$/, 'use a JVM size such as 1g or 768m').optional()),
  STACK_KAFKA_HEAP: optionalText.pipe(z.string().regex(/^\d+[mg]$/, 'use a JVM size such as 512m').optional()),
  STACK_ELASTICSEARCH_USER: z.string().regex(/^[a-z_][a-z0-9_-]*$/).default('logplatform-es'),
}).superRefine((config, context) => {
  for (const issue of serverSecurityIssues(config)) context.addIssue({ code: 'custom', path: [issue.variable], message: issue.message });
  // Node refuses a headers timeout above the request timeout
  if (config.HTTP_HEADERS_TIMEOUT_MS > config.HTTP_REQUEST_TIMEOUT_MS) {
    context.addIssue({ code: 'custom', path: ['HTTP_HEADERS_TIMEOUT_MS'], message: `must not exceed HTTP_REQUEST_TIMEOUT_MS (${config.HTTP_REQUEST_TIMEOUT_MS})` });
  }
  // an idle-socket timeout shorter than a query would cut callers off while their answer is computed
  if (config.HTTP_CONNECTION_TIMEOUT_MS <= config.QUERY_TIMEOUT_MS) {
    context.addIssue({ code: 'custom', path: ['HTTP_CONNECTION_TIMEOUT_MS'], message: `must exceed QUERY_TIMEOUT_MS (${config.QUERY_TIMEOUT_MS})` });
  }
});

/** `http://a:9200` or `http://a:9200,http://b:9200`: every node a URL, all with one scheme; kept as comma-joined text. */
function parseElasticsearchUrls(value: string | undefined, context: z.RefinementCtx): string | undefined {
  if (value === undefined) return undefined;
  const urls = value.split(',').map((url) => url.trim()).filter(Boolean);
  const invalid = urls.filter((url) => !/^https?:$/.test(urlProtocol(url) ?? ''));
  if (urls.length === 0 || invalid.length > 0) {
    context.addIssue({ code: 'custom', message: `not an http:// or https:// URL: ${invalid.join(', ') || JSON.stringify(value)} (several nodes: comma-separated URLs)` });
    return undefined;
  }
  if (new Set(urls.map(urlProtocol)).size > 1) {
    context.addIssue({ code: 'custom', message: `mixes http:// and https:// nodes (${urls.join(', ')}): the nodes of one cluster share one scheme` });
    return undefined;
  }
  return urls.join(',');
}

function urlProtocol(url: string): string | undefined {
  try {
    return new URL(url).protocol;
  } catch {
    return undefined;
  }
}

function isReadableFile(file: string): boolean {
  try {
    accessSync(file, constants.R_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

interface SecurityIssue {
  variable: string;
  message: string;
}

type SecuritySettings = {
  ELASTICSEARCH_URL?: string | undefined;
  ELASTICSEARCH_API_KEY?: string | undefined;
  ELASTICSEARCH_USERNAME?: string | undefined;
  ELASTICSEARCH_PASSWORD?: string | undefined;
  ELASTICSEARCH_CA_FILE?: string | undefined;
  ELASTICSEARCH_TLS_VERIFY: boolean;
  KAFKA_SECURITY_PROTOCOL: KafkaSecurityProtocol;
  KAFKA_SASL_MECHANISM?: KafkaSaslMechanism | undefined;
  KAFKA_SASL_USERNAME?: string | undefined;
  KAFKA_SASL_PASSWORD?: string | undefined;
  KAFKA_CA_FILE?: string | undefined;
  KAFKA_CLIENT_CERT_FILE?: string | undefined;
  KAFKA_CLIENT_KEY_FILE?: string | undefined;
  KAFKA_TLS_VERIFY: boolean;
};

/** Combinations of the security variables that cannot be what the operator meant, each named. */
function serverSecurityIssues(config: SecuritySettings): SecurityIssue[] {
  const issues: SecurityIssue[] = [];
  const add = (variable: string, message: string) => issues.push({ variable, message });

  if (config.ELASTICSEARCH_PASSWORD && !config.ELASTICSEARCH_USERNAME) add('ELASTICSEARCH_PASSWORD', 'set, but ELASTICSEARCH_USERNAME is not: a password needs its user');
  if (config.ELASTICSEARCH_USERNAME && !config.ELASTICSEARCH_PASSWORD) add('ELASTICSEARCH_USERNAME', 'set, but ELASTICSEARCH_PASSWORD is not');
  if (config.ELASTICSEARCH_API_KEY && (config.ELASTICSEARCH_USERNAME || config.ELASTICSEARCH_PASSWORD)) {
    add('ELASTICSEARCH_API_KEY', 'set together with ELASTICSEARCH_USERNAME / ELASTICSEARCH_PASSWORD: use an API key or a user, not both');
  }
  const elasticsearchHttp = config.ELASTICSEARCH_URL?.startsWith('http:') ?? false;
  if (elasticsearchHttp && config.ELASTICSEARCH_CA_FILE) add('ELASTICSEARCH_CA_FILE', `set, but ELASTICSEARCH_URL is ${config.ELASTICSEARCH_URL} (plain HTTP): use an https:// URL`);
  if (elasticsearchHttp && !config.ELASTICSEARCH_TLS_VERIFY) add('ELASTICSEARCH_TLS_VERIFY', `false, but ELASTICSEARCH_URL is ${config.ELASTICSEARCH_URL} (plain HTTP): there is no TLS to verify`);

  const protocol = config.KAFKA_SECURITY_PROTOCOL;
  const sasl = protocol === 'SASL_SSL';
  const tls = protocol === 'SSL' || protocol === 'SASL_SSL';
  if (sasl) {
    if (!config.KAFKA_SASL_MECHANISM) add('KAFKA_SASL_MECHANISM', `required with KAFKA_SECURITY_PROTOCOL=SASL_SSL: one of ${KAFKA_SASL_MECHANISMS.join(', ')}`);
    if (!config.KAFKA_SASL_USERNAME) add('KAFKA_SASL_USERNAME', 'required with KAFKA_SECURITY_PROTOCOL=SASL_SSL');
    if (!config.KAFKA_SASL_PASSWORD) add('KAFKA_SASL_PASSWORD', 'required with KAFKA_SECURITY_PROTOCOL=SASL_SSL');
  } else {
    for (const variable of ['KAFKA_SASL_MECHANISM', 'KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD'] as const) {
      if (config[variable]) add(variable, `set, but KAFKA_SECURITY_PROTOCOL is ${protocol}: SASL needs KAFKA_SECURITY_PROTOCOL=SASL_SSL`);
    }
  }
  if (!tls) {
    for (const variable of ['KAFKA_CA_FILE', 'KAFKA_CLIENT_CERT_FILE', 'KAFKA_CLIENT_KEY_FILE'] as const) {
      if (config[variable]) add(variable, `set, but KAFKA_SECURITY_PROTOCOL is ${protocol}: TLS files need SSL or SASL_SSL`);
    }
    if (!config.KAFKA_TLS_VERIFY) add('KAFKA_TLS_VERIFY', `false, but KAFKA_SECURITY_PROTOCOL is ${protocol}: there is no TLS to verify`);
  }
  if (config.KAFKA_CLIENT_CERT_FILE && !config.KAFKA_CLIENT_KEY_FILE) add('KAFKA_CLIENT_KEY_FILE', 'required with KAFKA_CLIENT_CERT_FILE (the certificate\'s private key)');
  if (config.KAFKA_CLIENT_KEY_FILE && !config.KAFKA_CLIENT_CERT_FILE) add('KAFKA_CLIENT_CERT_FILE', 'required with KAFKA_CLIENT_KEY_FILE');
  return issues;
}

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

/** `edge_logs=hourly,auth_logs=weekly`: a per-source override of a setting; `read` returns the value or what to write instead. */
function parsePerSource<T>(value: string | undefined, context: z.RefinementCtx, what: string, read: (text: string) => { value: T } | { error: string }): Partial<Record<SourceName, T>> {
  const settings: Partial<Record<SourceName, T>> = {};
  for (const entry of (value ?? '').split(',').map((part) => part.trim()).filter(Boolean)) {
    const [source, text, ...rest] = entry.split('=').map((part) => part.trim());
    const parsed = text === undefined || rest.length > 0 ? undefined : read(text);
    if (!source || parsed === undefined) {
      context.addIssue({ code: 'custom', message: `"${entry}" is not source=${what}` });
    } else if (!(SOURCE_NAMES as readonly string[]).includes(source)) {
      context.addIssue({ code: 'custom', message: `unknown source "${source}"; sources are ${SOURCE_NAMES.join(', ')}` });
    } else if ('error' in parsed) {
      context.addIssue({ code: 'custom', message: `"${entry}": ${parsed.error}` });
    } else {
      settings[source as SourceName] = parsed.value;
    }
  }
  return settings;
}

/** The partition period of each source: its override, else PARTITION_PERIOD. */
export function partitionPeriodOf(config: Pick<Config, 'PARTITION_PERIOD' | 'PARTITION_PERIODS'>, source: SourceName): PartitionPeriod {
  return config.PARTITION_PERIODS[source] ?? config.PARTITION_PERIOD;
}

/** How many days of each source's events are kept: its override, else RETENTION_DAYS. */
export function retentionDaysOf(config: Pick<Config, 'RETENTION_DAYS' | 'RETENTION_DAYS_BY_SOURCE'>, source: SourceName): number {
  return config.RETENTION_DAYS_BY_SOURCE[source] ?? config.RETENTION_DAYS;
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
