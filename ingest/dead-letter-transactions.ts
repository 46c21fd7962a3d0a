import { Partitioners, type Kafka, type Message, type Producer } from 'kafkajs';
import type { Logger } from '../shared/logger.ts';
import type { StableOffsets } from './stable-offsets.ts';

interface PartitionProducer {
  producer: Producer;
  /** The assignment this producer was claimed in; a later assignment claims anew. */
  assignment: number;
}

/**
 * Dead letters and the offset of the chunk they came from, committed together in one Kafka
 * transaction, so a chunk redelivered after a crash, a lost group membership or a rebalance never
 * writes its letters twice (events are safe to write again: their ids come from their positions;
 * letters are not). Each source partition has its own transactional id: the worker that takes a
 * partition over initialises that id, which aborts the previous owner's open transaction and fences
 * it out, and then reads the partition's committed offset again, in case that owner committed
 * after the group handed the partition over (once that commit has settled: StableOffsets).
 */
export class DeadLetterTransactions {
  private readonly producers = new Map<string, PartitionProducer>();
  private assignment = 0;

  constructor(
    private readonly kafka: Kafka,
    private readonly offsets: Pick<StableOffsets, 'committed'>,
    private readonly groupId: string,
    private readonly logger: Logger,
  ) {}

  /** The group handed out partitions again: every partition is claimed anew at its next batch. */
  newAssignment(): void {
    this.assignment += 1;
  }

  /**
   * Sends a chunk's letters to the dead-letter topic and commits `nextOffset` for the source
   * partition, atomically. Returns the letters sent: at a partition's first letters in an assignment,
   * those below the offset another owner committed meanwhile are dropped (that owner sent them).
   */
  async send<T extends { offset: string; message: Message }>(
    source: { topic: string; partition: number },
    deadLetterTopic: string,
    letters: T[],
    nextOffset: string,
  ): Promise<T[]> {
    const floor = await this.claim(source.topic, source.partition);
    const fresh = floor === undefined ? letters : letters.filter((letter) => BigInt(letter.offset) >= floor);
    if (floor !== undefined && floor >= BigInt(nextOffset)) {
      this.logger.info(
        { topic: source.topic, partition: source.partition, committed: String(floor), nextOffset },
        'chunk already committed by the previous owner; its dead letters are not sent again',
      );
      return [];
    }
    const key = `${source.topic}\u0000${source.partition}`;
    const { producer } = this.producers.get(key)!;
    try {
      const transaction = await producer.transaction();
      try {
        if (fresh.length > 0) await transaction.send({ topic: deadLetterTopic, acks: -1, messages: fresh.map((letter) => letter.message) });
        await transaction.sendOffsets({
          consumerGroupId: this.groupId,
          topics: [{ topic: source.topic, partitions: [{ partition: source.partition, offset: nextOffset }] }],
        });
        await transaction.commit();
      } catch (error) {
        await transaction.abort().catch(() => undefined);
        throw error;
      }
    } catch (error) {
      // a commit that failed may still have committed (its answer lost to a broker restart), and a fenced
      // producer stays fenced: the chunk's retry claims the partition again and reads what was committed
      await this.release(key);
      throw error;
    }
    return fresh;
  }

  /**
   * At a partition's first letters in an assignment: initialises its transactional id (which aborts
   * the previous owner's open transaction and fences it out), then returns the offset the group has
   * committed for it. Undefined when already claimed in this assignment.
   */
  private async claim(topic: string, partition: number): Promise<bigint | undefined> {
    const key = `${topic}\u0000${partition}`;
    const existing = this.producers.get(key);
    if (existing?.assignment === this.assignment) return undefined;
    if (existing) await this.release(key);
    const producer = this.kafka.producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      transactionalId: `${this.groupId}.dead-letters.${topic}.${partition}`,
      idempotent: true,
      maxInFlightRequests: 1,
    });
    await producer.connect();
    // kafkajs initialises the transactional id at the first transaction: an empty one fences now
    const fence = await producer.transaction();
    await fence.abort();
    this.producers.set(key, { producer, assignment: this.assignment });
    return await this.offsets.committed(topic, partition);
  }

  private async release(key: string): Promise<void> {
    const existing = this.producers.get(key);
    if (!existing) return;
    this.producers.delete(key);
    await existing.producer.disconnect().catch(() => undefined);
  }

  async close(): Promise<void> {
    const producers = [...this.producers.values()];
    this.producers.clear();
    await Promise.all(producers.map(({ producer }) => producer.disconnect().catch(() => undefined)));
  }
}
