import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MAX_BATCH_BYTES, ZstdFrameError, zstdDecompress, zstdDecompressedBound } from '../../ingest/zstd.ts';

/** Compressed as producers stream a batch: from standard input, so the frame does not carry its content size. */
function streamed(input: Buffer, level = 3): Buffer {
  return execFileSync('zstd', ['-q', '-c', `-${level}`], { input });
}

/** Mixed JSON lines, about `bytes` long: compressible, but not a run of one byte. */
function jsonLines(bytes: number): Buffer {
  const lines: string[] = [];
  let length = 0;
  for (let index = 0; length < bytes; index += 1) {
    const line = JSON.stringify({ event_message: `GET /api/v${index % 7}/items/${index * 7919} ${200 + (index % 5)}`, id: `e-${index}`, n: index });
    lines.push(line);
    length += line.length + 1;
  }
  return Buffer.from(`${lines.join('\n')}\n`);
}

/** The descriptor byte of the first frame: content size flag (bits 6-7) and single segment (bit 5). */
function contentSizeFlags(frame: Buffer): { contentSizeFlag: number; singleSegment: number } {
  return { contentSizeFlag: frame[4]! >> 6, singleSegment: (frame[4]! >> 5) & 1 };
}

describe('zstd decompression', () => {
  it('decodes a streamed frame of many blocks without a content size exactly, within the bound from its block headers', async () => {
    const input = jsonLines(1_500_000);
    const frame = streamed(input);
    expect(contentSizeFlags(frame)).toEqual({ contentSizeFlag: 0, singleSegment: 0 });
    const bound = zstdDecompressedBound(frame);
    expect(bound).toBeGreaterThanOrEqual(input.length);
    // one block maximum per block: 12 blocks of 128 KiB hold 1.5 MB
    expect(bound).toBeLessThanOrEqual(Math.ceil(input.length / 131072 + 1) * 131072);
    const out = await zstdDecompress(frame);
    expect(out.length).toBe(input.length);
    expect(out.equals(input)).toBe(true);
    // its own memory, not a view into the decoder's
    expect(out.buffer.byteLength).toBe(input.length);
  });

  it('decodes frames with their content size, several frames, skippable frames and raw blocks', async () => {
    const small = Buffer.from('{"msg":"one small event"}');
    const withSize = execFileSync('zstd', ['-q', '-c', '--content-size'], { input: small });
    const random = randomBytes(4096);
    // incompressible bytes are stored as raw blocks: their bound is exact
    const raw = streamed(random);
    expect(zstdDecompressedBound(raw)).toBe(random.length);
    const skippable = Buffer.concat([Buffer.from([0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0]), Buffer.from('xyz')]);
    const joined = Buffer.concat([withSize, skippable, raw, streamed(small)]);
    expect((await zstdDecompress(joined)).equals(Buffer.concat([small, random, small]))).toBe(true);
  });

  it('names what is wrong with bytes that are not whole zstd frames', async () => {
    const frame = streamed(jsonLines(300_000));
    expect(() => zstdDecompressedBound(frame.subarray(0, frame.length - 100))).toThrow(/compressed block at byte \d+ runs past the end/);
    expect(() => zstdDecompressedBound(Buffer.from('{"not":"zstd"}'))).toThrow(ZstdFrameError);
    expect(() => zstdDecompressedBound(Buffer.from('{"not":"zstd"}'))).toThrow(/no frame magic at byte 0/);
    expect(() => zstdDecompressedBound(frame.subarray(0, 3))).toThrow(/frame magic at byte 0 runs past the end/);
    // the headers hold, the content does not
    const corrupt = Buffer.from(frame);
    for (let at = 20; at < 200; at += 1) corrupt[at] = 0xff;
    await expect(zstdDecompress(corrupt)).rejects.toThrow(/could not be decoded/);
  });

  it('refuses a batch whose blocks may hold more than a batch may decompress to, before decoding it', async () => {
    // a frame of 600 one-byte compressed blocks: nothing a real producer writes, and a bound of 600 x 128 KiB
    const blocks = 600;
    const frame = Buffer.alloc(6 + blocks * 4);
    frame.writeUInt32LE(0xfd2fb528, 0);
    frame[4] = 0x00;
    // window descriptor: 1 MiB
    frame[5] = (20 - 10) << 3;
    for (let block = 0; block < blocks; block += 1) {
      const header = (1 << 3) | (2 << 1) | (block === blocks - 1 ? 1 : 0);
      frame.writeUIntLE(header, 6 + block * 4, 3);
    }
    expect(zstdDecompressedBound(frame)).toBe(blocks * 131072);
    expect(blocks * 131072).toBeGreaterThan(MAX_BATCH_BYTES);
    await expect(zstdDecompress(frame)).rejects.toThrow(/may hold up to 78643200 bytes, more than the 67108864 a batch may decompress to/);
  });

  it('decodes one batch after another through the same decoder, each at its own size', async () => {
    const inputs = [jsonLines(900_000), jsonLines(1_000), jsonLines(250_000)];
    const outs = [];
    for (const input of inputs) outs.push(await zstdDecompress(streamed(input, 1)));
    expect(outs.map((out) => out.length)).toEqual(inputs.map((input) => input.length));
    expect(outs.every((out, index) => out.equals(inputs[index]!))).toBe(true);
  });
});
