import { randomBytes } from 'node:crypto';
import type { Client } from '@elastic/elasticsearch';
import type { Config } from '../shared/config.ts';
import { createElasticsearchClient, elasticsearchConnection } from '../shared/elasticsearch.ts';
import { ensureEventIndex, type StoredEvent } from '../shared/event-index.ts';
import { startLocalStack, type LocalStack } from '../stack/index.ts';

/** Where a query benchmark keeps its events: an index prefix of its own on the given or a started stack. */
export interface BenchStore {
  elasticsearch: Client;
  elasticsearchUrl: string;
  kafkaBrokers: string[];
  indexPrefix: string;
}

/**
 * Runs a query benchmark against KAFKA_BROKERS / ELASTICSEARCH_URL, or a local stack started for
 * it, under an index prefix of its own; deletes its indices and stops what it started afterwards.
 */
export async function withBenchStore(base: Config, label: string, run: (store: BenchStore) => Promise<void>): Promise<void> {
  let stack: LocalStack | undefined;
  let urls = { elasticsearch: base.ELASTICSEARCH_URL, kafka: base.KAFKA_BROKERS };
  if (!urls.elasticsearch || !urls.kafka) {
    stack = await startLocalStack(
      { ...base, STACK_KAFKA_PORT: 0, STACK_KAFKA_CONTROLLER_PORT: 0, STACK_ELASTICSEARCH_PORT: 0, STACK_ELASTICSEARCH_TRANSPORT_PORT: 0 },
      (line) => console.error(`stack: ${line}`),
    );
    urls = { elasticsearch: stack.elasticsearchUrl, kafka: stack.kafkaBrokers };
  }
  const indexPrefix = `bench-${label}-${randomBytes(4).toString('hex')}-`;
  const elasticsearch = createElasticsearchClient({ ...elasticsearchConnection(base, urls.elasticsearch), requestTimeoutMs: 120_000 });
  try {
    await run({ elasticsearch, elasticsearchUrl: urls.elasticsearch!, kafkaBrokers: urls.kafka!, indexPrefix });
  } finally {
    const indices = Object.keys(await elasticsearch.indices.get({ index: `${indexPrefix}*`, allow_no_indices: true }));
    if (indices.length > 0) await elasticsearch.indices.delete({ index: indices });
    await elasticsearch.close();
    await stack?.stop();
  }
}

const BULK_EVENTS = 5000;

/**
 * Loads `count` generated events straight into their indices (one index, or the time partitions
 * `indexOf` names), for query benchmarks that need millions of events fast: two bulk requests in
 * flight, refresh off during the load, one segment per index at the end. Progress goes to stderr
 * every 100,000 events.
 */
export async function bulkLoad(
  elasticsearch: Client,
  indexOf: string | ((event: StoredEvent) => string),
  count: number,
  make: (n: number) => StoredEvent,
): Promise<string[]> {
  const target = typeof indexOf === 'string' ? () => indexOf : indexOf;
  const label = typeof indexOf === 'string' ? indexOf : 'partitions';
  const created = new Map<string, Promise<void>>();
  const prepare = (index: string) => {
    if (!created.has(index)) {
      created.set(
        index,
        (async () => {
          await ensureEventIndex(elasticsearch, index, 0);
          await elasticsearch.indices.putSettings({ index, settings: { refresh_interval: '-1' } });
        })(),
      );
    }
    return created.get(index)!;
  };
  const started = Date.now();
  let next = 0;
  let indexed = 0;
  const loader = async () => {
    while (next < count) {
      const from = next;
      next = Math.min(count, next + BULK_EVENTS);
      const operations: unknown[] = [];
      const indices = new Set<string>();
      for (let n = from; n < next; n += 1) {
        const event = make(n);
        const index = target(event);
        indices.add(index);
        operations.push({ index: { _index: index, _id: event.id } }, event);
      }
      await Promise.all([...indices].map(prepare));
      const response = await elasticsearch.bulk({ operations }, { requestTimeout: 300_000 });
      if (response.errors) throw new Error(`bulk failed: ${JSON.stringify(response.items.find((item) => item.index?.error))}`);
      const before = indexed;
      indexed += operations.length / 2;
      if (Math.floor(indexed / 100_000) > Math.floor(before / 100_000) || indexed === count) {
        console.error(
          `${label}: ${indexed.toLocaleString('en')} / ${count.toLocaleString('en')} events (${Math.round(indexed / ((Date.now() - started) / 1000))} events/s)`,
        );
      }
    }
  };
  await Promise.all([loader(), loader()]);
  const indices = [...created.keys()];
  for (const index of indices) {
    await elasticsearch.indices.putSettings({ index, settings: { refresh_interval: '1s' } });
    await elasticsearch.indices.refresh({ index });
    await elasticsearch.indices.forcemerge({ index, max_num_segments: 1 }, { requestTimeout: 600_000 });
  }
  return indices;
}
