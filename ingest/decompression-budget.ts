import { MESSAGE_HEAP_BYTES } from './heap-budget.ts';

/**
 * The worker's bound on decompressed message bytes (INGEST_MEMORY_BUDGET_BYTES). kafkajs's fetch
 * limits count compressed bytes, and it decompresses every record batch of a fetch response before
 * handing any over: at 35x, an 8 MB fetch is 280 MB in memory. So our codecs ask this budget before
 * decompressing a batch (codecs.ts): a batch that would take the chunks queued for Elasticsearch
 * plus what this fetch already decompressed over the budget is not decompressed but deferred
 * (stand-ins, deferred-batch.ts); processBatch stops before it and the partition is fetched again
 * from there once the queue has drained. The first batch of a fetch is always decompressed, so
 * consumption goes on whatever the ratio: the bound is the budget plus one batch (per broker
 * fetched from at once: kafkajs fetches from each broker on its own).
 *
 * A batch's decompressed size is estimated from its compressed size and the codec's last ratio;
 * a batch estimated to fit is kept whatever its real size (it was already decompressed).
 */
export class DecompressionBudget {
  /** Bytes decompressed since kafkajs last handed a fetch's batches over. */
  private decoded = 0;
  private readonly ratios = new Map<string, number>();

  constructor(
    readonly maxBytes: number,
    /** Decompressed bytes of chunks queued for or in bulk requests (the write pipeline's count). */
    private readonly queuedBytes: () => number,
  ) {}

  /**
   * Whether the batch of `records` records whose compressed bytes are `data` may be decompressed now.
   * Each record counts with the heap kafkajs's message object takes (MESSAGE_HEAP_BYTES): a batch
   * of tiny records is mostly objects, not bytes.
   */
  admits(codec: string, data: Buffer, records: number): boolean {
    if (this.decoded === 0) return true;
    const estimate = data.length * (this.ratios.get(codec) ?? 1) + records * MESSAGE_HEAP_BYTES;
    return this.queuedBytes() + this.decoded + estimate <= this.maxBytes;
  }

  /** Counts a batch of `records` records decompressed from `data` into `bytes`. */
  decompressed(codec: string, data: Buffer, bytes: number, records: number): void {
    this.decoded += bytes + records * MESSAGE_HEAP_BYTES;
    if (data.length > 0) this.ratios.set(codec, bytes / data.length);
  }

  /**
   * kafkajs decodes a whole fetch response before handing its batches to processBatch: from here
   * on its bytes are the batches' (and the write pipeline counts them as they are queued).
   */
  handedOver(): void {
    this.decoded = 0;
  }
}

/**
 * The codecs are registered once per process in kafkajs's global table, so they consult the budget
 * of the worker started last (one worker per process in production; tests may start several).
 */
let current: DecompressionBudget | undefined;

export function useDecompressionBudget(budget: DecompressionBudget | undefined): void {
  current = budget;
}

export function decompressionBudget(): DecompressionBudget | undefined {
  return current;
}
