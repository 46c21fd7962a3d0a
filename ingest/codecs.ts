import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import kafkajs from 'kafkajs';
import { compressFrameSync, decompressFrameSync } from 'lz4-napi';
import snappy from 'snappy';
import { budgetedDecompress } from './deferred-batch.ts';
import { guardDecompress } from './undecodable-batch.ts';
import { zstdDecompress } from './zstd.ts';

/**
 * Kafka's compression codecs for kafkajs, which ships gzip only and throws KafkaJSNotImplemented for
 * the rest. Importing this module registers them (the worker, scripts/produce.ts and the bench do):
 *
 * - gzip: node:zlib (what kafkajs itself uses), on libuv's thread pool.
 * - snappy: `snappy` (napi-rs binding of the Rust snap crate). Reads both framings Kafka clients
 *   write: raw snappy (librdkafka) and xerial's block framing (the Java client); writes xerial,
 *   which every client reads.
 * - lz4: `lz4-napi` (napi-rs binding of lz4_flex), LZ4 frame format as Kafka (magic v1+) uses it.
 * - zstd: the reference decoder compiled to WebAssembly (`zstddec`, zstd.ts): nothing native to
 *   build or download. It cannot compress, and nothing here needs to (the worker never produces zstd).
 *
 * Every decompress goes through guardDecompress(), so a batch that cannot be decoded, and the
 * unassigned codec ids 5-7, become dead letters instead of a failed fetch (undecodable-batch.ts),
 * and through the worker's decompression budget (decompression-budget.ts, deferred-batch.ts).
 */

export type CodecName = 'gzip' | 'snappy' | 'lz4' | 'zstd';

// kafkajs is CommonJS and its codec table is not a statically detectable named export
const { CompressionCodecs, CompressionTypes } = kafkajs;
const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** xerial snappy-java's stream header: magic, then format version 1 and minimum compatible version 1. */
const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER_BYTES = 16;
/** snappy-java's default block size, so our blocks look like the Java client's. */
const XERIAL_BLOCK_BYTES = 32 * 1024;

export function isXerialFramed(data: Buffer): boolean {
  return data.length >= XERIAL_HEADER_BYTES && data.subarray(0, XERIAL_MAGIC.length).equals(XERIAL_MAGIC);
}

/** Raw snappy (librdkafka) or xerial framing (Java): the header, then blocks each prefixed with a 4-byte big-endian length. */
export function snappyDecompress(data: Buffer): Buffer {
  if (!isXerialFramed(data)) return asBuffer(snappy.uncompressSync(data));
  const blocks: Buffer[] = [];
  let position = XERIAL_HEADER_BYTES;
  while (position < data.length) {
    if (position + 4 > data.length) throw new Error(`xerial snappy: truncated block length at byte ${position}`);
    const length = data.readUInt32BE(position);
    position += 4;
    if (position + length > data.length) throw new Error(`xerial snappy: block of ${length} bytes at byte ${position} runs past the end (${data.length})`);
    blocks.push(asBuffer(snappy.uncompressSync(data.subarray(position, position + length))));
    position += length;
  }
  return Buffer.concat(blocks);
}

export function snappyCompress(data: Buffer): Buffer {
  const header = Buffer.alloc(XERIAL_HEADER_BYTES);
  XERIAL_MAGIC.copy(header);
  header.writeInt32BE(1, 8);
  header.writeInt32BE(1, 12);
  const parts: Buffer[] = [header];
  for (let start = 0; start < data.length; start += XERIAL_BLOCK_BYTES) {
    const block = snappy.compressSync(data.subarray(start, start + XERIAL_BLOCK_BYTES));
    const length = Buffer.alloc(4);
    length.writeUInt32BE(block.length);
    parts.push(length, block);
  }
  return Buffer.concat(parts);
}

export function lz4Decompress(data: Buffer): Buffer {
  return decompressFrameSync(data);
}

export function lz4Compress(data: Buffer): Buffer {
  return compressFrameSync(data);
}

function asBuffer(value: string | Buffer): Buffer {
  return typeof value === 'string' ? Buffer.from(value) : value;
}

/** kafkajs's codec interface: `compress` receives its Encoder, `decompress` a Buffer. */
export interface KafkaCodec {
  compress(encoder: { buffer: Buffer }): Promise<Buffer>;
  decompress(data: Buffer): Promise<Buffer>;
}

export const KAFKA_CODECS: Record<
  CodecName,
  { id: number; compress(data: Buffer): Promise<Buffer> | Buffer; decompress(data: Buffer): Promise<Buffer> | Buffer }
> = {
  gzip: { id: CompressionTypes.GZIP, compress: (data) => gzipAsync(data), decompress: (data) => gunzipAsync(data) },
  snappy: { id: CompressionTypes.Snappy, compress: snappyCompress, decompress: snappyDecompress },
  lz4: { id: CompressionTypes.LZ4, compress: lz4Compress, decompress: lz4Decompress },
  zstd: {
    id: CompressionTypes.ZSTD,
    compress: () => {
      throw new Error(
        'zstd compression is not available: the worker only decompresses zstd; produce with gzip, snappy or lz4 (the worker reads zstd from other producers)',
      );
    },
    decompress: zstdDecompress,
  },
};

/** The codec kafkajs calls: our implementation, with decompress guarded against undecodable batches. */
export function kafkaCodec(name: CodecName): KafkaCodec {
  const codec = KAFKA_CODECS[name];
  return {
    compress: async (encoder) => codec.compress(encoder.buffer),
    decompress: budgetedDecompress(
      name,
      guardDecompress(name, async (data) => codec.decompress(data)),
    ),
  };
}

/** Codec ids Kafka has not assigned (the attribute has three bits, 0-4 are taken). */
const UNASSIGNED_CODEC_IDS = [5, 6, 7];

function register(): void {
  const codecs = CompressionCodecs as unknown as Record<number, () => KafkaCodec>;
  for (const name of Object.keys(KAFKA_CODECS) as CodecName[]) {
    const codec = kafkaCodec(name);
    codecs[KAFKA_CODECS[name].id] = () => codec;
  }
  for (const id of UNASSIGNED_CODEC_IDS) {
    const unknown: KafkaCodec = {
      compress: async () => {
        throw new Error(`compression codec id ${id} does not exist in Kafka`);
      },
      decompress: guardDecompress(`codec ${id}`, async () => {
        throw new Error(`compression codec id ${id} is not a Kafka codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)`);
      }),
    };
    codecs[id] = () => unknown;
  }
}

register();
