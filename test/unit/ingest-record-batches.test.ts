import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import '../../ingest/codecs.ts';
import { decodeRecordBatch, kafkajsRecordBatchDecoder } from '../../ingest/record-batches.ts';
import { UNDECODABLE_BATCH_HEADER } from '../../ingest/undecodable-batch.ts';

const require = createRequire(import.meta.url);
const Decoder = require('kafkajs/src/protocol/decoder') as new (buffer: Buffer) => { offset: number; buffer: Buffer };
const decodeMessages = require('kafkajs/src/protocol/requests/fetch/v4/decodeMessages') as (decoder: unknown) => Promise<unknown[]>;
const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0') as { RecordBatch: (options: object) => Promise<{ buffer: Buffer }> };
const encodeRecord = require('kafkajs/src/protocol/recordBatch/record/v0') as (record: object) => unknown;
const { Types } = require('kafkajs/src/protocol/message/compression') as { Types: Record<'None' | 'GZIP' | 'Snappy' | 'LZ4' | 'ZSTD', number> };
const CompressionCodecs = require('kafkajs').CompressionCodecs as Record<number, () => { compress(encoder: { buffer: Buffer }): Promise<Buffer> }>;

interface RecordInput {
  offsetDelta: number;
  timestampDelta?: number;
  key?: Buffer | null;
  value: Buffer | null;
  headers?: Record<string, Buffer | Buffer[]>;
}

/** Records of every kind the decoder meets: keys or none, no value, headers (a name given three times), timestamps going back. */
const RECORDS: RecordInput[] = [
  { offsetDelta: 0, value: Buffer.from('{"event_message":"first"}') },
  { offsetDelta: 1, timestampDelta: 1500, key: Buffer.from('key-1'), value: Buffer.from('second é') },
  { offsetDelta: 2, timestampDelta: -20, key: null, value: null },
  { offsetDelta: 3, timestampDelta: 2 ** 40, value: Buffer.from('x'.repeat(300)), headers: { id: Buffer.from('header-id') } },
  { offsetDelta: 5, value: Buffer.alloc(0), headers: { a: [Buffer.from('1'), Buffer.from('2'), Buffer.from('3')], b: Buffer.from('') } },
  { offsetDelta: 6, key: Buffer.alloc(0), value: Buffer.from('\u0000binary'), headers: { __proto__: Buffer.from('p') } as Record<string, Buffer> },
];

/** Codecs whose batches kafkajs writes itself; zstd's are written by the zstd command line (our zstd codec only decompresses). */
async function batchOf(
  codec: string,
  options: { firstOffset?: bigint; firstTimestamp?: bigint; records?: RecordInput[]; transactional?: boolean },
): Promise<Buffer> {
  const compression = { none: Types.None, gzip: Types.GZIP, snappy: Types.Snappy, lz4: Types.LZ4, zstd: Types.ZSTD }[codec]!;
  const table = CompressionCodecs;
  const original = table[Types.ZSTD];
  if (codec === 'zstd')
    table[Types.ZSTD] = () => ({ compress: async (encoder: { buffer: Buffer }) => execFileSync('zstd', ['-q', '-c'], { input: encoder.buffer }) });
  try {
    const records = options.records ?? RECORDS;
    const encoded = await RecordBatch({
      compression,
      firstOffset: { toString: () => String(options.firstOffset ?? 1000n) },
      firstTimestamp: options.firstTimestamp ?? 1_763_632_800_000n,
      maxTimestamp: 1_763_632_899_999n,
      lastOffsetDelta: records[records.length - 1]!.offsetDelta,
      transactional: options.transactional ?? false,
      producerId: 4242n,
      producerEpoch: 3,
      records: records.map((record) => encodeRecord(record)),
    });
    return encoded.buffer;
  } finally {
    table[Types.ZSTD] = original!;
  }
}

/** Both decoders on the same bytes, each from a fresh decoder over its own copy of the fetch response. */
async function bothDecoders(bytes: Buffer): Promise<{ ours: unknown; theirs: unknown; oursAt: number; theirsAt: number }> {
  const oursDecoder = new Decoder(Buffer.from(bytes));
  const theirsDecoder = new Decoder(Buffer.from(bytes));
  const ours = await decodeRecordBatch(oursDecoder as never);
  const theirs = await kafkajsRecordBatchDecoder()(theirsDecoder as never);
  return { ours, theirs, oursAt: oursDecoder.offset, theirsAt: theirsDecoder.offset };
}

