import { afterAll, describe, expect, it } from 'vitest';
import { Partitioners, type Kafka } from 'kafkajs';
import { DeadLetterTransactions } from '../../ingest/dead-letter-transactions.ts';
import type { CommitOffsets } from '../../ingest/offset-commits.ts';
import { StableOffsets } from '../../ingest/stable-offsets.ts';
import { ingestTestConfig, removeKafkaTestData, silentLogger, testKafka, waitFor } from '../support/ingest.ts';

const END = 'end-of-test';
/** No consumer group here: the membership check after each fence (a plain commit through the consumer) passes. */
const member: CommitOffsets = async () => undefined;

function letters(offsets: number[]) {
  return offsets.map((offset) => ({ offset: String(offset), message: { key: null, value: Buffer.from(`letter ${offset}`) } }));
}

/** Every letter on the topic, read committed, up to a sentinel written after the transactions. */
async function lettersOnTopic(kafka: Kafka, topic: string): Promise<string[]> {
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  await producer.send({ topic, messages: [{ value: END }] });
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: `${topic}-reader` });
  const values: string[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void values.push(message.value?.toString() ?? '') });
    await waitFor('the sentinel after the letters', async () => (values.includes(END) ? true : undefined));
  } finally {
    await consumer.disconnect();
  }
  return values.filter((value) => value !== END);
}

describe('dead letters: a fenced owner claims its partition again only in a new assignment', () => {
  const config = ingestTestConfig('dead-letter-claims');
  const kafka = testKafka(config);
  const source = { topic: `${config.TOPIC_PREFIX}source`, partition: 0 };
  const deadLetterTopic = `${config.TOPIC_PREFIX}source.dead-letter`;

  afterAll(async () => {
    await removeKafkaTestData(config, [`${deadLetterTopic}-reader`]);
  });

  it('the fenced previous owner retrying a chunk the new owner committed sends none of its letters again', async () => {
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({
      waitForLeaders: true,
      topics: [
        { topic: source.topic, numPartitions: 1 },
        { topic: deadLetterTopic, numPartitions: 1 },
      ],
    });
    const previousOffsets = new StableOffsets(kafka, config.INGEST_GROUP_ID);
    const nextOffsets = new StableOffsets(kafka, config.INGEST_GROUP_ID);
    const previous = new DeadLetterTransactions(kafka, previousOffsets, config.INGEST_GROUP_ID, silentLogger);
    const next = new DeadLetterTransactions(kafka, nextOffsets, config.INGEST_GROUP_ID, silentLogger);
    try {
      expect(await previous.send(source, deadLetterTopic, letters([0, 1]), '2', member)).toHaveLength(2);
      // the partition moves on: its new owner claims it (fencing the previous one) and commits the next chunk
      expect(await next.send(source, deadLetterTopic, letters([2, 3]), '4', member)).toHaveLength(2);

      // the previous owner, not yet told of the move, tries the same chunk: fenced, and its retry claims nothing
      await expect(previous.send(source, deadLetterTopic, letters([2, 3]), '4', member)).rejects.toThrow();
      await expect(previous.send(source, deadLetterTopic, letters([2, 3]), '4', member)).rejects.toThrow('was taken over by another worker');
      // handed the partition again, it settles it anew and finds the chunk done
      previous.newAssignment();
      expect(await previous.send(source, deadLetterTopic, letters([2, 3]), '4', member)).toEqual([]);

      const [committed] = await admin.fetchOffsets({ groupId: config.INGEST_GROUP_ID, topics: [source.topic] });
      expect(committed!.partitions[0]!.offset).toBe('4');
      expect(await lettersOnTopic(kafka, deadLetterTopic)).toEqual(['letter 0', 'letter 1', 'letter 2', 'letter 3']);
    } finally {
      await Promise.all([previous.close(), next.close()]);
      await Promise.all([previousOffsets.close(), nextOffsets.close(), admin.disconnect()]);
    }
  });
});
