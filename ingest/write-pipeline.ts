/**
 * kafkajs fetches again only once every batch of the previous fetch has been handed back, so a
 * worker that waits for Elasticsearch inside each batch leaves Elasticsearch idle while it fetches
 * and decodes, and Kafka idle while it writes. The pipeline lets a batch hand its chunks over and
 * return: each partition's chunks are written and committed one after the other, in offset order,
 * while the next fetch is decoded. What is queued is bounded in bytes (the fetch loop waits), and
 * nothing is committed before Elasticsearch acknowledged it, as before.
 *
 * Queued work is dropped, uncommitted, when the assignment changes (a new epoch: kafkajs fetches
 * again from the committed offsets) or when an earlier chunk of the same partition failed (the
 * partition is rewound to that chunk and its later chunks come again).
 */
export interface ChunkWork {
  /** False once this work must be given up: a rebalance, a failure before it in its partition, or a stop. */
  isCurrent(): boolean;
  /** False after a rebalance or an earlier failure in its partition; a stop still commits what was acknowledged. */
  mayCommit(): boolean;
}

/** Work in a partition's queue, and the bytes it holds against the bound until it ends. */
interface QueuedWork {
  chunk: ChunkWork;
  bytes: number;
}

interface OpenWork<T> {
  item: T;
  queued: QueuedWork;
}

export class WritePipeline {
  private readonly tails = new Map<string, Promise<void>>();
  /** Per partition, its last queued work while it has not started: later input may join it. */
  private readonly open = new Map<string, OpenWork<unknown>>();
  private readonly partitionEpochs = new Map<string, number>();
  private epoch = 0;
  private queuedBytes = 0;
  private stopping = false;
  private wake: (() => void) | undefined;
  private woken: Promise<void> | undefined;

  /** `onError` hears of work that threw instead of handling its own failure (a defect). */
  constructor(
    private readonly maxQueuedBytes: number,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** The partitions were assigned anew: everything queued belongs to the old assignment. */
  reassigned(): void {
    this.epoch += 1;
  }

  /** A chunk of this partition failed: its later chunks, already queued, are dropped. */
  failed(key: string): void {
    this.partitionEpochs.set(key, (this.partitionEpochs.get(key) ?? 0) + 1);
  }

  get bytes(): number {
    return this.queuedBytes;
  }

  /** Runs `work` after the partition's earlier chunks; its bytes count against the bound until it ends. */
  enqueue(key: string, bytes: number, work: (chunk: ChunkWork) => Promise<void>): void {
    this.queue(key, bytes, work);
  }

  /**
   * Like enqueue, for work that can take more input until it starts. Under a steady stream kafkajs
   * hands over many small batches per partition, and a partition writes one queued chunk per bulk
   * round trip: queued one by one, a busy partition would fall further behind with every fetch. So
   * while the partition's last queued work has not started (and still belongs to this assignment),
   * `join(queued)` may take the new input into it; only when it declines is new work queued.
   */
  enqueueJoining<T>(key: string, bytes: number, item: T, join: (queued: T) => boolean, run: (item: T, chunk: ChunkWork) => Promise<void>): void {
    const open = this.open.get(key) as OpenWork<T> | undefined;
    if (open?.queued.chunk.isCurrent() && join(open.item)) {
      open.queued.bytes += bytes;
      this.queuedBytes += bytes;
      return;
    }
    let work: OpenWork<T> | undefined;
    const close = () => {
      if (work && this.open.get(key) === work) this.open.delete(key);
    };
    const queued = this.queue(key, bytes, (chunk) => (close(), run(item, chunk)), close);
    work = { item, queued };
    this.open.set(key, work);
  }

  private queue(key: string, bytes: number, work: (chunk: ChunkWork) => Promise<void>, ended?: () => void): QueuedWork {
    const epoch = this.epoch;
    const partitionEpoch = this.partitionEpochs.get(key) ?? 0;
    const mayCommit = () => epoch === this.epoch && partitionEpoch === (this.partitionEpochs.get(key) ?? 0);
    const chunk: ChunkWork = { isCurrent: () => !this.stopping && mayCommit(), mayCommit };
    const queued: QueuedWork = { chunk, bytes };
    this.queuedBytes += bytes;
    const previous = this.tails.get(key) ?? Promise.resolve();
    const tail = previous
      .then(() => (chunk.isCurrent() ? work(chunk) : undefined))
      .catch((error: unknown) => {
        this.failed(key);
        this.onError(error);
      })
      .finally(() => {
        ended?.();
        this.queuedBytes -= queued.bytes;
        if (this.tails.get(key) === tail) this.tails.delete(key);
        this.wake?.();
      });
    this.tails.set(key, tail);
    return queued;
  }

  /** Waits while more than the bound is queued (the fetch loop's backpressure), heartbeating every second. */
  async admit(heartbeat: () => Promise<void>): Promise<void> {
    while (this.queuedBytes > this.maxQueuedBytes && !this.stopping) {
      this.woken ??= new Promise<void>((resolve) => (this.wake = resolve)).finally(() => {
        this.woken = undefined;
        this.wake = undefined;
      });
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.woken, new Promise((resolve) => (timer = setTimeout(resolve, 1000)))]);
      clearTimeout(timer);
      await heartbeat();
    }
  }

  /** Starts nothing more and waits for the chunks being written (they commit what Elasticsearch acknowledged). */
  async drain(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await Promise.allSettled([...this.tails.values()]);
  }

  get isStopping(): boolean {
    return this.stopping;
  }
}