/** Sets bits of a batch's attributes (kafkajs does not check the CRC). */
function withAttributes(batch: Buffer, bits: number): Buffer {
  const copy = Buffer.from(batch);
  copy.writeInt16BE(copy.readInt16BE(21) | bits, 21);
  return copy;
}

describe("the worker's record batch decoder gives what kafkajs's own gives", () => {
  it('is the decoder kafkajs fetches with', () => {
    expect(kafkajsRecordBatchDecoder()).not.toBe(decodeRecordBatch);
    expect(require('kafkajs/src/protocol/recordBatch/v0/decoder')).toBe(decodeRecordBatch);
  });

  it('stays in place when a second copy of the module is loaded in the process (a new module graph, kafkajs already loaded)', async () => {
    // importing the copy runs its start-up check, which failed here before the hook was kept process-wide
    const copyUrl = `../../ingest/record-batches.ts?copy=${Date.now()}`;
    const copy = (await import(copyUrl)) as typeof import('../../ingest/record-batches.ts');
    expect(copy.decodeRecordBatch).not.toBe(decodeRecordBatch);
    expect(copy.kafkajsRecordBatchDecoder()).toBe(kafkajsRecordBatchDecoder());
    expect(require('kafkajs/src/protocol/recordBatch/v0/decoder')).toBe(decodeRecordBatch);
  });

  for (const codec of ['none', 'gzip', 'snappy', 'lz4', 'zstd']) {
    it(`decodes ${codec} batches field for field: offsets, timestamps, keys, values, headers, batch context`, async () => {
      const { ours, theirs, oursAt, theirsAt } = await bothDecoders(await batchOf(codec, {}));
      expect(ours).toEqual(theirs);
      expect((ours as { records: unknown[] }).records).toHaveLength(RECORDS.length);
      expect(oursAt).toBe(theirsAt);
    });
  }

  it('counts offsets and timestamps past 2^53 exactly, as kafkajs does in 64 bits', async () => {
    const bytes = await batchOf('none', { firstOffset: 2n ** 53n + 5n, firstTimestamp: 2n ** 60n });
    const { ours, theirs } = await bothDecoders(bytes);
    expect(ours).toEqual(theirs);
    expect((ours as { records: { offset: string }[] }).records[1]!.offset).toBe((2n ** 53n + 6n).toString());
  });

  it('marks transactional and control batches, and log-append timestamps, as kafkajs does', async () => {
    const control = await batchOf('none', {
      transactional: true,
      records: [{ offsetDelta: 0, key: Buffer.from([0, 0, 0, 0]), value: Buffer.from([0, 0, 0, 0, 0, 0]) }],
    });
    for (const bytes of [await batchOf('gzip', { transactional: true }), withAttributes(control, 0x20), withAttributes(await batchOf('lz4', {}), 0x08)]) {
      const { ours, theirs } = await bothDecoders(bytes);
      expect(ours).toEqual(theirs);
    }
    const { ours } = await bothDecoders(withAttributes(control, 0x20));
    expect(ours).toMatchObject({ inTransaction: true, isControlBatch: true, records: [{ isControlRecord: true, key: Buffer.from([0, 0, 0, 0]) }] });
  });

  it('decodes a fetch of several batches ending in a partial one, through kafkajs decodeMessages', async () => {
    const batches = Buffer.concat([await batchOf('none', {}), await batchOf('snappy', { firstOffset: 1007n }), await batchOf('gzip', { firstOffset: 1014n })]);
    const cut = batches.subarray(0, batches.length - 10);
    const set = Buffer.concat([Buffer.alloc(4), cut]);
    set.writeInt32BE(cut.length, 0);
    const messages = (await decodeMessages(new Decoder(set))) as { offset: string }[];
    expect(messages.map((message) => message.offset)).toEqual([...[1000, 1001, 1002, 1003, 1005, 1006], ...[1007, 1008, 1009, 1010, 1012, 1013]].map(String));
  });

  it("keeps our codecs' stand-ins for a batch that cannot be decompressed", async () => {
    const bytes = await batchOf('lz4', {});
    // the compressed records begin after the 61 header bytes: spoil them
    bytes.fill(0xff, 70, 90);
    const { ours, theirs } = await bothDecoders(bytes);
    expect(ours).toEqual(theirs);
    const records = (ours as { records: { headers: Record<string, unknown> }[] }).records;
    expect(records).toHaveLength(RECORDS.length);
    expect(records.every((record) => Buffer.isBuffer(record.headers[UNDECODABLE_BATCH_HEADER]))).toBe(true);
  });
});
