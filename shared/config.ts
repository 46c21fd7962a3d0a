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
  value === undefined
    ? undefined
    : value
        .split(',')
        .map((broker) => broker.trim())
        .filter(Boolean),
);

export const KAFKA_SECURITY_PROTOCOLS = ['PLAINTEXT', 'SSL', 'SASL_SSL'] as const;
export type KafkaSecurityProtocol = (typeof KAFKA_SECURITY_PROTOCOLS)[number];
export const KAFKA_SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;
export type KafkaSaslMechanism = (typeof KAFKA_SASL_MECHANISMS)[number];

/**
 * Every environment variable the platform reads, validated once at start-up.
 * Entry points call loadConfig(process.env); everything else receives the parsed object.
 * Each variable has its default and a one-line .describe(): docs/configuration.md is made from them (npm run docs).
 */
export const configSchema = z
  .object({
    HOST: z.string().default('127.0.0.1').describe('query service: the address it listens on (0.0.0.0 for every interface)'),
    PORT: fetchedPort.default(4000).describe('query service: the port it listens on (0: one the system picks)'),
    KAFKA_BROKERS: brokerList.describe('Kafka brokers, comma-separated host:port; unset, npm start runs a local stack'),
    ELASTICSEARCH_URL: optionalText
      .transform((value, context) => parseElasticsearchUrls(value, context))
      .describe('Elasticsearch: one URL, or several nodes of one cluster comma-separated (a request a node cannot answer goes to the next)'),
    ELASTICSEARCH_INDEX_REPLICAS: z.coerce
      .number()
      .int()
      .min(0)
      .max(10)
      .default(0)
      .describe("replicas of every index the platform creates: 0 for a single node, 1 on a cluster of 3 (survives a node's loss)"),
    ELASTICSEARCH_API_KEY: optionalText.describe('Elasticsearch with security on: an API key (the base64 `encoded` form), instead of a user and password'),
    ELASTICSEARCH_USERNAME: optionalText.describe('Elasticsearch with security on: the user (with ELASTICSEARCH_PASSWORD)'),
    ELASTICSEARCH_PASSWORD: optionalText.describe('Elasticsearch with security on: the password of ELASTICSEARCH_USERNAME'),
    ELASTICSEARCH_CA_FILE: readableFile.describe("PEM file of the CA that signed the Elasticsearch HTTP certificate (default: the system's trusted CAs)"),
    ELASTICSEARCH_TLS_VERIFY: flag.default(true).describe('false accepts any Elasticsearch server certificate: for tests only, never production'),
    KAFKA_SECURITY_PROTOCOL: optionalText
      .transform((value) => value?.toUpperCase())
      .pipe(z.enum(KAFKA_SECURITY_PROTOCOLS, `use one of ${KAFKA_SECURITY_PROTOCOLS.join(', ')}`).default('PLAINTEXT'))
      .describe('Kafka security: PLAINTEXT, SSL (TLS, optionally a client certificate) or SASL_SSL (TLS plus user and password)'),
    KAFKA_SASL_MECHANISM: optionalText
      .transform((value) => value?.toUpperCase())
      .pipe(z.enum(KAFKA_SASL_MECHANISMS, `use one of ${KAFKA_SASL_MECHANISMS.join(', ')}`).optional())
      .describe('with SASL_SSL: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512'),
    KAFKA_SASL_USERNAME: optionalText.describe('with SASL_SSL: the Kafka user'),
    KAFKA_SASL_PASSWORD: optionalText.describe("with SASL_SSL: the Kafka user's password"),
    KAFKA_CA_FILE: readableFile.describe("with SSL or SASL_SSL: PEM file of the CA that signed the brokers' certificates (default: the system's trusted CAs)"),
    KAFKA_CLIENT_CERT_FILE: readableFile.describe('with SSL: PEM client certificate presented to the brokers (with KAFKA_CLIENT_KEY_FILE)'),
    KAFKA_CLIENT_KEY_FILE: readableFile.describe('with SSL: PEM private key of KAFKA_CLIENT_CERT_FILE'),
    KAFKA_TLS_VERIFY: flag.default(true).describe('false accepts any broker certificate: for tests only, never production'),
    BOOTSTRAP_API_KEY: optionalText
      .pipe(z.string().min(16, 'BOOTSTRAP_API_KEY must be at least 16 characters').optional())
      .describe('query service: an operator key accepted besides the stored ones (at least 16 characters); npm start makes one for a local run'),
    OPS_TOKEN: optionalText
      .pipe(z.string().min(16, 'OPS_TOKEN must be at least 16 characters').optional())
      .describe("both processes: when set, /metrics and /health's details need `Authorization: Bearer <OPS_TOKEN>` (at least 16 characters)"),
    INDEX_PREFIX: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_.-]*$/, 'lower-case letters, digits, _ . - only')
      .default('logplatform-')
      .describe('prefix of every Elasticsearch index the platform creates and reads'),
    TOPIC_PREFIX: z
      .string()
      .regex(/^[a-zA-Z0-9._-]*$/)
      .default('')
      .describe('prefix of the source topics (`<TOPIC_PREFIX><source>`), unless SOURCE_TOPICS names a topic'),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').describe('pino log level of every process'),
    API_KEY_CACHE_SECONDS: z.coerce
      .number()
      .min(0)
      .max(60)
      .default(5)
      .describe("query service: how long a verified API key is trusted before the store is read again (a revoked key's grace)"),
    CACHE_MAX_BYTES: z.coerce
      .number()
      .int()
      .min(0)
      .default(64 * 1024 * 1024)
      .describe('query service: bytes of the result cache (least recently used results are dropped first; 0 = off)'),
    ENDPOINT_REFRESH_SECONDS: z.coerce
      .number()
      .min(0.1)
      .max(300)
      .default(5)
      .describe("query service: how often each replica reads the saved endpoints again (the bound on how late it sees another replica's change)"),
    CACHE_WARM_MAX_ENTRIES: z.coerce
      .number()
      .int()
      .min(0)
      .max(100_000)
      .default(200)
      .describe('query service: cached results warmed per period (the most recently read first; the rest expire at their TTL)'),
    CACHE_WARM_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2).describe('query service: cached results warmed at once'),
    QUERY_TIMEOUT_MS: z.coerce.number().int().min(1).max(600_000).default(30_000).describe('query service: the longest a query may run (longer gets 504)'),
    RATE_LIMIT_PER_MINUTE: z.coerce
      .number()
      .int()
      .min(0)
      .default(600)
      .describe('query service: per-API-key token bucket on /api/ routes, per process (0 = off)'),
    RATE_LIMIT_BURST: z.coerce
      .number()
      .int()
      .min(1)
      .default(60)
      .describe('query service: requests one API key may send at once before RATE_LIMIT_PER_MINUTE applies'),
    METRICS_MAX_ENDPOINT_LABELS: z.coerce
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(200)
      .describe('query service: distinct endpoints /metrics labels per-endpoint usage by; the rest count under `other`'),
    METRICS_MAX_KEY_LABELS: z.coerce
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(200)
      .describe('query service: distinct API key ids /metrics labels per-endpoint usage by; the rest count under `other`'),
    EXPORT_ROWS_PER_MINUTE: z.coerce
      .number()
      .int()
      .min(0)
      .default(1_000_000)
      .describe('query service: rows each API key may export per minute with format=ndjson or csv, per process (0 = no budget)'),
    EXPORT_CURSOR_SECRET: optionalText
      .pipe(z.string().min(16, 'EXPORT_CURSOR_SECRET must be at least 16 characters').optional())
      .describe('query service: the secret export cursors are signed with (at least 16 characters); unset, a random one per process: set one for all replicas'),
    SANDBOX_MAX_SCAN_EVENTS: z.coerce
      .number()
      .int()
      .min(1)
      .max(5_000_000)
      .default(100_000)
      .describe('sandboxed sql / lql: events all scans of one query pull together at most (the engine runs the rest)'),
    SANDBOX_MAX_HELD_EVENTS: z.coerce
      .number()
      .int()
      .min(1)
      .max(50_000_000)
      .default(200_000)
      .describe(
        'sandboxed sql / lql: events the queries in flight hold in the service together (more than SANDBOX_MAX_SCAN_EVENTS); more wait, or get 503 when all holders wait',
      ),
    SANDBOX_MAX_HELD_BYTES: z.coerce
      .number()
      .int()
      .min(64 * 1024)
      .default(48 * 1024 * 1024)
      .describe(
        "sandboxed sql / lql: bytes the scanned rows of the queries in flight take in the service's heap together (reckoned per page); more wait, or get 503 when all holders wait; a query over it alone gets 400",
      ),
    SANDBOX_MAX_TRANSLATED_CHARS: z.coerce
      .number()
      .int()
      .min(10_000)
      .max(64 * 1024 * 1024)
      .default(2_000_000)
      .describe('sandboxed sql: the most characters of engine SQL one query may translate to (checked as it is built, before any scan)'),
    SANDBOX_MAX_SCANS: z.coerce
      .number()
      .int()
      .min(1)
      .max(64)
      .default(32)
      .describe("sandboxed sql: reads of the endpoint's tables in one query (each a scan of the store); more are refused before any is run"),
    SANDBOX_MAX_REGEX_PER_QUERY: z.coerce
      .number()
      .int()
      .min(1)
      .max(100)
      .default(16)
      .describe('query service: regular expressions in one request (sql, lql, a project pattern)'),
    SANDBOX_MAX_REGEX_CHARS: z.coerce
      .number()
      .int()
      .min(1000)
      .max(100_000)
      .default(4096)
      .describe('query service: characters of the regular expressions of one request together'),
    SANDBOX_MAX_REGEX_STATES: z.coerce
      .number()
      .int()
      .min(100)
      .max(100_000)
      .default(10_000)
      .describe('query service: max_determinized_states sent with each regular expression (Elasticsearch 8.19 measured keeping its own 10,000)'),
    SANDBOX_ENGINE_MEMORY_LIMIT: z
      .string()
      .regex(/^\d+(\.\d+)?\s*(KB|MB|GB|KiB|MiB|GiB)$/i, 'use a size such as 512MB or 1GiB')
      .default('1GiB')
      .describe('sandboxed sql: memory of each engine (DuckDB) process, e.g. 512MB or 1GiB'),
    SANDBOX_ENGINE_THREADS: z.coerce.number().int().min(1).max(64).default(2).describe('sandboxed sql: threads of each engine process'),
    // one process held every sandboxed SQL query to about 25 requests a second
    SANDBOX_ENGINE_PROCESSES: z.coerce
      .number()
      .int()
      .min(1)
      .max(32)
      .default(2)
      .describe('sandboxed sql: engine processes, each running one residual query at a time'),
    SANDBOX_ENGINE_PER_KEY: z.coerce
      .number()
      .int()
      .min(1)
      .max(32)
      .default(1)
      .describe('sandboxed sql: engine queries one API key may run at once (below SANDBOX_ENGINE_PROCESSES, no key holds every process)'),
    SANDBOX_ENGINE_QUEUE_PER_KEY: z.coerce
      .number()
      .int()
      .min(0)
      .max(1000)
      .default(6)
      .describe('sandboxed sql: engine queries of one key waiting for a process or still scanning before their turn (more get 429, before any scan)'),
    SANDBOX_ENGINE_QUEUE_MAX: z.coerce
      .number()
      .int()
      .min(0)
      .max(10_000)
      .default(16)
      .describe('sandboxed sql: engine queries waiting in all (more get 503, before any scan); waiting counts in QUERY_TIMEOUT_MS'),
    SANDBOX_MAX_RESULT_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .max(1024 * 1024 * 1024)
      .default(16 * 1024 * 1024)
      .describe('sandboxed sql: JSON bytes of the rows one engine query may return; more is a 400'),
    SANDBOX_PARSE_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .min(100)
      .max(60_000)
      .default(3000)
      .describe('sandboxed sql: parsing runs in a worker thread; a parse running longer is refused'),
    SANDBOX_PARSER_IDLE_MS: z.coerce
      .number()
      .int()
      .min(1000)
      .default(60_000)
      .describe('sandboxed sql: the parser thread ends after this long with nothing to parse (its ~40 MB go back); the next parse starts it'),
    FIELD_CATALOG_SECONDS: z.coerce
      .number()
      .min(0)
      .max(3600)
      .default(30)
      .describe('query service: how long the cached field types of an index (what can be pushed down) are trusted'),
    API_KEY_MISS_CACHE_SECONDS: z.coerce
      .number()
      .min(0)
      .max(600)
      .default(10)
      .describe('query service: how long an unknown key id is remembered as unknown (no store look-up for it meanwhile)'),
    AUTH_FAILURE_MIN_MS: z.coerce
      .number()
      .int()
      .min(0)
      .max(5000)
      .default(50)
      .describe('query service: the least time a refused key takes to answer, so timing does not tell which keys exist (0 = off)'),
    AUTH_FAILURES_PER_MINUTE: z.coerce
      .number()
      .int()
      .min(0)
      .default(30)
      .describe('query service: failed authentications per client address and minute before 429 (0 = off)'),
    AUTH_FAILURE_BURST: z.coerce
      .number()
      .int()
      .min(1)
      .default(10)
      .describe('query service: failed authentications one address may make at once before AUTH_FAILURES_PER_MINUTE applies'),
    HTTP_MAX_BODY_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .max(64 * 1024 * 1024)
      .default(1024 * 1024)
      .describe('query service: the largest request body (larger gets 413)'),
    HTTP_MAX_HEADER_BYTES: z.coerce
      .number()
      .int()
      .min(16 * 1024)
      .max(1024 * 1024)
      .default(80 * 1024)
      .describe('query service: the largest request line and headers together (larger gets 414)'),
    HTTP_HEADERS_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .min(100)
      .max(600_000)
      .default(10_000)
      .describe("query service: time to receive a request's headers (at most HTTP_REQUEST_TIMEOUT_MS)"),
    HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000).describe('query service: time to receive a whole request'),
    HTTP_KEEP_ALIVE_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .min(100)
      .max(600_000)
      .default(5000)
      .describe('query service: how long an idle kept-alive connection stays open'),
    HTTP_CACHED_LANE: flag
      .default(true)
      .describe('query service: answer proven cache hits of the query route before fastify routes them (false: every request takes the full path)'),
    HTTP_CONNECTION_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .min(1000)
      .max(3_600_000)
      .default(120_000)
      .describe('query service: how long a socket may be idle, answer included (must exceed QUERY_TIMEOUT_MS)'),

    // ingest worker
    INGEST_HOST: z.string().default('127.0.0.1').describe('ingest worker: the address its /health and /metrics listen on'),
    INGEST_PORT: fetchedPort.default(4001).describe('ingest worker: the port of its /health and /metrics (0: one the system picks)'),
    INGEST_GROUP_ID: z.string().min(1).default('logplatform-ingest').describe('ingest worker: its Kafka consumer group'),
    INGEST_TOPIC_PARTITIONS: z.coerce.number().int().min(1).max(1000).default(3).describe('ingest worker: partitions of each source topic it creates'),
    INGEST_TOPIC_REPLICATION_FACTOR: z.coerce
      .number()
      .int()
      .min(1)
      .max(16)
      .default(1)
      .describe('ingest worker: copies of each partition of the topics it creates: 1 for a single broker, 3 on a cluster'),
    SOURCE_TOPICS: optionalText
      .transform((value, context) => parseSourceTopics(value, context))
      .describe('per-source topic names that replace `<TOPIC_PREFIX><source>`, e.g. `edge_logs=cf-edge,postgres_logs=pg`'),
    INGEST_MAX_MESSAGE_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .default(1024 * 1024)
      .describe('ingest worker: the largest event message; larger ones are dead-lettered'),
    INGEST_BULK_MAX_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .default(5 * 1024 * 1024)
      .describe('ingest worker: bytes of one Elasticsearch bulk request at most'),
    INGEST_BULK_MAX_EVENTS: z.coerce.number().int().min(1).default(5000).describe('ingest worker: events of one Elasticsearch bulk request at most'),
    INGEST_BULK_MAX_IN_FLIGHT: z.coerce.number().int().min(1).max(16).default(2).describe('ingest worker: bulk requests in flight at once'),
    INGEST_BULK_LINGER_MS: z.coerce
      .number()
      .int()
      .min(0)
      .max(1000)
      .default(5)
      .describe('ingest worker: how long a bulk that is not full waits for more events before it is sent'),
    INGEST_FETCH_MAX_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .default(2 * 1024 * 1024)
      .describe('ingest worker: bytes of one Kafka fetch at most (compressed bytes: the memory budget bounds what they expand to)'),
    INGEST_FETCH_PARTITION_MAX_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .default(256 * 1024)
      .describe('ingest worker: bytes of one partition in a Kafka fetch at most'),
    INGEST_FETCH_MIN_BYTES: z.coerce
      .number()
      .int()
      .min(1)
      .default(256 * 1024)
      .describe(
        'ingest worker: bytes the broker gathers before it answers a fetch (at most INGEST_FETCH_MAX_BYTES), unless INGEST_FETCH_MAX_WAIT_MS passes first: fewer, fuller fetches on a steady stream',
      ),
    INGEST_FETCH_MAX_WAIT_MS: z.coerce
      .number()
      .int()
      .min(0)
      .max(5000)
      .default(100)
      .describe("ingest worker: the longest the broker holds a fetch for INGEST_FETCH_MIN_BYTES: what a slow stream adds to an event's way to the store"),
    INGEST_MEMORY_BUDGET_BYTES: z.coerce
      .number()
      .int()
      .min(1024 * 1024)
      .default(32 * 1024 * 1024)
      .describe(
        'ingest worker: decompressed message bytes held at once, and 512 bytes of heap per message: half for chunks queued for or ' +
          'in bulk requests (the fetch loop waits above it), the rest for the fetch being decoded (a compressed batch past it is ' +
          'fetched again later); the worker refuses to start when its JavaScript heap cannot hold 64 MB plus three times the budget',
      ),
    INGEST_CONCURRENT_PARTITIONS: z.coerce.number().int().min(1).max(64).default(9).describe('ingest worker: Kafka partitions consumed at once'),
    INGEST_RETRY_INITIAL_MS: z.coerce
      .number()
      .int()
      .min(1)
      .default(200)
      .describe('ingest worker: the first wait before a failed bulk request is retried (doubling up to INGEST_RETRY_MAX_MS)'),
    INGEST_RETRY_MAX_MS: z.coerce.number().int().min(1).default(10_000).describe('ingest worker: the longest wait between retries of a failed bulk request'),
    INGEST_SESSION_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .min(6000)
      .default(30_000)
      .describe('ingest worker: Kafka consumer session timeout (heartbeats every tenth of it)'),
    INGEST_LAG_POLL_MS: z.coerce
      .number()
      .int()
      .min(0)
      .max(3_600_000)
      .default(5000)
      .describe('ingest worker: how often ingest_consumer_lag is read from Kafka (0 = never)'),
    INGEST_FIELD_MAP: optionalText
      .transform((value, context) => parseFieldMap(value, context))
      .describe('ingest worker: producer fields read as event fields before the built-in aliases, e.g. auth_logs:msg_text=event_message,*:created=timestamp'),

    // time partitions and retention (shared/partitions.ts): both processes read the periods
    PARTITION_PERIOD: z.enum(PARTITION_PERIODS).default('daily').describe("both processes: the time partition of every source's indices"),
    PARTITION_PERIODS: optionalText
      .transform((value, context) =>
        parsePerSource(value, context, 'period', (text) =>
          (PARTITION_PERIODS as readonly string[]).includes(text) ? { value: text as PartitionPeriod } : { error: `use ${PARTITION_PERIODS.join(', ')}` },
        ),
      )
      .describe('both processes: per-source partition periods, e.g. edge_logs=hourly,auth_logs=weekly'),
    RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(30).describe('days of events kept per source; older partitions are deleted'),
    RETENTION_DAYS_BY_SOURCE: optionalText
      .transform((value, context) =>
        parsePerSource(value, context, 'days', (text) =>
          /^\d{1,5}$/.test(text) && Number(text) >= 1 ? { value: Number(text) } : { error: 'use a whole number of days, at least 1' },
        ),
      )
      .describe('per-source retention in days, e.g. edge_logs=7,auth_logs=90'),
    PARTITION_PRECREATE_SECONDS: z.coerce
      .number()
      .int()
      .min(0)
      .max(1800)
      .default(300)
      .describe(
        'ingest worker: how often the current and next partition of every source are created ahead of their period (0 = never: ' +
          "each is then created by its first event); under an hour, so an hourly source's next hour is always made in time",
      ),
    RETENTION_INTERVAL_SECONDS: z.coerce
      .number()
      .int()
      .min(0)
      .max(86_400)
      .default(600)
      .describe('ingest worker: how often partitions past retention are deleted (0 = never, from this process)'),
    EXPIRED_EVENTS: z
      .enum(['dead_letter', 'keep'])
      .default('dead_letter')
      .describe('ingest worker: an event whose partition is already past retention is dead-lettered, or kept until the next retention run'),

    // the local stack of npm start and npm run stack
    STACK_CACHE_DIR: z
      .string()
      .default(path.join(repositoryRoot, '.stack-cache'))
      .describe("local stack: where Kafka and Elasticsearch are downloaded and keep their data; npm start's state file for the other tools"),
    STACK_KAFKA_PORT: port.default(39092).describe('local stack: the Kafka broker port'),
    STACK_KAFKA_CONTROLLER_PORT: port.default(39093).describe('local stack: the Kafka KRaft controller port'),
    STACK_ELASTICSEARCH_PORT: port.default(39200).describe('local stack: the Elasticsearch HTTP port'),
    STACK_ELASTICSEARCH_TRANSPORT_PORT: port.default(39300).describe('local stack: the Elasticsearch transport port'),
    STACK_ELASTICSEARCH_HEAP: optionalText
      .pipe(
        z
          .string()
          .regex(/^\d+[mg]$/, 'use a JVM size such as 1g or 768m')
          .optional(),
      )
      .describe('local stack: Elasticsearch JVM heap, e.g. 1g (unset: 1g single node, 384m per cluster node)'),
    STACK_KAFKA_HEAP: optionalText
      .pipe(
        z
          .string()
          .regex(/^\d+[mg]$/, 'use a JVM size such as 512m')
          .optional(),
      )
      .describe('local stack: Kafka JVM heap, e.g. 512m (unset: 512m single node, 256m per cluster node)'),
    STACK_ELASTICSEARCH_USER: z
      .string()
      .regex(/^[a-z_][a-z0-9_-]*$/)
      .default('logplatform-es')
      .describe('local stack: the unprivileged user Elasticsearch runs as when started by root'),
  })
  .superRefine((config, context) => {
    for (const issue of serverSecurityIssues(config)) context.addIssue({ code: 'custom', path: [issue.variable], message: issue.message });
    // Node refuses a headers timeout above the request timeout
    if (config.HTTP_HEADERS_TIMEOUT_MS > config.HTTP_REQUEST_TIMEOUT_MS) {
      context.addIssue({
        code: 'custom',
        path: ['HTTP_HEADERS_TIMEOUT_MS'],
        message: `must not exceed HTTP_REQUEST_TIMEOUT_MS (${config.HTTP_REQUEST_TIMEOUT_MS})`,
      });
    }
    // one query alone may always read its whole budget
    if (config.SANDBOX_MAX_HELD_EVENTS <= config.SANDBOX_MAX_SCAN_EVENTS) {
      context.addIssue({
        code: 'custom',
        path: ['SANDBOX_MAX_HELD_EVENTS'],
        message: `must exceed SANDBOX_MAX_SCAN_EVENTS (${config.SANDBOX_MAX_SCAN_EVENTS}): one query alone reads up to one event more, the one that proves it too broad`,
      });
    }
    // an idle-socket timeout shorter than a query would cut callers off while their answer is computed
    if (config.HTTP_CONNECTION_TIMEOUT_MS <= config.QUERY_TIMEOUT_MS) {
      context.addIssue({ code: 'custom', path: ['HTTP_CONNECTION_TIMEOUT_MS'], message: `must exceed QUERY_TIMEOUT_MS (${config.QUERY_TIMEOUT_MS})` });
    }
  });

