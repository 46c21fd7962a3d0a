import { randomBytes } from 'node:crypto';
import type { IHeaders } from 'kafkajs';

/**
 * kafkajs decompresses record batches while it parses a fetch response: a decompress that throws
 * fails the whole fetch (every partition in it), and the consumer retries the same fetch forever or
 * crashes. kafkajs has no hook for that, so our codecs' decompress is the patch point: when a batch
 * cannot be decoded, it returns instead a stand-in for the batch's records, one per offset, each
 * carrying a marker header. kafkajs then sees an ordinary batch, the offsets advance past it, and
 * processBatch() dead-letters the stand-ins as `undecodable_batch`.
 *
 * The stand-in needs the batch header (base offset, record count, last offset delta), which
 * kafkajs does not pass to decompress. Every buffer kafkajs hands out is a view of the fetch
 * response, so the header sits in the 61 bytes just before the compressed records; it is read from
 * there and checked (magic 2, batch length = header + records) before it is trusted. When the check
 * fails (an old message-set format, a future kafkajs that copies), the original error is rethrown.
 */

/** Record batch v2 header bytes before the records (base offset to record count). */
const BATCH_HEADER_BYTES = 61;
/** The batch length field counts the bytes after itself: 49 header bytes, then the records. */
const BATCH_LENGTH_OVERHEAD = 49;
const MAGIC_V2 = 2;

export const UNDECODABLE_BATCH_HEADER = 'logplatform-undecodable-batch';
/** Only stand-ins made by this process carry it, so a producer cannot forge the marker header. */
export const PROCESS_TOKEN = randomBytes(16).toString('hex');

export interface RecordBatchHeader {
  baseOffset: bigint;
  lastOffsetDelta: number;
  records: number;
  codecId: number;
}

export interface UndecodableBatch {
  codec: string;
  /** Why the batch could not be read (the decoder's error). */
  detail: string;
  firstOffset: string;
  lastOffset: string;
  records: number;
}

/** The header of the v2 record batch whose compressed records are `data`, when `data` is a view into the fetched bytes. */
export function recordBatchHeaderBefore(data: Buffer): RecordBatchHeader | undefined {
  if (data.byteOffset < BATCH_HEADER_BYTES) return undefined;
  const header = Buffer.from(data.buffer, data.byteOffset - BATCH_HEADER_BYTES, BATCH_HEADER_BYTES);
  if (header.readInt8(16) !== MAGIC_V2 || header.readInt32BE(8) !== BATCH_LENGTH_OVERHEAD + data.length) return undefined;
  const records = header.readInt32BE(57);
  const lastOffsetDelta = header.readInt32BE(23);
  if (records <= 0 || lastOffsetDelta < 0) return undefined;
  return { baseOffset: header.readBigInt64BE(0), lastOffsetDelta, records, codecId: header.readInt16BE(21) & 0x07 };
}

/** The whole batch as Kafka stores it (header and compressed records), for the dead letter. */
function batchBytes(data: Buffer): Buffer {
  return Buffer.from(Buffer.from(data.buffer, data.byteOffset - BATCH_HEADER_BYTES, BATCH_HEADER_BYTES + data.length));
}

/**
 * Wraps a codec's decompress: a failure, or output that does not hold exactly the batch's records,
 * yields stand-in records instead of an error (see above).
 */
export function guardDecompress(codec: string, decompress: (data: Buffer) => Promise<Buffer>): (data: Buffer) => Promise<Buffer> {
  return async (data) => {
    let failure: unknown;
    let decoded: Buffer | undefined;
    try {
      decoded = await decompress(data);
    } catch (error) {
      failure = error;
    }
    const header = recordBatchHeaderBefore(data);
    if (!header) {
      if (failure !== undefined) throw failure;
      return decoded!;
    }
    if (decoded !== undefined) {
      const problem = recordsProblem(decoded, header.records);
      if (problem === undefined) return decoded;
      failure = new Error(`decompressed ${decoded.length} bytes do not hold the batch's ${header.records} records: ${problem}`);
    }
    return standInRecords(header, codec, describe(failure), batchBytes(data));
  };
}

