import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Partitioners, type Admin, type Consumer, type EachBatchPayload } from 'kafkajs';
import { commitChunk } from '../../ingest/batch.ts';
import type { DeadLetter } from '../../ingest/dead-letter.ts';
import { DeadLetterTransactions } from '../../ingest/dead-letter-transactions.ts';
import type { CommitOffsets } from '../../ingest/offset-commits.ts';
import { OffsetCommits } from '../../ingest/offset-commits.ts';
import { StableOffsets } from '../../ingest/stable-offsets.ts';
import { readCommitted } from '../faults/support/committed-records.ts';
import { ingestTestConfig, removeKafkaTestData, silentLogger, testKafka, waitFor } from '../support/ingest.ts';

/** Two workers' kafkajs clients and stable-offset readers in one group, over one source topic and its letters. */
function twoWorkers(name: string) {
  const config = ingestTestConfig(name);
  const groupId = config.INGEST_GROUP_ID;
  const kafkaA = testKafka(config);
  const kafkaB = testKafka(config);
  return {
    config,
    brokers: config.KAFKA_BROKERS!,
    source: `${config.TOPIC_PREFIX}source`,
    deadLetterTopic: `${config.TOPIC_PREFIX}source.dead-letter`,
    groupId,
    kafkaA,
    kafkaB,
    offsetsA: new StableOffsets(kafkaA, groupId),
    offsetsB: new StableOffsets(kafkaB, groupId),
  };
}

/**
 * Two owners of the same partitions, each with its own kafkajs client, as two workers across a rebalance:
 * A, the previous owner, still finishing its chunks, and B, whose consumer the group has handed them to.
 * Both commit through batch.ts's commitChunk, as the worker does.
 */
