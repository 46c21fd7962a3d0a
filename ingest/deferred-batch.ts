import type { IHeaders } from 'kafkajs';
import { decompressionBudget } from './decompression-budget.ts';
import { encodeRecord, PROCESS_TOKEN, recordBatchHeaderBefore, type RecordBatchHeader } from './undecodable-batch.ts';

/**
 * A record batch the decompression budget holds back (decompression-budget.ts) is handed to kafkajs
 * as stand-ins, one per offset like an undecodable batch's, each with this header; processBatch
 * stops at the first one and rewinds the partition to it, so the batch is fetched again, whole,
 * when there is room. Nothing of it is resolved or committed meanwhile.
 */
export const DEFERRED_BATCH_HEADER = 'logplatform-deferred-batch';

/** Wraps a codec's decompress with the budget: a batch it does not admit becomes deferred stand-ins. */
export function budgetedDecompress(codec: string, decompress: (data: Buffer) => Promise<Buffer>): (data: Buffer) => Promise<Buffer> {
  return async (data) => {
    const budget = decompressionBudget();
    if (budget && !budget.admits(codec, data)) {
      const header = recordBatchHeaderBefore(data);
      if (header) return deferredStandIns(header);
    }
    const decoded = await decompress(data);
    budget?.decompressed(codec, data, decoded.length);
    return decoded;
  };
}

function deferredStandIns(header: RecordBatchHeader): Buffer {
  const token = Buffer.from(PROCESS_TOKEN);
  const records: Buffer[] = [];
  for (let index = 0; index < header.records; index += 1) {
    const offsetDelta = index === header.records - 1 ? header.lastOffsetDelta : Math.min(index, header.lastOffsetDelta);
    records.push(encodeRecord(offsetDelta, null, DEFERRED_BATCH_HEADER, token));
  }
  return Buffer.concat(records);
}

/** Whether the message is a stand-in of a batch deferred by this process. */
export function isDeferredStandIn(message: { headers?: IHeaders }): boolean {
  const header = message.headers?.[DEFERRED_BATCH_HEADER];
  return Buffer.isBuffer(header) && header.toString() === PROCESS_TOKEN;
}
