import { Client } from '@elastic/elasticsearch';

export interface ElasticsearchClientOptions {
  url: string;
  /** Per-request timeout; the query service sets its query timeout here. */
  requestTimeoutMs?: number;
  maxRetries?: number;
}

/** The one place an Elasticsearch client is built, so both processes talk to the store the same way. */
export function createElasticsearchClient(options: ElasticsearchClientOptions): Client {
  return new Client({
    node: options.url,
    requestTimeout: options.requestTimeoutMs ?? 30_000,
    maxRetries: options.maxRetries ?? 0,
    compression: false,
  });
}