describe('dead letters across a change of owner: committed once, and the committed offset never goes back', () => {
  const { config, brokers, source, deadLetterTopic, groupId, kafkaA, kafkaB, offsetsA, offsetsB } = twoWorkers('dead-letter-settle');
  // a fenced owner waits longer than the test before it may claim its partition again
  const previous = new DeadLetterTransactions(kafkaA, offsetsA, groupId, silentLogger, { reclaimAfterMs: 600_000 });
  const next = new DeadLetterTransactions(kafkaB, offsetsB, groupId, silentLogger, { reclaimAfterMs: 600_000 });
  const nextCommits = new OffsetCommits();
  const mayCommit = { mayCommit: () => true };
  let admin: Admin;
  let consumer: Consumer;
  const firstFetched = new Map<number, EachBatchPayload>();

  const letter = (partition: number, offset: number): DeadLetter => ({
    reason: 'invalid_json',
    detail: 'test',
    key: null,
    value: Buffer.from(`p${partition}-letter-${offset}`),
    source: { topic: source, partition, offset: String(offset) },
  });
  // A is no consumer here: it stands for the group's member before B joins, so its membership checks pass
  const previousMember: CommitOffsets = async () => undefined;
  /** A chunk of a partition ending before `to`, its letters at the given offsets, committed by A (the previous owner). */
  const previousCommits = (partition: number, to: number, letters: number[]) =>
    commitChunk(
      previousMember,
      { topic: source, partition },
      deadLetterTopic,
      letters.map((offset) => letter(partition, offset)),
      String(to),
      mayCommit,
      {
        deadLetters: previous,
        commits: new OffsetCommits(),
      },
    );
  /** The same for B, whose letter-free chunks commit through its consumer (the group's generation) as the worker's do. */
  const nextOwnerCommits = (partition: number, to: number, letters: number[]) =>
    commitChunk(
      firstFetched.get(partition)!.commitOffsetsIfNecessary,
      { topic: source, partition },
      deadLetterTopic,
      letters.map((offset) => letter(partition, offset)),
      String(to),
      mayCommit,
      { deadLetters: next, commits: nextCommits },
    );
  // a plain offset fetch right after a transaction can still see the offset before it: read once it has settled
  const committed = async (partition: number) => String(await offsetsB.committed(source, partition));
  const lettersOf = async (partition: number) =>
    (await readCommitted(brokers, deadLetterTopic)).map((record) => record.value).filter((value) => value.startsWith(`p${partition}-`));

  beforeAll(async () => {
    admin = kafkaA.admin();
    await admin.connect();
    await admin.createTopics({
      waitForLeaders: true,
      topics: [
        { topic: source, numPartitions: 2 },
        { topic: deadLetterTopic, numPartitions: 1 },
      ],
    });
    const producer = kafkaA.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    for (const partition of [0, 1]) {
      await producer.send({ topic: source, acks: -1, messages: Array.from({ length: 8 }, (_, n) => ({ partition, value: `event ${n}` })) });
    }
    await producer.disconnect();

    // A owns both partitions first and dead-letters offset 0 of each (its claim: a producer per partition)
    expect(await previousCommits(0, 2, [0])).toHaveLength(1);
    expect(await previousCommits(1, 1, [0])).toHaveLength(1);

    // the group hands both partitions to B: its consumer reads the committed offsets (a plain OffsetFetch)
    consumer = kafkaB.consumer({ groupId });
    await consumer.connect();
    await consumer.subscribe({ topic: source, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async (payload) => {
        if (!firstFetched.has(payload.batch.partition)) firstFetched.set(payload.batch.partition, payload);
      },
    });
    await waitFor('B fetched both partitions', async () => (firstFetched.size === 2 ? true : undefined));
    expect(firstFetched.get(0)!.batch.firstOffset()).toBe('2');
    expect(firstFetched.get(1)!.batch.firstOffset()).toBe('1');
  });

  afterAll(async () => {
    await consumer?.disconnect();
    await Promise.all([previous.close(), next.close()]);
    await Promise.all([offsetsA.close(), offsetsB.close(), admin?.disconnect()]);
    await removeKafkaTestData(config);
  });

  it("the previous owner's letters committed after the new owner read the offset are not sent again by it", async () => {
    // A finishes its next chunk [2, 6) (a letter at 4) after B's consumer read offset 2: its transaction is
    // not bound to the group's generation, so it commits
    expect(await previousCommits(0, 6, [4])).toHaveLength(1);
    // B's first chunk [2, 4) has no letter; then B reaches [4, 6), which holds the letter
    await nextOwnerCommits(0, 4, []);
    const afterPlainCommit = await committed(0);
    const resent = await nextOwnerCommits(0, 6, [4]);
    expect({ afterPlainCommit, resent: resent?.length, committed: await committed(0) }).toEqual({ afterPlainCommit: '6', resent: 0, committed: '6' });
    expect(await lettersOf(0)).toEqual(['p0-letter-0', 'p0-letter-4']);
  });

  it('the previous owner, fenced by the new one, does not commit its chunk again when it retries', async () => {
    // B's first commit of partition 1 ([1, 2), no letter) takes the partition over
    await nextOwnerCommits(1, 2, []);
    // A, not yet told of the rebalance, tries its chunk [2, 4) with a letter at 3: fenced, and so is its retry
    await expect(previousCommits(1, 4, [3])).rejects.toThrow();
    await expect(previousCommits(1, 4, [3])).rejects.toThrow(`${source}/1 was taken over by another worker`);
    // B writes the same chunks
    await nextOwnerCommits(1, 3, []);
    expect(await committed(1)).toBe('3');
    expect(await nextOwnerCommits(1, 4, [3])).toHaveLength(1);
    expect(await committed(1)).toBe('4');
    expect(await lettersOf(1)).toEqual(['p1-letter-0', 'p1-letter-3']);
  });
});

