import { afterAll, describe, expect, it } from 'vitest';
import { Partitioners } from 'kafkajs';
import { StableOffsets } from '../../ingest/stable-offsets.ts';
import { ingestTestConfig, removeKafkaTestData, testKafka, waitFor } from '../support/ingest.ts';

describe('the committed offset read once transactional commits have settled (OffsetFetch v7, require_stable)', () => {
  const config = ingestTestConfig('stable-offsets');
  const kafka = testKafka(config);
  const topic = `${config.TOPIC_PREFIX}source`;
  const groupId = config.INGEST_GROUP_ID;

  afterAll(async () => {
    await removeKafkaTestData(config);
  });

  it('answers what a plain offset fetch answers, -1 before any commit, and waits out an open transactional commit', async () => {
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 2 }] });
    const unstable: string[] = [];
    const offsets = new StableOffsets(kafka, groupId, { retryMs: 20, maxWaitMs: 60_000, onUnstable: (t, p) => unstable.push(`${t}/${p}`) });
    const producer = kafka.producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      transactionalId: `${groupId}.stable-offsets-test`,
      idempotent: true,
      maxInFlightRequests: 1,
    });
    await producer.connect();
    const commitOffset = (offset: string) => ({ consumerGroupId: groupId, topics: [{ topic, partitions: [{ partition: 1, offset }] }] });
    try {
      expect(await offsets.committed(topic, 1)).toBe(-1n);

      const first = await producer.transaction();
      await first.sendOffsets(commitOffset('5'));
      await first.commit();
      // the first commit settles by itself: both reads agree once it has
      expect(await offsets.committed(topic, 1)).toBe(5n);
      const [plain] = await admin.fetchOffsets({ groupId, topics: [topic] });
      expect(plain!.partitions.find((entry) => entry.partition === 1)!.offset).toBe('5');
      expect(await offsets.committed(topic, 0)).toBe(-1n);

      // a transaction holding an offset commit that is not settled: a plain fetch gives the older offset,
      // the stable read waits, and gives the new one once the transaction ends
      const second = await producer.transaction();
      await second.sendOffsets(commitOffset('9'));
      const [during] = await admin.fetchOffsets({ groupId, topics: [topic] });
      expect(during!.partitions.find((entry) => entry.partition === 1)!.offset).toBe('5');
      const settled = offsets.committed(topic, 1);
      await waitFor('the stable read told the commit is unsettled', async () => (unstable.length > 0 ? true : undefined));
      const asked = unstable.length;
      await second.commit();
      expect(await settled).toBe(9n);
      expect(asked).toBeGreaterThan(0);
      expect(unstable.every((entry) => entry === `${topic}/1`)).toBe(true);
    } finally {
      await producer.disconnect();
      await offsets.close();
      await admin.disconnect();
    }
  });

  it('gives up with a message naming the partition when a commit does not settle in time', async () => {
    const offsets = new StableOffsets(kafka, groupId, { retryMs: 20, maxWaitMs: 200 });
    const producer = kafka.producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      transactionalId: `${groupId}.stable-offsets-timeout`,
      idempotent: true,
      maxInFlightRequests: 1,
    });
    await producer.connect();
    try {
      const open = await producer.transaction();
      await open.sendOffsets({ consumerGroupId: groupId, topics: [{ topic, partitions: [{ partition: 0, offset: '3' }] }] });
      await expect(offsets.committed(topic, 0)).rejects.toThrow(`the committed offset of ${topic}/0 did not settle within 200 ms`);
      await open.abort();
      expect(await offsets.committed(topic, 0)).toBe(-1n);
    } finally {
      await producer.disconnect();
      await offsets.close();
    }
  });
});
