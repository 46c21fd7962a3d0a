import type { IHeaders } from 'kafkajs';
import { decompressionBudget } from './decompression-budget.ts';
import { PROCESS_TOKEN, recordBatchHeaderBefore, varInt, type RecordBatchHeader } from './undecodable-batch.ts';

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
    if (!budget) return decompress(data);
    const header = recordBatchHeaderBefore(data);
    const records = header?.records ?? 0;
    if (header && !budget.admits(codec, data, records)) return deferredStandIns(header);
    const decoded = await decompress(data);
    budget.decompressed(codec, data, decoded.length, records);
    return decoded;
  };
}

/** A stand-in record after its offset delta: no key, no value, and the one header. */
let standInTail: Buffer | undefined;

/**
 * One stand-in record per offset of the batch, written into one buffer: a deferred batch may hold
 * thousands of records, and a fetch of well-compressed input defers most of its batches.
 */
export function deferredStandIns(header: RecordBatchHeader): Buffer {
  const key = Buffer.from(DEFERRED_BATCH_HEADER);
  const token = Buffer.from(PROCESS_TOKEN);
  standInTail ??= Buffer.concat([varInt(-1), varInt(-1), varInt(1), varInt(key.length), key, varInt(token.length), token]);
  const tail = standInTail;
  // per record at most: its length and offset delta as varints of 5 bytes, attributes and timestamp delta
  const records = Buffer.allocUnsafe(header.records * (tail.length + 12));
  let at = 0;
  for (let index = 0; index < header.records; index += 1) {
    const offsetDelta = index === header.records - 1 ? header.lastOffsetDelta : Math.min(index, header.lastOffsetDelta);
    at = writeVarInt(records, 2 + varIntBytes(offsetDelta) + tail.length, at);
    // attributes 0, timestamp delta 0
    records[at++] = 0;
    records[at++] = 0;
    at = writeVarInt(records, offsetDelta, at);
    at += tail.copy(records, at);
  }
  return records.subarray(0, at);
}

/** Kafka's zigzag varint of a non-negative int32, written at `at`; returns where it ends. */
function writeVarInt(target: Buffer, value: number, at: number): number {
  let zigzag = value * 2;
  while (zigzag >= 0x80) {
    target[at++] = (zigzag % 0x80) | 0x80;
    zigzag = Math.floor(zigzag / 0x80);
  }
  target[at++] = zigzag;
  return at;
}

function varIntBytes(value: number): number {
  let bytes = 1;
  for (let zigzag = value * 2; zigzag >= 0x80; zigzag = Math.floor(zigzag / 0x80)) bytes += 1;
  return bytes;
}

/** Whether the message is a stand-in of a batch deferred by this process. */
export function isDeferredStandIn(message: { headers?: IHeaders }): boolean {
  const header = message.headers?.[DEFERRED_BATCH_HEADER];
  return Buffer.isBuffer(header) && header.toString() === PROCESS_TOKEN;
}