describe('a worker the group dropped without noticing it, settling a partition again', () => {
  const { config, brokers, source, deadLetterTopic, groupId, kafkaA, kafkaB, offsetsA, offsetsB } = twoWorkers('dead-letter-dropped');
  // the dropped worker has not heard of it within the wait a fenced partition gets: it may settle again at once
  const dropped = new DeadLetterTransactions(kafkaA, offsetsA, groupId, silentLogger, { reclaimAfterMs: 0 });
  const next = new DeadLetterTransactions(kafkaB, offsetsB, groupId, silentLogger, { reclaimAfterMs: 600_000 });
  const mayCommit = { mayCommit: () => true };
  const consumers: Consumer[] = [];
  let release!: () => void;
  const stalled = new Promise<void>((resolve) => (release = resolve));

  afterAll(async () => {
    release();
    await Promise.all(consumers.map((consumer) => consumer.disconnect()));
    await Promise.all([dropped.close(), next.close()]);
    await Promise.all([offsetsA.close(), offsetsB.close()]);
    await removeKafkaTestData(config);
  });

  /** Joins the group and hands back the first batch's payload; a stalled member sends no heartbeat after it. */
  async function member(stall: boolean): Promise<EachBatchPayload> {
    const consumer = (stall ? kafkaA : kafkaB).consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 500, rebalanceTimeout: 20_000 });
    consumers.push(consumer);
    await consumer.connect();
    await consumer.subscribe({ topic: source, fromBeginning: true });
    let first: EachBatchPayload | undefined;
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async (payload) => {
        first ??= payload;
        if (stall) await stalled;
      },
    });
    return await waitFor('the first batch', async () => first);
  }

  it('cannot fence its way back in: its commits are checked against the group generation first', async () => {
    const admin = kafkaA.admin();
    await admin.connect();
    try {
      await admin.createTopics({
        waitForLeaders: true,
        topics: [
          { topic: source, numPartitions: 1 },
          { topic: deadLetterTopic, numPartitions: 1 },
        ],
      });
      const producer = kafkaA.producer({ createPartitioner: Partitioners.DefaultPartitioner });
      await producer.connect();
      await producer.send({ topic: source, acks: -1, messages: Array.from({ length: 8 }, (_, n) => ({ partition: 0, value: `event ${n}` })) });
      await producer.disconnect();
      const letter = (offset: number): DeadLetter => ({
        reason: 'invalid_json',
        detail: 'test',
        key: null,
        value: Buffer.from(`letter-${offset}`),
        source: { topic: source, partition: 0, offset: String(offset) },
      });
      const commit = (payload: EachBatchPayload, deadLetters: DeadLetterTransactions, to: number, letters: number[]) =>
        commitChunk(payload.commitOffsetsIfNecessary, { topic: source, partition: 0 }, deadLetterTopic, letters.map(letter), String(to), mayCommit, {
          deadLetters,
          commits: new OffsetCommits(),
        });
      // read once transactional commits have settled (a plain offset fetch can still see the offset before one)
      const committed = async () => String(await offsetsB.committed(source, 0));

      // A owns the partition, dead-letters offset 0, and then stalls: no heartbeat, so the group drops it
      const a = await member(true);
      expect(await commit(a, dropped, 2, [0])).toHaveLength(1);
      // B joins; once A's session has expired the partition is B's, from the committed offset 2
      const b = await member(false);
      expect(b.batch.firstOffset()).toBe('2');
      // B's first chunk [2, 3) settles the partition (fencing A) and commits
      await commit(b, next, 3, []);

      // A, not told, tries its chunk [2, 5) with a letter at 4: fenced; settling again, it fences B back, but
      // the group refuses its commit of the offset it read (an old generation), so it sends nothing
      await expect(commit(a, dropped, 5, [4])).rejects.toThrow();
      await expect(commit(a, dropped, 5, [4])).rejects.toThrow();
      expect(await committed()).toBe('3');

      // B writes [3, 4) and [4, 5): the letter once
      await commit(b, next, 4, []);
      expect(await commit(b, next, 5, [4])).toHaveLength(1);
      expect(await committed()).toBe('5');
      expect((await readCommitted(brokers, deadLetterTopic)).map((record) => record.value)).toEqual(['letter-0', 'letter-4']);
    } finally {
      await admin.disconnect();
    }
  });
});
