import { createRequire } from 'node:module';

/**
 * kafkajs 2.2.4 decodes every record of a fetched batch through a Decoder object of its own, reads its
 * timestamp delta as a 64-bit Long built byte by byte, and works out each offset and timestamp by
 * parsing the batch's base offset and first timestamp from text into a BigInt again: several objects
 * and two BigInt parses per record, a good part of the worker's CPU per event. This module installs a
 * decoder of record batches (v2, magic 2) that reads the records straight from the bytes, with number
 * arithmetic while offsets and timestamps are safe integers, and gives kafkajs the very objects its own
 * decoder gives (the same fields, views of the same bytes): its fetch, aborted-transaction and
 * control-record filtering, and our codecs' stand-ins (undecodable-batch.ts), work on them unchanged.
 *
 * kafkajs has no option for it: the hook is its one record batch decoder module
 * (protocol/recordBatch/v0/decoder.js), replaced in the module cache when this module is imported,
 * before its only user (protocol/requests/fetch/v4/decodeMessages.js, shared by every fetch version)
 * is loaded. The hook checks kafkajs's version and decodes a small batch through decodeMessages: when
 * this kafkajs loads its modules otherwise, the import (the worker's start) fails instead of decoding
 * with other code than checked.
 */
const kafkajsModule = createRequire(import.meta.url);

/** The kafkajs release whose record batch decoder this one stands for (checked at start). */
const KAFKAJS_VERSION = '2.2.4';
const BATCH_DECODER = 'kafkajs/src/protocol/recordBatch/v0/decoder.js';
const DECODE_MESSAGES = 'kafkajs/src/protocol/requests/fetch/v4/decodeMessages.js';

interface KafkajsDecoder {
  buffer: Buffer;
  offset: number;
  readInt64(): bigint;
  readInt32(): number;
  forward(bytes: number): void;
}
interface KafkajsCodec {
  decompress(data: Buffer): Promise<Buffer>;
}

const { KafkaJSPartialMessageError, KafkaJSInvalidLongError } = kafkajsModule('kafkajs/src/errors.js') as {
  KafkaJSPartialMessageError: new (message: string) => Error;
  KafkaJSInvalidLongError: new (message: string) => Error;
};
const { lookupCodecByAttributes } = kafkajsModule('kafkajs/src/protocol/message/compression/index.js') as {
  lookupCodecByAttributes(attributes: number): KafkajsCodec | null;
};

const TIMESTAMP_TYPE_FLAG = 0x8;
const TRANSACTIONAL_FLAG = 0x10;
const CONTROL_FLAG = 0x20;
/** kafkajs's TimestampTypes. */
const CREATE_TIME = 0;
const LOG_APPEND_TIME = 1;
/** Bytes of a batch after its length field, up to its records (epoch, magic, crc ... record count). */
const RECORDS_AT = 49;

/** The batch fields kafkajs gives every record as `batchContext` (with the magic byte) and the batch itself. */
interface BatchContext {
  firstOffset: string;
  firstTimestamp: string;
  partitionLeaderEpoch: number;
  inTransaction: boolean;
  isControlBatch: boolean;
  lastOffsetDelta: number;
  producerId: string;
  producerEpoch: number;
  firstSequence: number;
  maxTimestamp: string;
  timestampType: number;
}

export interface DecodedRecord {
  magicByte: number;
  attributes: number;
  timestamp: string;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, Buffer | null | (Buffer | null)[]>;
  isControlRecord: boolean;
  batchContext: BatchContext & { magicByte: number };
}

/**
 * What the hook keeps for the whole process: kafkajs's own decoder, and how many batches decoders of
 * this module decoded (the check sees it rise). Process-wide, not per module: a test runner may load
 * this module again in a new module graph while kafkajs's CommonJS modules, hook included, stay loaded.
 */
const installed = ((globalThis as Record<symbol, unknown>)[Symbol.for('logplatform.ingest.record-batches')] ??= {
  kafkajs: undefined,
  batches: 0,
}) as { kafkajs: typeof decodeRecordBatch | undefined; batches: number };
/** Marks this module's decoder, whichever copy of the module it comes from. */
const RECORD_BATCHES_DECODER = Symbol.for('logplatform.ingest.record-batches.decoder');

