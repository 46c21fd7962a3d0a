import { createRequire } from 'node:module';
import { gzipSync } from 'node:zlib';
import { compressFrameSync } from 'lz4-napi';
import snappy from 'snappy';
import { describe, expect, it } from 'vitest';
import { KAFKA_CODECS, kafkaCodec, snappyCompress, snappyDecompress } from '../../ingest/codecs.ts';
import { zstdDecompress } from '../../ingest/zstd.ts';
import { UNDECODABLE_BATCH_HEADER, recordsProblem, undecodableBatchOf, varInt } from '../../ingest/undecodable-batch.ts';

// kafkajs's own batch decoder, the code that calls our decompress while it parses a fetch response
const require = createRequire(import.meta.url);
const RecordBatchDecoder = require('kafkajs/src/protocol/recordBatch/v0/decoder') as (decoder: unknown) => Promise<{ records: DecodedRecord[] }>;
const Decoder = require('kafkajs/src/protocol/decoder') as new (buffer: Buffer) => unknown;
const encodeRecord = require('kafkajs/src/protocol/recordBatch/record/v0') as (record: { offsetDelta: number; value: Buffer; key?: Buffer | null }) => {
  buffer: Buffer;
};

interface DecodedRecord {
  offset: string;
  value: Buffer | null;
  headers: Record<string, Buffer>;
}

const payload = Buffer.from(JSON.stringify({ msg: 'codec test', padding: 'abc'.repeat(30_000) }));

/** A v2 record batch as a broker sends it in a fetch response (CRC left 0: kafkajs does not check it). */
function recordBatch(options: { firstOffset: bigint; codecId: number; count: number; lastOffsetDelta: number; records: Buffer }): Buffer {
  const header = Buffer.alloc(61);
  header.writeBigInt64BE(options.firstOffset, 0);
  header.writeInt32BE(49 + options.records.length, 8);
  header.writeInt8(2, 16);
  header.writeInt16BE(options.codecId, 21);
  header.writeInt32BE(options.lastOffsetDelta, 23);
  header.writeBigInt64BE(1_700_000_000_000n, 27);
  header.writeBigInt64BE(1_700_000_000_000n, 35);
  header.writeBigInt64BE(-1n, 43);
  header.writeInt32BE(options.count, 57);
  return Buffer.concat([header, options.records]);
}

const recordsOf = (values: string[]) => Buffer.concat(values.map((value, offsetDelta) => encodeRecord({ offsetDelta, value: Buffer.from(value) }).buffer));

async function decodeBatch(batch: Buffer): Promise<DecodedRecord[]> {
  // a fetch response holds more than the batch; the decoder only ever sees views of it
  const response = Buffer.concat([Buffer.alloc(40, 7), batch]);
  const decoder = new Decoder(response) as { forward(bytes: number): void };
  decoder.forward(40);
  return (await RecordBatchDecoder(decoder)).records;
}

