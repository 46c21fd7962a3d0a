import type { Admin, Kafka } from 'kafkajs';
import type { Gauge } from 'prom-client';
import type { Logger } from '../shared/logger.ts';

/** A partition's log bounds as the broker reports them. */
export interface PartitionBounds {
  partition: number;
  low: string;
  high: string;
}

export interface PartitionLag {
  partition: number;
  lag: number;
}

/**
 * Messages the group has not committed yet, per partition. Without a commit (or with one older than
 * the retained log) the group starts from the earliest retained message, as the worker subscribes
 * from the beginning.
 */
export function partitionLags(bounds: readonly PartitionBounds[], committed: ReadonlyMap<number, string>): PartitionLag[] {
  return bounds.map(({ partition, low, high }) => {
    const start = BigInt(low);
    const offset = BigInt(committed.get(partition) ?? '-1');
    const from = offset < start ? start : offset;
    const lag = BigInt(high) - from;
    return { partition, lag: lag > 0n ? Number(lag) : 0 };
  });
}

export interface ConsumerLagPoll {
  /** Stops the timer, waits for a poll in flight and disconnects. */
  stop(): Promise<void>;
}

export interface ConsumerLagOptions {
  kafka: Kafka;
  groupId: string;
  topics: readonly string[];
  gauge: Gauge<'topic' | 'partition'>;
  intervalMs: number;
  logger: Logger;
}

/**
 * Reads the group's committed offsets against the end of each topic on a timer, independently of
 * consumption, so the lag keeps growing while Elasticsearch is down and the partitions are held.
 */
export function startConsumerLagPoll({ kafka, groupId, topics, gauge, intervalMs, logger }: ConsumerLagOptions): ConsumerLagPoll {
  let admin: Admin | undefined;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;
  let stopped = false;
  let failing = false;

  const poll = async () => {
    try {
      if (!admin) {
        // no retries inside a round: the next round is the retry, and shutdown never waits on a backoff
        admin = kafka.admin({ retry: { retries: 0 } });
        await admin.connect();
      }
      const committed = await admin.fetchOffsets({ groupId, topics: [...topics] });
      const committedByTopic = new Map(
        committed.map(({ topic, partitions }) => [topic, new Map(partitions.map(({ partition, offset }) => [partition, offset]))]),
      );
      for (const topic of topics) {
        const bounds = await admin.fetchTopicOffsets(topic);
        for (const { partition, lag } of partitionLags(bounds, committedByTopic.get(topic) ?? new Map()))
          gauge.set({ topic, partition: String(partition) }, lag);
      }
      if (failing) logger.info('consumer lag readable again');
      failing = false;
    } catch (error) {
      // Kafka unreachable: keep the last values and try again next round with a fresh connection
      if (!failing) logger.warn({ err: error }, 'cannot read consumer lag from Kafka');
      failing = true;
      await admin?.disconnect().catch(() => undefined);
      admin = undefined;
    }
  };

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      inFlight = poll().finally(schedule);
    }, intervalMs);
    timer.unref();
  };
  inFlight = poll().finally(schedule);

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await inFlight;
      await admin?.disconnect();
      admin = undefined;
    },
  };
}
