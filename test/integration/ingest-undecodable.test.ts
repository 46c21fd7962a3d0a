import { CompressionCodecs, CompressionTypes } from 'kafkajs';
import { compressFrameSync } from 'lz4-napi';
import { describe, expect, it } from 'vitest';
import { deadLetterTopicName } from '../../shared/sources.ts';
import { sourceTopic } from '../../ingest/topics.ts';
import { produceMessages, readDeadLetters, sourceIndex, storedIds, waitForCommittedToEnd, workerForFile } from '../support/ingest.ts';

/**
 * An LZ4 frame whose content checksum is wrong: the broker stores it (Kafka's LZ4 reader does not
 * verify that checksum) and lz4_flex refuses it, so it is a batch the broker serves and we cannot read.
 */
async function produceCorruptLz4Batch(send: () => Promise<void>): Promise<void> {
  const codecs = CompressionCodecs as unknown as Record<
    number,
    () => { compress(encoder: { buffer: Buffer }): Promise<Buffer>; decompress(data: Buffer): Promise<Buffer> }
  >;
  const registered = codecs[CompressionTypes.LZ4]!;
  const ours = registered();
  codecs[CompressionTypes.LZ4] = () => ({
    decompress: ours.decompress,
    compress: async (encoder) => {
      const frame = compressFrameSync(encoder.buffer, { contentChecksum: true });
      frame[frame.length - 1] = frame[frame.length - 1]! ^ 0xff;
      return frame;
    },
  });
  try {
    await send();
  } finally {
    codecs[CompressionTypes.LZ4] = registered;
  }
}

const event = (id: string) => ({ value: JSON.stringify({ id, event_message: id }) });

describe('ingest: a batch nobody can decode is dead-lettered and every partition moves on', () => {
  const { config, client, worker } = workerForFile('undecodable', { INGEST_TOPIC_PARTITIONS: '2' });

  it('dead-letters the corrupt batch with its offsets, counts and logs it, and indexes what comes before, after and beside it', async () => {
    const topic = sourceTopic(config, 'auth_logs');
    await produceMessages(
      config,
      topic,
      [event('before-1'), event('before-2')].map((message) => ({ ...message, partition: 0 })),
      CompressionTypes.Snappy,
    );
    await produceCorruptLz4Batch(() =>
      produceMessages(
        config,
        topic,
        ['lost-1', 'lost-2', 'lost-3'].map((id) => ({ ...event(id), partition: 0 })),
        CompressionTypes.LZ4,
      ),
    );
    // the other partition's events travel in the same fetches as the corrupt batch
    await produceMessages(
      config,
      topic,
      ['beside-1', 'beside-2'].map((id) => ({ ...event(id), partition: 1 })),
      CompressionTypes.LZ4,
    );
    await produceMessages(
      config,
      topic,
      [event('after-1')].map((message) => ({ ...message, partition: 0 })),
      CompressionTypes.GZIP,
    );

    const [letter] = await readDeadLetters(config, deadLetterTopicName({ topicPrefix: config.TOPIC_PREFIX }, 'auth_logs'), 1);
    expect(letter!.headers).toMatchObject({
      'dead-letter-reason': 'undecodable_batch',
      'source-topic': topic,
      'source-partition': '0',
      'source-offset': '2',
      'source-last-offset': '4',
    });
    expect(letter!.headers['dead-letter-detail']).toMatch(/^lz4 record batch at offsets 2\.\.4 \(3 records\) could not be decoded: .*checksum/i);
    // the letter carries the batch as Kafka stores it: base offset 2, magic 2, codec 3
    const stored = letter!.bytes;
    expect(stored.readBigInt64BE(0)).toBe(2n);
    expect(stored.readInt32BE(8)).toBe(stored.length - 12);
    expect([stored.readInt8(16), stored.readInt16BE(21) & 0x07]).toEqual([2, 3]);

    await waitForCommittedToEnd(config, [topic]);
    const ids = await storedIds(client, sourceIndex(config, 'auth_logs'));
    expect(ids.sort()).toEqual(['after-1', 'before-1', 'before-2', 'beside-1', 'beside-2']);

    const metrics = await (await fetch(`http://127.0.0.1:${worker().port}/metrics`)).text();
    expect(metrics).toMatch(/ingest_undecodable_batches_total\{source="auth_logs",codec="lz4"\} 1/);
    expect(metrics).toMatch(/ingest_events_dead_lettered_total\{source="auth_logs",reason="undecodable_batch"\} 3/);
  });
});
