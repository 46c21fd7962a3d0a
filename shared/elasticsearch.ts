import { readFileSync } from 'node:fs';
import { Client, ClusterConnectionPool, type ClientOptions } from '@elastic/elasticsearch';
import { ConfigError, type Config } from './config.ts';

export type ElasticsearchCredentials = { apiKey: string } | { username: string; password: string };

/** Where Elasticsearch is and how to prove who we are to it: read from the configuration once. */
export interface ElasticsearchConnection {
  /** One node's URL, or the nodes of one cluster comma-separated. */
  url: string;
  credentials?: ElasticsearchCredentials;
  /** PEM of the CA that signed the server's HTTP certificate; default: the system's trusted CAs. */
  caFile?: string;
  /** Default true; false accepts any certificate (tests only). */
  verifyTls?: boolean;
}

export interface ElasticsearchClientOptions extends ElasticsearchConnection {
  /** Per-request timeout; the query service sets its query timeout here. */
  requestTimeoutMs?: number;
  /** Default: one attempt per node (0 with a single node), so a request a dead node cannot answer goes to the next. */
  maxRetries?: number;
}

/** The node URLs of a connection's `url`. */
export function elasticsearchNodes(url: string): string[] {
  return url
    .split(',')
    .map((node) => node.trim())
    .filter(Boolean);
}

type ElasticsearchSettings = Pick<
  Config,
  'ELASTICSEARCH_URL' | 'ELASTICSEARCH_API_KEY' | 'ELASTICSEARCH_USERNAME' | 'ELASTICSEARCH_PASSWORD' | 'ELASTICSEARCH_CA_FILE' | 'ELASTICSEARCH_TLS_VERIFY'
>;

/** The connection the configuration names; `url` replaces ELASTICSEARCH_URL (npm start's local stack). */
export function elasticsearchConnection(config: ElasticsearchSettings, url = config.ELASTICSEARCH_URL): ElasticsearchConnection {
  if (!url) throw new ConfigError(['ELASTICSEARCH_URL: required (the Elasticsearch to read and write)']);
  const credentials: ElasticsearchCredentials | undefined = config.ELASTICSEARCH_API_KEY
    ? { apiKey: config.ELASTICSEARCH_API_KEY }
    : config.ELASTICSEARCH_USERNAME && config.ELASTICSEARCH_PASSWORD
      ? { username: config.ELASTICSEARCH_USERNAME, password: config.ELASTICSEARCH_PASSWORD }
      : undefined;
  return { url, credentials, caFile: config.ELASTICSEARCH_CA_FILE, verifyTls: config.ELASTICSEARCH_TLS_VERIFY };
}

/** The variables an operator should look at when the server refuses these credentials. */
export function credentialVariables(connection: ElasticsearchConnection): string {
  if (!connection.credentials) return 'ELASTICSEARCH_API_KEY or ELASTICSEARCH_USERNAME / ELASTICSEARCH_PASSWORD (none is set)';
  return 'apiKey' in connection.credentials ? 'ELASTICSEARCH_API_KEY' : 'ELASTICSEARCH_USERNAME / ELASTICSEARCH_PASSWORD';
}

function tlsOptions(connection: ElasticsearchConnection): ClientOptions['tls'] {
  if (!connection.caFile && connection.verifyTls !== false) return undefined;
  return {
    ...(connection.caFile ? { ca: readFileSync(connection.caFile) } : {}),
    rejectUnauthorized: connection.verifyTls !== false,
  };
}

/** The one place an Elasticsearch client is built, so both processes talk to the store the same way. */
export function createElasticsearchClient(options: ElasticsearchClientOptions): Client {
  const nodes = elasticsearchNodes(options.url);
  return new Client({
    nodes,
    // Several nodes: a node that failed is left out (pinged again after a minute, then longer) while
    // others are alive, and a request it failed is sent to the next node. The client's default pool
    // only weighs failed nodes down and, once every node has failed a request, can find none at all.
    ...(nodes.length > 1 ? { ConnectionPool: ClusterConnectionPool } : {}),
    auth: options.credentials,
    tls: tlsOptions(options),
    requestTimeout: options.requestTimeoutMs ?? 30_000,
    maxRetries: options.maxRetries ?? nodes.length - 1,
    // also keeps responses uncompressed (no accept-encoding): logs.all reads a search's raw text (searchText)
    compression: false,
  });
}
