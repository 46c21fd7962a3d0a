import { describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../shared/event-index.ts';
import { sourceTopic } from '../../ingest/topics.ts';
import { startIngestWorker } from '../../ingest/worker.ts';
import {
  deleteIndices,
  documentCount,
  ingestTestConfig,
  produce,
  replayFromStart,
  silentLogger,
  sourceIndex,
  storeClient,
  storeForFile,
  testKafka,
  waitForCommittedToEnd,
} from '../support/ingest.ts';

const EVENTS = 3000;

/** Events with and without ids, some in array messages, so both id paths are replayed. */
function messages(): object[] {
  const out: object[] = [];
  for (let n = 0; n < EVENTS; n += 3) {
    out.push({ id: `given-${n}`, event_message: `event ${n}`, project: 'default', metadata: { n } });
    out.push([
      { event_message: `event ${n + 1}`, project: 'default', metadata: { n: n + 1 } },
      { event_message: `event ${n + 2}`, project: 'default', timestamp: '2024-05-01T10:00:00.123456Z', metadata: { n: n + 2 } },
    ]);
  }
  return out;
}

async function snapshot(config: ReturnType<typeof ingestTestConfig>): Promise<Map<string, StoredEvent>> {
  const client = storeClient(config);
  try {
    const index = sourceIndex(config, 'auth_logs');
    await client.indices.refresh({ index });
    const response = await client.search<StoredEvent>({ index, size: EVENTS + 10, query: { match_all: {} } });
    return new Map(response.hits.hits.map((hit) => [hit._id!, hit._source!]));
  } finally {
    await client.close();
  }
}

describe('ingest: redelivery leaves no duplicate', () => {
  const { config, client } = storeForFile('redelivery');

  it('a consumer restarted before its commit, a replay from offset 0 and a second consumer group all overwrite the same documents', async () => {
    const topic = sourceTopic(config, 'auth_logs');
    const index = sourceIndex(config, 'auth_logs');
    let worker = await startIngestWorker(config, silentLogger);
    await produce(config, 'auth_logs', messages());
    await waitForCommittedToEnd(config, [topic]);
    await worker.stop();
    expect(await documentCount(client, index)).toBe(EVENTS);
    const first = await snapshot(config);
    expect(first.size).toBe(EVENTS);
    expect([...first.values()].filter((event) => event.id.startsWith('given-'))).toHaveLength(EVENTS / 3);

    // as if the worker had died before committing anything: the group starts again from offset 0
    await replayFromStart(config, topic);
    expect(await documentCount(client, index)).toBe(EVENTS);
    expect(await snapshot(config)).toEqual(first);

    // a second consumer group reads everything again from offset 0
    const other = { ...config, INGEST_GROUP_ID: `${config.INGEST_GROUP_ID}-second` };
    worker = await startIngestWorker(other, silentLogger);
    await waitForCommittedToEnd(other, [topic]);
    await worker.stop();
    expect(await documentCount(client, index)).toBe(EVENTS);
    expect(await snapshot(config)).toEqual(first);
    const versions = await client.search({ index, size: 1, version: true, query: { term: { id: 'given-0' } } });
    expect(versions.hits.hits[0]!._version).toBe(3);
  });

  it('two workers in one consumer group share the partitions and store every event once', async () => {
    const shared = ingestTestConfig('scale-out', { INGEST_TOPIC_PARTITIONS: '4' });
    const sharedIndex = sourceIndex(shared, 'auth_logs');
    const workers = [await startIngestWorker(shared, silentLogger), await startIngestWorker(shared, silentLogger)];
    try {
      const values = Array.from({ length: 2000 }, (_, n) => ({ event_message: `spread ${n}`, project: 'default' }));
      const producer = testKafka(shared).producer();
      await producer.connect();
      for (let partition = 0; partition < 4; partition += 1) {
        await producer.send({
          topic: sourceTopic(shared, 'auth_logs'),
          acks: -1,
          messages: values.slice(partition * 500, partition * 500 + 500).map((value) => ({ value: JSON.stringify(value), partition })),
        });
      }
      await producer.disconnect();
      await waitForCommittedToEnd(shared, [sourceTopic(shared, 'auth_logs')]);
      expect(await documentCount(client, sharedIndex)).toBe(2000);
      const consumed = await Promise.all(
        workers.map(async (worker) => {
          const text = await (await fetch(`http://127.0.0.1:${worker.port}/metrics`)).text();
          return Number(/ingest_events_consumed_total\{source="auth_logs"\} (\d+)/.exec(text)?.[1] ?? 0);
        }),
      );
      expect(consumed.every((count) => count > 0)).toBe(true);
      // a rebalance while the second worker joins may hand a few uncommitted messages over: at least once
      expect(consumed[0]! + consumed[1]!).toBeGreaterThanOrEqual(2000);
    } finally {
      await Promise.all(workers.map((worker) => worker.stop()));
      await deleteIndices(client, shared.INDEX_PREFIX);
    }
  });
});
