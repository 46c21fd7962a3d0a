import type { Client } from '@elastic/elasticsearch';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../shared/config.ts';
import { createElasticsearchClient, elasticsearchConnection } from '../../shared/elasticsearch.ts';
import { kafkaConnection } from '../../shared/kafka-connection.ts';
import { ensureEventIndexTemplate, eventIndexTemplateName, type StoredEvent } from '../../shared/event-index.ts';
import { eventPartitioning } from '../../ingest/event-partition.ts';
import { partitionPeriodOf, retentionDaysOf } from '../../shared/config.ts';
import { createLogger, type Logger } from '../../shared/logger.ts';
import type { SourceName } from '../../shared/sources.ts';
import { formatMicros } from '../../shared/stored-timestamp.ts';
import { KeyStore } from '../../src/auth/key-store.ts';
import { buildServer } from '../../src/server.ts';
import { ManualClock } from './manual-clock.ts';
import { testConfig, uniqueName } from './stack.ts';

export const BOOTSTRAP_KEY = 'bootstrap-key-for-endpoint-tests-0123456789';

export interface EndpointTestServer {
  app: FastifyInstance;
  config: Config;
  elasticsearch: Client;
  clock: ManualClock;
  /** Writes events into a source's index of this server, visible to the next search. */
  index(source: SourceName, events: StoredEvent[]): Promise<void>;
  /** A real key limited as asked, created through the key store. */
  createKey(limits: { endpoints?: 'all' | string[]; projects?: string[] | null }): Promise<string>;
  close(): Promise<void>;
}

/** A query service on its own index prefix, with a clock the test moves. */
export async function startEndpointServer(options: {
  now: number;
  overrides?: Record<string, string>;
  elasticsearchUrl?: string;
  /** Where the access lines go (default: the silent service logger). */
  accessLogger?: Logger;
}): Promise<EndpointTestServer> {
  const config = testConfig({ INDEX_PREFIX: `${uniqueName('endpoints')}-`, BOOTSTRAP_API_KEY: BOOTSTRAP_KEY, ...options.overrides });
  const storeClient = createElasticsearchClient(elasticsearchConnection(config));
  const elasticsearch = options.elasticsearchUrl ? createElasticsearchClient({ url: options.elasticsearchUrl }) : storeClient;
  const clock = new ManualClock(options.now);
  const app = await buildServer({
    config,
    logger: createLogger('query-service', 'silent'),
    accessLogger: options.accessLogger,
    elasticsearch,
    kafkaBrokers: config.KAFKA_BROKERS!,
    kafkaTls: kafkaConnection(config).tls,
    clock,
  });
  await app.ready();
  return {
    app,
    config,
    elasticsearch: storeClient,
    clock,
    async index(source, events) {
      // into the time partitions the ingest worker would write, created from the template as it does
      await ensureEventIndexTemplate(storeClient, config.INDEX_PREFIX, config.ELASTICSEARCH_INDEX_REPLICAS);
      const { indexOf } = eventPartitioning(config.INDEX_PREFIX, source, partitionPeriodOf(config, source), retentionDaysOf(config, source));
      for (let offset = 0; offset < events.length; offset += 5000) {
        const chunk = events.slice(offset, offset + 5000);
        const response = await storeClient.bulk({
          refresh: true,
          operations: chunk.flatMap((event) => [{ index: { _index: indexOf(event), _id: event.id } }, event]),
        });
        if (response.errors) throw new Error(`bulk failed: ${JSON.stringify(response.items.find((item) => item.index?.error))}`);
      }
    },
    async createKey(limits) {
      const store = new KeyStore(storeClient, config.INDEX_PREFIX, config.ELASTICSEARCH_INDEX_REPLICAS);
      const created = await store.create({ account: 'test', endpoints: limits.endpoints ?? 'all', projects: limits.projects ?? null });
      return created.key;
    },
    async close() {
      await app.close();
      if (elasticsearch !== storeClient) await elasticsearch.close();
      // wildcard deletes are refused by default (action.destructive_requires_name): name each index
      const indices = Object.keys(await storeClient.indices.get({ index: `${config.INDEX_PREFIX}*`, allow_no_indices: true }));
      if (indices.length > 0) await storeClient.indices.delete({ index: indices });
      await storeClient.indices.deleteIndexTemplate({ name: eventIndexTemplateName(config.INDEX_PREFIX) }, { ignore: [404] });
      await storeClient.close();
    },
  };
}

/** Stored form of a timestamp given as epoch milliseconds plus extra microseconds. */
export function storedTimestamp(ms: number, extraMicros = 0): string {
  return formatMicros(ms * 1000 + extraMicros);
}

export interface RequestRecord {
  url: string;
  path: string;
  [field: string]: unknown;
}

/** An edge event whose metadata.request is one record (as the samples have it) or several. */
export function edgeEvent(
  id: string,
  timestamp: string,
  project: string,
  requests: RequestRecord | RequestRecord[],
  extra: Record<string, unknown> = {},
): StoredEvent {
  return { id, timestamp, event_message: `GET | 200 | ${id}`, project, metadata: { request: requests, ...extra } };
}