/** Why `data` is not exactly `count` length-prefixed records, or undefined when it is. */
export function recordsProblem(data: Buffer, count: number): string | undefined {
  let position = 0;
  for (let record = 0; record < count; record += 1) {
    const length = readVarInt(data, position);
    if (length === undefined || length.value < 0) return `record ${record} has no valid length at byte ${position}`;
    position = length.next + length.value;
    if (position > data.length) return `record ${record} runs past the end`;
  }
  return position === data.length ? undefined : `${data.length - position} bytes left after the last record`;
}

/** `count` records whose offsets cover the batch, each with the marker header; the first carries the batch's bytes. */
export function standInRecords(header: RecordBatchHeader, codec: string, detail: string, bytes: Buffer): Buffer {
  const marker: UndecodableBatch & { token: string } = {
    token: PROCESS_TOKEN,
    codec,
    detail,
    firstOffset: header.baseOffset.toString(),
    lastOffset: (header.baseOffset + BigInt(header.lastOffsetDelta)).toString(),
    records: header.records,
  };
  const markerValue = Buffer.from(JSON.stringify(marker));
  const records: Buffer[] = [];
  for (let index = 0; index < header.records; index += 1) {
    // offsets 0..n-2, and the last one on the batch's last offset, so the consumer moves past it whole
    const offsetDelta = index === header.records - 1 ? header.lastOffsetDelta : Math.min(index, header.lastOffsetDelta);
    records.push(encodeRecord(offsetDelta, index === 0 ? bytes : null, UNDECODABLE_BATCH_HEADER, markerValue));
  }
  return Buffer.concat(records);
}

/** The marker of a stand-in record made by this process, or undefined for a real message. */
export function undecodableBatchOf(message: { headers?: IHeaders }): UndecodableBatch | undefined {
  const header = message.headers?.[UNDECODABLE_BATCH_HEADER];
  if (!Buffer.isBuffer(header)) return undefined;
  try {
    const { token, ...marker } = JSON.parse(header.toString()) as UndecodableBatch & { token?: string };
    return token === PROCESS_TOKEN ? marker : undefined;
  } catch {
    return undefined;
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}

/** Record v2: length, attributes, timestamp delta, offset delta, key, value, headers (all varints zig-zag). */
export function encodeRecord(offsetDelta: number, value: Buffer | null, headerKey: string, headerValue: Buffer): Buffer {
  const key = Buffer.from(headerKey);
  const body = Buffer.concat([
    Buffer.from([0]),
    varInt(0),
    varInt(offsetDelta),
    varInt(-1),
    value === null ? varInt(-1) : Buffer.concat([varInt(value.length), value]),
    varInt(1),
    varInt(key.length),
    key,
    varInt(headerValue.length),
    headerValue,
  ]);
  return Buffer.concat([varInt(body.length), body]);
}

export function varInt(value: number): Buffer {
  let zigzag = value >= 0 ? value * 2 : -value * 2 - 1;
  const bytes: number[] = [];
  while (zigzag >= 0x80) {
    bytes.push((zigzag % 0x80) | 0x80);
    zigzag = Math.floor(zigzag / 0x80);
  }
  bytes.push(zigzag);
  return Buffer.from(bytes);
}

function readVarInt(data: Buffer, start: number): { value: number; next: number } | undefined {
  let zigzag = 0;
  let scale = 1;
  for (let position = start; position < data.length && position < start + 5; position += 1) {
    const byte = data[position]!;
    zigzag += (byte & 0x7f) * scale;
    if ((byte & 0x80) === 0) return { value: zigzag % 2 === 0 ? zigzag / 2 : -(zigzag + 1) / 2, next: position + 1 };
    scale *= 0x80;
  }
  return undefined;
}
