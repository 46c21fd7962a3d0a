import { randomBytes } from 'node:crypto';
import type { Client } from '@elastic/elasticsearch';
import type { Config } from '../shared/config.ts';
import { createElasticsearchClient, elasticsearchConnection } from '../shared/elasticsearch.ts';
import { ensureEventIndex } from '../shared/event-index.ts';
import { legacyIndexName } from '../shared/partitions.ts';
import { SOURCE_NAMES } from '../shared/sources.ts';
import { KeyStore } from '../src/auth/key-store.ts';

/** What a cached-path benchmark serves from: empty event indices, one key, and the service's config for them. */
export interface CachedBenchStore {
  elasticsearch: Client;
  keys: KeyStore;
  headers: { 'x-api-key': string };
  kafkaBrokers: string[];
  config: Config;
  /** Deletes the indices and the key store, and closes the client. */
  drop(): Promise<void>;
}

/**
 * Empty event indices under a fresh prefix and a key for every endpoint: a cached answer needs no events, and
 * rate limiting stays on (as the benchmark runs the service) with a bucket no load empties.
 */
export async function cachedBenchStore(base: Config, label: string): Promise<CachedBenchStore> {
  if (!base.ELASTICSEARCH_URL || !base.KAFKA_BROKERS) throw new Error('set ELASTICSEARCH_URL and KAFKA_BROKERS');
  const prefix = `bench-${label}-${randomBytes(4).toString('hex')}-`;
  const elasticsearch = createElasticsearchClient(elasticsearchConnection(base));
  const indices = SOURCE_NAMES.map((source) => legacyIndexName(prefix, source));
  await Promise.all(indices.map((index) => ensureEventIndex(elasticsearch, index, 0)));
  const keys = new KeyStore(elasticsearch, prefix, 0);
  await keys.ensureIndex();
  const { key } = await keys.create({ account: 'bench', endpoints: 'all', projects: null });
  return {
    elasticsearch,
    keys,
    headers: { 'x-api-key': key },
    kafkaBrokers: base.KAFKA_BROKERS,
    config: { ...base, INDEX_PREFIX: prefix, LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: 100_000_000, RATE_LIMIT_BURST: 100_000_000 },
    drop: async () => {
      await elasticsearch.indices.delete({ index: [...indices, keys.index], ignore_unavailable: true });
      await elasticsearch.close();
    },
  };
}
