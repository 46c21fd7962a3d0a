import { createRequire } from 'node:module';
import { CompressionTypes } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import '../../ingest/codecs.ts';
import { DecompressionBudget, useDecompressionBudget } from '../../ingest/decompression-budget.ts';
import { MESSAGE_HEAP_BYTES } from '../../ingest/heap-budget.ts';
import { DEFERRED_BATCH_HEADER, deferredStandIns, isDeferredStandIn } from '../../ingest/deferred-batch.ts';
import { encodeRecord, PROCESS_TOKEN } from '../../ingest/undecodable-batch.ts';

// kafkajs's own record batch encoder and decoder: the codecs are called exactly as in a fetch
const require = createRequire(import.meta.url);
const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0');
const Record = require('kafkajs/src/protocol/recordBatch/record/v0');
const decodeRecordBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder');
const Decoder = require('kafkajs/src/protocol/decoder');

const RECORDS = 100;
/** A compressible event of about 1 KB, as repetitive logs are. */
const value = (offset: number) => Buffer.from(JSON.stringify({ id: `e${offset}`, event_message: 'GET /rest/v1/todos 200 '.repeat(40) }));

/** Three gzip batches of RECORDS records back to back, as a fetch response holds them. */
async function fetchedBatches(): Promise<Buffer> {
  const batches: Buffer[] = [];
  for (let batch = 0; batch < 3; batch += 1) {
    const first = batch * RECORDS;
    const records = Array.from({ length: RECORDS }, (_, index) => Record({ offsetDelta: index, value: value(first + index), key: null }));
    const encoded = await RecordBatch({
      compression: CompressionTypes.GZIP,
      firstOffset: { toString: () => String(first) },
      records,
      lastOffsetDelta: RECORDS - 1,
    });
    batches.push(encoded.buffer);
  }
  return Buffer.concat(batches);
}

interface Decoded {
  offset: string;
  value: Buffer | null;
  headers: Record<string, Buffer>;
}

async function decodeAll(fetched: Buffer): Promise<Decoded[]> {
  const decoder = new Decoder(fetched);
  const messages: Decoded[] = [];
  while (decoder.canReadBytes(1)) messages.push(...(await decodeRecordBatch(decoder)).records);
  return messages;
}

describe('ingest: the decompression budget', () => {
  afterEach(() => useDecompressionBudget(undefined));

  it('decompresses every batch of a fetch while they fit', async () => {
    useDecompressionBudget(new DecompressionBudget(64 * 1024 * 1024, () => 0));
    const messages = await decodeAll(await fetchedBatches());
    expect(messages.filter(isDeferredStandIn)).toHaveLength(0);
    expect(messages.map((message) => message.value!.toString())).toEqual(Array.from({ length: 3 * RECORDS }, (_, offset) => value(offset).toString()));
  });

  it('defers the batches past the budget: their offsets come as stand-ins, without values', async () => {
    const batchBytes = RECORDS * value(0).length;
    // room for one batch and a half: the second batch would go over
    useDecompressionBudget(new DecompressionBudget(Math.floor(batchBytes * 1.5), () => 0));
    const messages = await decodeAll(await fetchedBatches());
    expect(messages.slice(0, RECORDS).every((message) => !isDeferredStandIn(message) && message.value !== null)).toBe(true);
    const deferred = messages.slice(RECORDS);
    expect(deferred.every((message) => isDeferredStandIn(message) && message.value === null)).toBe(true);
    expect(deferred.map((message) => message.offset)).toEqual(Array.from({ length: 2 * RECORDS }, (_, index) => String(RECORDS + index)));
  });

  it('counts the chunks queued for Elasticsearch, and always decompresses the first batch of a fetch', async () => {
    const budget = new DecompressionBudget(8 * 1024 * 1024, () => 8 * 1024 * 1024);
    useDecompressionBudget(budget);
    const first = await decodeAll(await fetchedBatches());
    expect(first.filter((message) => !isDeferredStandIn(message))).toHaveLength(RECORDS);
    // the fetch was handed over: the next one starts afresh, and again gets one batch
    budget.handedOver();
    const next = await decodeAll(await fetchedBatches());
    expect(next.filter((message) => !isDeferredStandIn(message))).toHaveLength(RECORDS);
  });

  it('counts each record with the heap its message object takes: a batch of tiny records is deferred by its count', async () => {
    // the bytes of all three batches fit many times over, but not three batches' worth of message objects
    const bytes = 3 * RECORDS * value(0).length;
    useDecompressionBudget(new DecompressionBudget(bytes + Math.floor(1.5 * RECORDS * MESSAGE_HEAP_BYTES), () => 0));
    const messages = await decodeAll(await fetchedBatches());
    expect(messages.filter(isDeferredStandIn)).toHaveLength(RECORDS);
    expect(messages.slice(2 * RECORDS).every(isDeferredStandIn)).toBe(true);
  });

  it('writes the stand-ins of a large batch as records encoded one by one would be', () => {
    // offset deltas past 63 and 8191 take two and three varint bytes
    const header = { baseOffset: 0n, lastOffsetDelta: 19_999, records: 20_000, codecId: 4 };
    const oneByOne = Array.from({ length: header.records }, (_, index) => encodeRecord(index, null, DEFERRED_BATCH_HEADER, Buffer.from(PROCESS_TOKEN)));
    expect(deferredStandIns(header).equals(Buffer.concat(oneByOne))).toBe(true);
  });

  it('ignores the stand-in header when a producer sends it', () => {
    expect(isDeferredStandIn({ headers: { 'logplatform-deferred-batch': Buffer.from('forged') } })).toBe(false);
  });
});