/** `http://a:9200` or `http://a:9200,http://b:9200`: every node a URL, all with one scheme; kept as comma-joined text. */
function parseElasticsearchUrls(value: string | undefined, context: z.RefinementCtx): string | undefined {
  if (value === undefined) return undefined;
  const urls = value
    .split(',')
    .map((url) => url.trim())
    .filter(Boolean);
  const invalid = urls.filter((url) => !/^https?:$/.test(urlProtocol(url) ?? ''));
  if (urls.length === 0 || invalid.length > 0) {
    context.addIssue({
      code: 'custom',
      message: `not an http:// or https:// URL: ${invalid.join(', ') || JSON.stringify(value)} (several nodes: comma-separated URLs)`,
    });
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

  if (config.ELASTICSEARCH_PASSWORD && !config.ELASTICSEARCH_USERNAME)
    add('ELASTICSEARCH_PASSWORD', 'set, but ELASTICSEARCH_USERNAME is not: a password needs its user');
  if (config.ELASTICSEARCH_USERNAME && !config.ELASTICSEARCH_PASSWORD) add('ELASTICSEARCH_USERNAME', 'set, but ELASTICSEARCH_PASSWORD is not');
  if (config.ELASTICSEARCH_API_KEY && (config.ELASTICSEARCH_USERNAME || config.ELASTICSEARCH_PASSWORD)) {
    add('ELASTICSEARCH_API_KEY', 'set together with ELASTICSEARCH_USERNAME / ELASTICSEARCH_PASSWORD: use an API key or a user, not both');
  }
  const elasticsearchHttp = config.ELASTICSEARCH_URL?.startsWith('http:') ?? false;
  if (elasticsearchHttp && config.ELASTICSEARCH_CA_FILE)
    add('ELASTICSEARCH_CA_FILE', `set, but ELASTICSEARCH_URL is ${config.ELASTICSEARCH_URL} (plain HTTP): use an https:// URL`);
  if (elasticsearchHttp && !config.ELASTICSEARCH_TLS_VERIFY)
    add('ELASTICSEARCH_TLS_VERIFY', `false, but ELASTICSEARCH_URL is ${config.ELASTICSEARCH_URL} (plain HTTP): there is no TLS to verify`);

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
  if (config.KAFKA_CLIENT_CERT_FILE && !config.KAFKA_CLIENT_KEY_FILE)
    add('KAFKA_CLIENT_KEY_FILE', "required with KAFKA_CLIENT_CERT_FILE (the certificate's private key)");
  if (config.KAFKA_CLIENT_KEY_FILE && !config.KAFKA_CLIENT_CERT_FILE) add('KAFKA_CLIENT_CERT_FILE', 'required with KAFKA_CLIENT_KEY_FILE');
  return issues;
}

/** `edge_logs=cf-edge,postgres_logs=pg`: per-source topic names that replace TOPIC_PREFIX + source name. */
function parseSourceTopics(value: string | undefined, context: z.RefinementCtx): Partial<Record<SourceName, string>> {
  const topics: Partial<Record<SourceName, string>> = {};
  for (const entry of (value ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
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
function parsePerSource<T>(
  value: string | undefined,
  context: z.RefinementCtx,
  what: string,
  read: (text: string) => { value: T } | { error: string },
): Partial<Record<SourceName, T>> {
  const settings: Partial<Record<SourceName, T>> = {};
  for (const entry of (value ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
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
  for (const entry of (value ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
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