describe('Kafka codecs', () => {
  it('reads raw snappy (librdkafka) and xerial-framed snappy (Java), and writes xerial', () => {
    expect(snappyDecompress(snappy.compressSync(payload))).toEqual(payload);
    const framed = snappyCompress(payload);
    expect(framed.subarray(0, 8)).toEqual(Buffer.from('82534e4150505900', 'hex'));
    expect(framed.readInt32BE(8)).toBe(1);
    // 90 kB in 32 KiB blocks: three length-prefixed blocks
    let blocks = 0;
    for (let position = 16; position < framed.length; position += 4 + framed.readUInt32BE(position)) blocks += 1;
    expect(blocks).toBe(3);
    expect(snappyDecompress(framed)).toEqual(payload);
    expect(() => snappyDecompress(framed.subarray(0, framed.length - 10))).toThrow(/runs past the end/);
  });

  it('reads LZ4 frames and zstd frames (several frames too), and refuses to write zstd with a clear message', async () => {
    expect(await KAFKA_CODECS.lz4.decompress(compressFrameSync(payload))).toEqual(payload);
    const zstdFrames = Buffer.from(
      '28b52ffd0468ed0000b07b226d7367223a227a7374642066697874757265227d01004a733601a67c2f45' + '28b52ffd04586100007365636f6e64206672616d65176407b6',
      'hex',
    );
    expect((await zstdDecompress(zstdFrames)).toString()).toBe(`${'{"msg":"zstd fixture"}'.repeat(3)}second frame`);
    await expect(kafkaCodec('zstd').compress({ buffer: payload })).rejects.toThrow(/only decompresses zstd/);
    expect(await kafkaCodec('gzip').decompress(gzipSync(payload))).toEqual(payload);
  });

  it('lets kafkajs decode a compressed batch through our codecs', async () => {
    const records = recordsOf(['a', 'b', 'c']);
    const decoded = await decodeBatch(recordBatch({ firstOffset: 100n, codecId: 2, count: 3, lastOffsetDelta: 2, records: snappyCompress(records) }));
    expect(decoded.map((record) => [record.offset, record.value?.toString()])).toEqual([
      ['100', 'a'],
      ['101', 'b'],
      ['102', 'c'],
    ]);
    expect(decoded.map((record) => undecodableBatchOf(record))).toEqual([undefined, undefined, undefined]);
  });

  it.each([
    ['a corrupt snappy batch', 2, Buffer.from('not snappy at all, not at all')],
    ['an LZ4 frame with a wrong content checksum', 3, corruptChecksum(compressFrameSync(recordsOf(['a', 'b', 'c']), { contentChecksum: true }))],
    ['a gzip batch that decompresses to something else than its records', 1, gzipSync(Buffer.from('three records? no'))],
    ['codec id 5, which Kafka never assigned', 5, Buffer.from('whatever')],
  ])('turns %s into stand-ins covering its offsets, the first carrying the stored batch', async (_, codecId, compressed) => {
    const batch = recordBatch({ firstOffset: 500n, codecId, count: 3, lastOffsetDelta: 2, records: compressed });
    const decoded = await decodeBatch(batch);
    expect(decoded.map((record) => record.offset)).toEqual(['500', '501', '502']);
    const markers = decoded.map((record) => undecodableBatchOf(record));
    expect(markers[0]).toMatchObject({ firstOffset: '500', lastOffset: '502', records: 3 });
    expect(markers[0]!.detail.length).toBeGreaterThan(5);
    expect(markers.every((marker) => marker?.firstOffset === '500')).toBe(true);
    expect(decoded[0]!.value).toEqual(batch);
    expect(decoded.slice(1).map((record) => record.value)).toEqual([null, null]);
  });

  it('covers a compacted batch up to its last offset delta', async () => {
    const decoded = await decodeBatch(recordBatch({ firstOffset: 10n, codecId: 4, count: 2, lastOffsetDelta: 9, records: Buffer.from('not zstd') }));
    expect(decoded.map((record) => record.offset)).toEqual(['10', '19']);
  });

  it('ignores a marker header a producer forged', () => {
    expect(undecodableBatchOf({ headers: { [UNDECODABLE_BATCH_HEADER]: Buffer.from('{"firstOffset":"0","token":"guess"}') } })).toBeUndefined();
  });

  it('checks decompressed bytes hold exactly the batch records', () => {
    const records = recordsOf(['x', 'y']);
    expect(recordsProblem(records, 2)).toBeUndefined();
    expect(recordsProblem(records, 3)).toMatch(/record 2/);
    expect(recordsProblem(Buffer.concat([records, Buffer.from([0])]), 2)).toMatch(/1 bytes left/);
    expect(recordsProblem(Buffer.concat([varInt(1000), Buffer.alloc(10)]), 1)).toMatch(/runs past the end/);
  });
});

function corruptChecksum(frame: Buffer): Buffer {
  const copy = Buffer.from(frame);
  copy[copy.length - 1] = copy[copy.length - 1]! ^ 0xff;
  return copy;
}
