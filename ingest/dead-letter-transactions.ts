import { Partitioners, type Kafka, type Message, type Producer } from 'kafkajs';
import type { Logger } from '../shared/logger.ts';
import type { CommitOffsets } from './offset-commits.ts';
import type { StableOffsets } from './stable-offsets.ts';

export interface DeadLetterTransactionsOptions {
  /**
   * How long a partition whose transaction another worker fenced is left alone before it is claimed
   * again: the group's session timeout, by which a worker the group dropped has heard of it.
   */
  reclaimAfterMs: number;
}

/** One source partition in one assignment. */
interface Settlement {
  assignment: number;
  /** The committed offset once the partition was fenced: nothing at or below it is committed or sent again. */
  floor: Promise<bigint>;
  /** The partition's transactional producer, made at its first dead letters in the assignment. */
  producer?: Promise<Producer>;
}

/** Another worker fenced this partition's transactions: its chunks wait for the next assignment. */
export class PartitionTakenOver extends Error {}

/**
 * Dead letters and the offset of the chunk they came from, committed together in one Kafka
 * transaction, so a chunk redelivered after a crash, a lost group membership or a rebalance never
 * writes its letters twice (events are safe to write again: their ids come from their positions;
 * letters are not). Each source partition has its own transactional id.
 *
 * Why exactly once: a letters transaction commits its offset without the group's generation (kafkajs
 * sends TxnOffsetCommit v0-1), so the previous owner can commit one after the group handed the
 * partition over, and after the new owner's consumer read the older offset; a plain commit of that
 * owner's next chunk would then move the committed offset back below the letters, and their chunk's
 * letters would be sent again. So before its first commit of any kind in an assignment, a partition is
 * settled: its transactional id is initialised (the broker aborts the previous owner's open
 * transaction, or first completes one it has ended, and refuses that owner's transactions from then
 * on), its committed offset is read once every transactional commit has settled (StableOffsets), and
 * that offset is committed again through the consumer, which the broker checks against the group's
 * generation. The offset read is the partition's floor for the assignment: no commit at or below it
 * (the previous owner committed that far), no letter below it (the previous owner sent those).
 * After a settlement only this worker commits the partition. The previous owner's plain commits carry
 * an old generation, and its transactions an old producer epoch, unless it initialises the id again
 * (a retry, or its own first commit of the partition): then its generation check fails, before it has
 * committed anything, if the group has moved on; and if it has not, this worker settles only later,
 * once the new generation has formed, and fences it. Making the producer for the first letters is a
 * fence too, and is settled the same way.
 *
 * A transaction that fails may still have committed (its answer lost to a broker restart): the
 * partition is settled anew before the chunk's retry. A transaction refused as fenced means another
 * worker settled the partition since: it is left alone until the next assignment (or the session
 * timeout, after which a worker the group dropped has heard of it), so as not to fence that worker
 * back again and again.
 */
export class DeadLetterTransactions {
  private readonly settlements = new Map<string, Settlement>();
  /** Per partition, the last fence asked for: a partition's fences run one after the other, never crossing. */
  private readonly fences = new Map<string, Promise<unknown>>();
  /** Partitions another worker fenced, and when they may be claimed again. */
  private readonly takenOver = new Map<string, number>();
  private assignment = 0;

  constructor(
    private readonly kafka: Kafka,
    private readonly offsets: Pick<StableOffsets, 'committed' | 'fence'>,
    private readonly groupId: string,
    private readonly logger: Logger,
    private readonly options: DeadLetterTransactionsOptions = { reclaimAfterMs: 30_000 },
  ) {}

  /** The group is handing out partitions again (a rebalance began, or ended): every partition is settled anew at its next commit. */
  newAssignment(): void {
    this.assignment += 1;
    this.takenOver.clear();
  }

  /**
   * The partition's floor in this assignment: the offset committed before this worker's first commit
   * of it. A chunk ending at or below it is not committed again.
   */
  settled(topic: string, partition: number, member: CommitOffsets): Promise<bigint> {
    return this.settlementOf(topic, partition, member).floor;
  }

  /**
   * Sends a chunk's letters to the dead-letter topic and commits `nextOffset` for the source
   * partition, atomically. Returns the letters sent: those below the partition's floor are dropped
   * (the previous owner sent them), and none when the chunk ends at or below it.
   */
  async send<T extends { offset: string; message: Message }>(
    source: { topic: string; partition: number },
    deadLetterTopic: string,
    letters: T[],
    nextOffset: string,
    member: CommitOffsets,
  ): Promise<T[]> {
    const settlement = this.settlementOf(source.topic, source.partition, member);
    await settlement.floor;
    settlement.producer ??= this.claim(settlement, source.topic, source.partition, member);
    let producer: Producer;
    try {
      producer = await settlement.producer;
    } catch (error) {
      this.unsettle(settlement, source.topic, source.partition, error);
      throw error;
    }
    const floor = await settlement.floor;
    if (floor >= BigInt(nextOffset)) {
      this.logger.info(
        { topic: source.topic, partition: source.partition, committed: String(floor), nextOffset },
        'chunk already committed by the previous owner; its dead letters are not sent again',
      );
      return [];
    }
    const fresh = letters.filter((letter) => BigInt(letter.offset) >= floor);
    try {
      // a settlement of the next assignment has fenced, or is about to: this one commits no more
      if (settlement.assignment !== this.assignment) throw new Error(`${source.topic}/${source.partition} was assigned anew`);
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
      this.unsettle(settlement, source.topic, source.partition, error);
      throw error;
    }
    return fresh;
  }