/** One record batch from the fetch response, as kafkajs's recordBatch/v0/decoder.js decodes it. */
export async function decodeRecordBatch(fetchDecoder: KafkajsDecoder): Promise<BatchContext & { records: DecodedRecord[] }> {
  installed.batches += 1;
  const firstOffset = fetchDecoder.readInt64().toString();
  const length = fetchDecoder.readInt32();
  const start = fetchDecoder.offset;
  // a view of the response, as kafkajs slices it: the codecs find the batch header just before the records
  const batch = fetchDecoder.buffer.subarray(start, start + length);
  fetchDecoder.forward(length);
  if (batch.length < length) {
    throw new KafkaJSPartialMessageError(`Tried to decode a partial record batch: remainingBytes(${batch.length}) < recordBatchLength(${length})`);
  }
  const attributes = batch.readInt16BE(9);
  // the fields in kafkajs's order
  const context: BatchContext = {
    firstOffset,
    firstTimestamp: batch.readBigInt64BE(15).toString(),
    partitionLeaderEpoch: batch.readInt32BE(0),
    inTransaction: (attributes & TRANSACTIONAL_FLAG) > 0,
    isControlBatch: (attributes & CONTROL_FLAG) > 0,
    lastOffsetDelta: batch.readInt32BE(11),
    producerId: batch.readBigInt64BE(31).toString(),
    producerEpoch: batch.readInt16BE(39),
    firstSequence: batch.readInt32BE(41),
    maxTimestamp: batch.readBigInt64BE(23).toString(),
    timestampType: (attributes & TIMESTAMP_TYPE_FLAG) > 0 ? LOG_APPEND_TIME : CREATE_TIME,
  };
  const batchContext = { ...context, magicByte: batch.readInt8(4) };
  const codec = lookupCodecByAttributes(attributes);
  const count = batch.readInt32BE(RECORDS_AT - 4);
  let records: DecodedRecord[];
  if (!codec) {
    records = count === -1 ? [] : decodeRecords(batch, RECORDS_AT, count, batchContext);
  } else if (count <= 0) {
    records = [];
  } else {
    records = decodeRecords(await codec.decompress(batch.subarray(RECORDS_AT)), 0, count, batchContext);
  }
  return { ...context, records };
}

/** `count` records from `at`, each as kafkajs's record/v0/decoder.js gives it. */
function decodeRecords(bytes: Buffer, at: number, count: number, context: BatchContext & { magicByte: number }): DecodedRecord[] {
  const records = new Array<DecodedRecord>(count);
  const cursor = { at };
  const offsets = new Base(context.firstOffset);
  const timestamps = context.timestampType === LOG_APPEND_TIME ? undefined : new Base(context.firstTimestamp);
  for (let index = 0; index < count; index += 1) {
    const length = readVarInt(bytes, cursor);
    // the next record starts after this one's length, whatever this one holds
    const end = cursor.at + length;
    const attributes = bytes.readInt8(cursor.at);
    cursor.at += 1;
    const timestampDelta = readVarLong(bytes, cursor);
    const offsetDelta = readVarInt(bytes, cursor);
    const key = readBytes(bytes, cursor);
    const value = readBytes(bytes, cursor);
    const headers = readHeaders(bytes, cursor);
    records[index] = {
      magicByte: context.magicByte,
      attributes,
      timestamp: timestamps === undefined ? context.maxTimestamp : timestamps.plus(timestampDelta),
      offset: offsets.plus(offsetDelta),
      key,
      value,
      headers,
      isControlRecord: context.isControlBatch,
      batchContext: context,
    };
    cursor.at = end;
  }
  return records;
}

/** A batch's base offset or first timestamp, to which each record adds its delta: in numbers while that is exact. */
class Base {
  private readonly number: number;
  constructor(private readonly text: string) {
    this.number = Number(text);
  }

  plus(delta: number | bigint): string {
    if (typeof delta === 'number') {
      const sum = this.number + delta;
      if (Number.isSafeInteger(this.number) && Number.isSafeInteger(sum)) return String(sum);
    }
    return (BigInt(this.text) + BigInt(delta)).toString();
  }
}

/** A zig-zag varint as kafkajs reads it (the same 32-bit arithmetic). */
function readVarInt(bytes: Buffer, cursor: { at: number }): number {
  let byte: number;
  let result = 0;
  let shift = 0;
  do {
    byte = bytes[cursor.at++]!;
    result += (byte & 0x7f) << shift;
    shift += 7;
  } while (byte >= 0x80);
  return (result >>> 1) ^ -(result & 1);
}

/** A zig-zag varlong: a number while it is a safe integer (seven bytes at most), else a BigInt of 64 bits as kafkajs's Long. */
function readVarLong(bytes: Buffer, cursor: { at: number }): number | bigint {
  let value = 0;
  let scale = 1;
  const start = cursor.at;
  for (let read = 0; read < 7; read += 1) {
    const byte = bytes[cursor.at++]!;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return value % 2 === 0 ? value / 2 : -(value + 1) / 2;
    scale *= 0x80;
  }
  cursor.at = start;
  let long = 0n;
  for (let shift = 0n; ; shift += 7n) {
    if (shift > 63n) throw new KafkaJSInvalidLongError('Invalid Long, must contain 9 bytes or less');
    const byte = bytes[cursor.at++]!;
    long = BigInt.asUintN(64, long + (BigInt(byte & 0x7f) << shift));
    if (byte < 0x80) break;
  }
  return BigInt.asIntN(64, (long >> 1n) ^ -(long & 1n));
}

