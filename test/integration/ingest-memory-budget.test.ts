import { CompressionTypes } from 'kafkajs';
import { afterAll, describe, expect, it } from 'vitest';
import { startIngestWorker, type IngestWorker } from '../../ingest/worker.ts';
import { ensureTopics, sourceRoutes, sourceTopic } from '../../ingest/topics.ts';
import {
  documentCount,
  produceMessages,
  removeKafkaTestData,
  silentLogger,
  sourceIndex,
  storedIds,
  storeForFile,
  testKafka,
  waitForCommittedToEnd,
} from '../support/ingest.ts';

const BATCHES = 20;
const PER_BATCH = 100;
/** About 2 KB of repetitive log text: gzip shrinks it many times, as it does real logs. */
const event = (id: string) => ({ value: JSON.stringify({ id, event_message: `GET /rest/v1/todos?select=* 200 ${id} `.repeat(50) }) });

describe('ingest: the memory budget holds back decompression', () => {
  // 1 MiB of decompressed bytes against about 4 MB produced: one fetch takes every batch, compressed
  const { config, client } = storeForFile('budget', { INGEST_TOPIC_PARTITIONS: '1', INGEST_MEMORY_BUDGET_BYTES: String(1024 * 1024) });
  let worker: IngestWorker | undefined;
  afterAll(async () => {
    await worker?.stop();
    await removeKafkaTestData(config);
  });

  it('decompresses a compressed backlog a part at a time, and stores every event once', async () => {
    const admin = testKafka(config).admin();
    await admin.connect();
    await ensureTopics(
      admin,
      sourceRoutes(config).flatMap((route) => [route.topic, route.deadLetterTopic]),
      1,
      1,
    );
    await admin.disconnect();
    const topic = sourceTopic(config, 'edge_logs');
    const ids: string[] = [];
    for (let batch = 0; batch < BATCHES; batch += 1) {
      const messages = Array.from({ length: PER_BATCH }, (_, index) => event(`b${batch}-${index}`));
      ids.push(...messages.map((message) => JSON.parse(message.value).id as string));
      await produceMessages(config, topic, messages, CompressionTypes.GZIP);
    }

    worker = await startIngestWorker(config, silentLogger);
    await waitForCommittedToEnd(config, [topic], 120_000);
    expect((await storedIds(client, sourceIndex(config, 'edge_logs'))).sort()).toEqual(ids.sort());
    expect(await documentCount(client, sourceIndex(config, 'edge_logs'))).toBe(BATCHES * PER_BATCH);

    const metrics = await (await fetch(`http://127.0.0.1:${worker.port}/metrics`)).text();
    const deferred = Number(/ingest_batches_deferred_total\{source="edge_logs"\} (\d+)/.exec(metrics)?.[1] ?? 0);
    expect(deferred).toBeGreaterThan(0);
    // a deferred batch is decoded once, when it is fetched again: nothing is consumed twice
    expect(metrics).toMatch(new RegExp(`ingest_events_consumed_total\\{source="edge_logs"\\} ${BATCHES * PER_BATCH}\\n`));
    expect(metrics).not.toMatch(/ingest_events_dead_lettered_total\{/);
  });
});