  /** This assignment's settlement of the partition, begun at its first commit: fence, read the floor, commit it again as a member. */
  private settlementOf(topic: string, partition: number, member: CommitOffsets): Settlement {
    const key = partitionKey(topic, partition);
    const until = this.takenOver.get(key);
    if (until !== undefined && Date.now() < until) {
      throw new PartitionTakenOver(`${topic}/${partition} was taken over by another worker: its chunks wait for the next assignment`);
    }
    if (until !== undefined) this.takenOver.delete(key);
    const current = this.settlements.get(key);
    if (current?.assignment === this.assignment) return current;
    const settlement: Settlement = {
      assignment: this.assignment,
      floor: this.fenced(key, async () => {
        if (current) await release(current);
        // a rebalance began while this fence waited: the partition may be another worker's already
        if (settlement.assignment !== this.assignment) throw new Error(`the assignment changed while ${topic}/${partition} was being settled`);
        await this.offsets.fence(this.transactionalId(topic, partition));
        return await this.confirmedOffset(topic, partition, member);
      }),
    };
    // a settlement that failed is begun again by the chunk's retry
    settlement.floor.catch(() => this.forget(key, settlement));
    this.settlements.set(key, settlement);
    return settlement;
  }

  /** The partition's transactional producer: initialising it fences again, so the floor is read again after it. */
  private claim(settlement: Settlement, topic: string, partition: number, member: CommitOffsets): Promise<Producer> {
    return this.fenced(partitionKey(topic, partition), async () => {
      if (settlement.assignment !== this.assignment) throw new Error(`the assignment changed while ${topic}/${partition} was being claimed`);
      const producer = this.kafka.producer({
        createPartitioner: Partitioners.DefaultPartitioner,
        transactionalId: this.transactionalId(topic, partition),
        idempotent: true,
        maxInFlightRequests: 1,
      });
      await producer.connect();
      try {
        // kafkajs initialises the transactional id at the first transaction: an empty one fences now
        const fence = await producer.transaction();
        await fence.abort();
        const floor = await settlement.floor;
        const committed = await this.confirmedOffset(topic, partition, member);
        if (committed > floor) settlement.floor = Promise.resolve(committed);
      } catch (error) {
        await producer.disconnect().catch(() => undefined);
        throw error;
      }
      return producer;
    });
  }

  /** A failed transaction: the partition is settled again before its next commit, or left alone if another worker fenced it. */
  private unsettle(settlement: Settlement, topic: string, partition: number, error: unknown): void {
    const key = partitionKey(topic, partition);
    this.forget(key, settlement);
    void release(settlement);
    if (isFenced(error) && settlement.assignment === this.assignment) {
      this.takenOver.set(key, Date.now() + this.options.reclaimAfterMs);
      this.logger.warn({ topic, partition }, 'another worker fenced this partition; it is left alone until the next assignment');
    }
  }

  private forget(key: string, settlement: Settlement): void {
    if (this.settlements.get(key) === settlement) this.settlements.delete(key);
  }

  /** Runs a fence of the partition after the ones asked for before it (their failures are their callers'). */
  private fenced<T>(key: string, fence: () => Promise<T>): Promise<T> {
    const run = (this.fences.get(key) ?? Promise.resolve()).then(fence, fence);
    const tail = run.catch(() => undefined);
    this.fences.set(key, tail);
    void tail.then(() => {
      if (this.fences.get(key) === tail) this.fences.delete(key);
    });
    return run;
  }

  /**
   * After a fence: the partition's committed offset once every transactional commit has settled, committed again
   * through the consumer. The broker checks that commit against the group's generation, so a worker the group has
   * dropped (whose fence may have just fenced the new owner) learns it here, before it commits anything behind the
   * new owner's floor. Nothing else commits the partition meanwhile: this worker commits it only once settled, and
   * a previous owner's commits end at the fence (see the class comment).
   */
  private async confirmedOffset(topic: string, partition: number, member: CommitOffsets): Promise<bigint> {
    const committed = await this.offsets.committed(topic, partition);
    await member({ topics: [{ topic, partitions: [{ partition, offset: String(committed) }] }] });
    return committed;
  }

  private transactionalId(topic: string, partition: number): string {
    return `${this.groupId}.dead-letters.${topic}.${partition}`;
  }

  async close(): Promise<void> {
    const settlements = [...this.settlements.values()];
    this.settlements.clear();
    await Promise.all(settlements.map(release));
  }
}

function partitionKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

async function release(settlement: Settlement): Promise<void> {
  const producer = await settlement.producer?.catch(() => undefined);
  await producer?.disconnect().catch(() => undefined);
}

/** The broker refused the producer's epoch: another holder initialised the transactional id since (kafkajs may wrap the error). */
function isFenced(error: unknown): boolean {
  const { type, code, cause, originalError } = (error ?? {}) as { type?: string; code?: number; cause?: unknown; originalError?: unknown };
  if (type === 'INVALID_PRODUCER_EPOCH' || type === 'PRODUCER_FENCED' || code === 47 || code === 90) return true;
  const inner = cause ?? originalError;
  return inner instanceof Error && inner !== error && isFenced(inner);
}
