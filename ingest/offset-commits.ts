import type { TopicOffsets } from 'kafkajs';

/** Commits offsets through the consumer that delivered them (kafkajs's commitOffsetsIfNecessary with offsets). */
export type CommitOffsets = (offsets: { topics: TopicOffsets[] }) => Promise<void>;

interface Waiting {
  topic: string;
  partition: number;
  offset: string;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * One bulk request acknowledges the chunks of many partitions at once, and each chunk then commits
 * its offset: one commit request per partition per bulk, each a Kafka round trip and its encoding,
 * a cost per chunk that is highest when the stream is slow and chunks are small. The commits asked
 * for in the same turn of the event loop go as one request instead (kafkajs commits any assigned
 * partition through any batch's payload: they share the consumer group); each caller hears of its
 * own commit, and a failed request fails all of its callers, which each rewind as before. A
 * partition never has two commits waiting: its chunks commit one after another.
 */
export class OffsetCommits {
  private waiting: Waiting[] = [];
  private send: CommitOffsets | undefined;

  commit(send: CommitOffsets, topic: string, partition: number, offset: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ topic, partition, offset, resolve, reject });
      if (this.send === undefined) {
        this.send = send;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    const { waiting, send } = this;
    this.waiting = [];
    this.send = undefined;
    const topics = new Map<string, { partition: number; offset: string }[]>();
    for (const { topic, partition, offset } of waiting) {
      const partitions = topics.get(topic);
      if (partitions === undefined) topics.set(topic, [{ partition, offset }]);
      else partitions.push({ partition, offset });
    }
    send!({ topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })) }).then(
      () => waiting.forEach((entry) => entry.resolve()),
      (error: unknown) => waiting.forEach((entry) => entry.reject(error)),
    );
  }
}
