import { describe, expect, it } from 'vitest';
import { decodeOffsetFetch, offsetFetchRequest, UNSTABLE_OFFSET_COMMIT } from '../../ingest/stable-offsets.ts';

/** An OffsetFetch v7 answer as the broker writes it after kafkajs has read the correlation id. */
function answer(partitions: { topic: string; partition: number; offset: bigint; error: number }[], groupError = 0): Buffer {
  const bytes: number[] = [0, 0, 0, 0, 0]; // header tagged fields, throttle time
  const int = (value: number, size: number) => {
    const buffer = Buffer.alloc(size);
    if (size === 2) buffer.writeInt16BE(value);
    else buffer.writeInt32BE(value);
    bytes.push(...buffer);
  };
  const text = (value: string) => bytes.push(Buffer.byteLength(value) + 1, ...Buffer.from(value));
  const topics = [...new Set(partitions.map((entry) => entry.topic))];
  bytes.push(topics.length + 1);
  for (const topic of topics) {
    text(topic);
    const ofTopic = partitions.filter((entry) => entry.topic === topic);
    bytes.push(ofTopic.length + 1);
    for (const entry of ofTopic) {
      int(entry.partition, 4);
      const offset = Buffer.alloc(8);
      offset.writeBigInt64BE(entry.offset);
      bytes.push(...offset);
      int(-1, 4); // leader epoch
      bytes.push(0); // null metadata
      int(entry.error, 2);
      bytes.push(0);
    }
    bytes.push(0);
  }
  int(groupError, 2);
  bytes.push(0);
  return Buffer.from(bytes);
}

describe('OffsetFetch v7 with require_stable', () => {
  it('encodes the header tagged fields, one topic and partition, and require_stable set', async () => {
    const request = offsetFetchRequest('g', 'tp', 3);
    expect([request.apiKey, request.apiVersion]).toEqual([9, 7]);
    const encoded = (await request.encode()) as unknown as { buffer: Buffer; size(): number };
    const body = [...encoded.buffer.subarray(0, encoded.size())];
    expect(body).toEqual([0, 2, 0x67, 2, 3, 0x74, 0x70, 2, 0, 0, 0, 3, 0, 1, 0]);
  });

  it('decodes the offset and error of the partition asked for, past others', () => {
    const payload = answer([
      { topic: 'other', partition: 3, offset: 7n, error: 0 },
      { topic: 'tp', partition: 2, offset: 11n, error: 0 },
      { topic: 'tp', partition: 3, offset: 4_294_967_301n, error: 0 },
    ]);
    expect(decodeOffsetFetch(payload, 'tp', 3)).toEqual({ offset: 4_294_967_301n, errorCode: 0 });
    expect(decodeOffsetFetch(payload, 'tp', 2)).toEqual({ offset: 11n, errorCode: 0 });
    expect(decodeOffsetFetch(answer([{ topic: 'tp', partition: 3, offset: -1n, error: UNSTABLE_OFFSET_COMMIT }]), 'tp', 3)).toEqual({
      offset: -1n,
      errorCode: UNSTABLE_OFFSET_COMMIT,
    });
  });

  it("gives the group's own error first, and refuses an answer without the partition", () => {
    expect(decodeOffsetFetch(answer([{ topic: 'tp', partition: 3, offset: 5n, error: 0 }], 16), 'tp', 3)).toEqual({ offset: -1n, errorCode: 16 });
    expect(() => decodeOffsetFetch(answer([{ topic: 'tp', partition: 1, offset: 5n, error: 0 }]), 'tp', 3)).toThrow('the offset fetch answered without tp/3');
  });
});
