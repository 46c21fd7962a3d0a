import { ZSTDDecoder } from 'zstddec/stream';

/**
 * zstd decompression for Kafka record batches: the reference decoder (zstd 1.5.7, WebAssembly, from
 * `zstddec`), one call per batch into a buffer of the batch's bound, copied out at its exact size.
 *
 * Producers stream their batches into zstd (librdkafka, the Java client), so a frame does not say how
 * large its content is, only its window (2 MB at librdkafka's default level). The JavaScript decoder
 * used before (fzstd) then allocates a window of that size for every batch, however small, a buffer
 * per 128 KiB block and a last one to join them, and moves the whole window along after every block:
 * several times the batch's size in short-lived native memory, which glibc kept as the worker's
 * largest share of RSS above an uncompressed drain's. Here the bound comes from the frame's own block
 * headers (zstdDecompressedBound), the decoder writes into it inside its linear memory (which grows to
 * the largest batch seen and is kept), and the only allocation per batch is the exact-size result.
 */

const decoder = new ZSTDDecoder();
const ready = decoder.init();
// awaited at the first batch, which then fails with the reason; not an unhandled rejection at import
ready.catch(() => undefined);

/**
 * A batch bound past this is refused (an undecodable batch, dead-lettered with its bytes) before anything
 * is decoded: the decoder's memory grows to the largest batch and stays there, and a batch of this size is
 * twice the worker's whole memory budget. Producers' batches fill their blocks, so their bound is their
 * size plus one block.
 */
export const MAX_BATCH_BYTES = 64 * 1024 * 1024;
/** A block's decompressed bytes at most (RFC 8878, Block_Maximum_Size: the smaller of the window and this). */
const BLOCK_MAXIMUM_BYTES = 128 * 1024;
const FRAME_MAGIC = 0xfd2fb528;
/** Skippable frames: magic 0x184D2A50 to 0x184D2A5F, then their length, then that many bytes. */
const SKIPPABLE_MAGIC_HIGH = 0x184d2a5;

export class ZstdFrameError extends Error {
  override readonly name = 'ZstdFrameError';
}

/**
 * The decompressed size of `data`, one or more zstd frames, at most: raw and RLE blocks count their own
 * size, a compressed block the block maximum. Walks only the frame and block headers. Throws
 * ZstdFrameError where `data` is not whole zstd frames.
 */
export function zstdDecompressedBound(data: Uint8Array): number {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let position = 0;
  let bound = 0;
  const need = (bytes: number, what: string) => {
    if (position + bytes > data.length) throw new ZstdFrameError(`zstd: ${what} at byte ${position} runs past the end (${data.length} bytes)`);
  };
  while (position < data.length) {
    need(4, 'frame magic');
    const magic = view.getUint32(position, true);
    if (magic >>> 4 === SKIPPABLE_MAGIC_HIGH) {
      need(8, 'skippable frame header');
      position += 8 + view.getUint32(position + 4, true);
      if (position > data.length) throw new ZstdFrameError(`zstd: a skippable frame runs past the end (${data.length} bytes)`);
      continue;
    }
    if (magic !== FRAME_MAGIC) throw new ZstdFrameError(`zstd: no frame magic at byte ${position}`);
    need(5, 'frame header');
    const descriptor = data[position + 4]!;
    if (descriptor & 0x08) throw new ZstdFrameError(`zstd: reserved bit set in the frame header at byte ${position}`);
    const singleSegment = (descriptor >> 5) & 1;
    const contentSizeFlag = descriptor >> 6;
    const dictionaryBytes = [0, 1, 2, 4][descriptor & 3]!;
    const contentSizeBytes = contentSizeFlag === 0 ? singleSegment : 1 << contentSizeFlag;
    position += 5 + (singleSegment ? 0 : 1) + dictionaryBytes + contentSizeBytes;
    for (let last = false; !last; ) {
      need(3, 'block header');
      const header = data[position]! | (data[position + 1]! << 8) | (data[position + 2]! << 16);
      last = (header & 1) === 1;
      const type = (header >> 1) & 3;
      const size = header >>> 3;
      position += 3;
      if (type === 0) {
        need(size, 'raw block');
        bound += size;
        position += size;
      } else if (type === 1) {
        need(1, 'RLE block');
        bound += size;
        position += 1;
      } else if (type === 2) {
        need(size, 'compressed block');
        bound += BLOCK_MAXIMUM_BYTES;
        position += size;
      } else {
        throw new ZstdFrameError(`zstd: reserved block type at byte ${position - 3}`);
      }
    }
    if (descriptor & 0x04) {
      need(4, 'content checksum');
      position += 4;
    }
  }
  return bound;
}

/** Decompresses `data` (whole zstd frames) into a buffer of exactly the decompressed size. */
export async function zstdDecompress(data: Buffer): Promise<Buffer> {
  const bound = zstdDecompressedBound(data);
  if (bound > MAX_BATCH_BYTES)
    throw new ZstdFrameError(`zstd: the batch's blocks may hold up to ${bound} bytes, more than the ${MAX_BATCH_BYTES} a batch may decompress to`);
  await ready;
  // zstddec returns what the decoder wrote, and nothing where it failed (a corrupt block, a wrong checksum)
  const out = decoder.decode(data, Math.max(1, bound));
  if (out.length === 0 && bound > 0) throw new ZstdFrameError(`zstd: the ${data.length} compressed bytes could not be decoded`);
  return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
}