function readBytes(bytes: Buffer, cursor: { at: number }): Buffer | null {
  const length = readVarInt(bytes, cursor);
  if (length === -1) return null;
  const start = cursor.at;
  cursor.at += length;
  return bytes.subarray(start, cursor.at);
}

/** Headers as kafkajs gathers them: a name given twice or more holds an array of its values, in order. */
function readHeaders(bytes: Buffer, cursor: { at: number }): DecodedRecord['headers'] {
  const headers: DecodedRecord['headers'] = {};
  const count = readVarInt(bytes, cursor);
  for (let index = 0; index < count; index += 1) {
    const keyLength = readVarInt(bytes, cursor);
    let name = 'null';
    if (keyLength !== -1) {
      name = bytes.toString('utf8', cursor.at, cursor.at + keyLength);
      cursor.at += keyLength;
    }
    const value = readBytes(bytes, cursor);
    const previous = Object.hasOwn(headers, name) ? headers[name] : undefined;
    const next = previous === undefined ? value : Array.isArray(previous) ? [...previous, value] : [previous, value];
    // an own property even for `__proto__`, as kafkajs's object spread makes it
    Object.defineProperty(headers, name, { value: next, enumerable: true, writable: true, configurable: true });
  }
  return headers;
}

/**
 * Puts decodeRecordBatch in place of kafkajs's record batch decoder; throws when this kafkajs is not
 * the one it was written for, or its fetch decoding does not go through the replaced module.
 */
export function installRecordBatchDecoder(): void {
  const { version } = kafkajsModule('kafkajs/package.json') as { version: string };
  if (version !== KAFKAJS_VERSION) {
    throw new Error(
      `ingest/record-batches.ts decodes record batches for kafkajs ${KAFKAJS_VERSION}, and kafkajs ${version} is installed: check its decoder again`,
    );
  }
  const decoderPath = kafkajsModule.resolve(BATCH_DECODER);
  const current = kafkajsModule(decoderPath) as typeof decodeRecordBatch & { [RECORD_BATCHES_DECODER]?: true };
  const cached = kafkajsModule.cache[decoderPath];
  if (cached === undefined) throw new Error(`kafkajs's record batch decoder (${BATCH_DECODER}) is not in the module cache`);
  // another copy of this module installed already: its decoder (the same code) stays in place
  if (current[RECORD_BATCHES_DECODER] !== true) {
    installed.kafkajs = current;
    Object.defineProperty(decodeRecordBatch, RECORD_BATCHES_DECODER, { value: true });
    cached.exports = decodeRecordBatch;
  }
  // decodeMessages loaded before the swap holds kafkajs's own decoder; an uncompressed batch is decoded before its first await
  const decodeMessages = kafkajsModule(DECODE_MESSAGES) as (decoder: unknown) => Promise<unknown>;
  const Decoder = kafkajsModule('kafkajs/src/protocol/decoder.js') as new (buffer: Buffer) => unknown;
  const before = installed.batches;
  void decodeMessages(new Decoder(sampleMessageSet()));
  if (installed.batches !== before + 1) {
    throw new Error(`kafkajs's fetch decoding (${DECODE_MESSAGES}) does not use ingest/record-batches.ts: was it loaded before the hook?`);
  }
}

/** kafkajs's own record batch decoder, which this module replaces: the tests compare the two. */
export function kafkajsRecordBatchDecoder(): typeof decodeRecordBatch {
  if (installed.kafkajs === undefined) throw new Error('the record batch decoder is not installed');
  return installed.kafkajs;
}

/** A fetch's message set of one uncompressed v2 batch holding one record, value `check`, at offset 7. */
function sampleMessageSet(): Buffer {
  const value = Buffer.from('check');
  // length, attributes 0, timestamp delta 0, offset delta 0, key null (-1), value, no headers
  const record = Buffer.from([(6 + value.length) * 2, 0, 0, 0, 1, value.length * 2, ...value, 0]);
  const batch = Buffer.alloc(61 + record.length);
  batch.writeBigInt64BE(7n, 0);
  batch.writeInt32BE(RECORDS_AT + record.length, 8);
  batch.writeInt8(2, 16);
  batch.writeBigInt64BE(-1n, 43);
  batch.writeInt16BE(-1, 51);
  batch.writeInt32BE(-1, 53);
  batch.writeInt32BE(1, 57);
  record.copy(batch, 61);
  const set = Buffer.alloc(4 + batch.length);
  set.writeInt32BE(batch.length, 0);
  batch.copy(set, 4);
  return set;
}

installRecordBatchDecoder();
