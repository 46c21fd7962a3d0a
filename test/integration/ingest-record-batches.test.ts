import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { CompressionTypes, Partitioners } from 'kafkajs';
import { afterAll, describe, expect, it } from 'vitest';
import '../../ingest/codecs.ts';
import { repositoryRoot } from '../../shared/config.ts';
import { ingestTestConfig, removeKafkaTestData, testKafka } from '../support/ingest.ts';

const run = promisify(execFile);

/** Runs `input` through kcat into the topic, compressed with `codec`, each line `key|value`, with a header. */
function kcat(brokers: string, topic: string, codec: string, input: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('kcat', ['-P', '-b', brokers, '-t', topic, '-p', '0', '-z', codec, '-K', '|', '-H', `codec=${codec}`, '-X', 'linger.ms=50'], {
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let errors = '';
    child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`kcat -z ${codec} exited ${code}: ${errors}`))));
    child.stdin.end(input);
  });
}

describe("the worker's record batch decoder on a real broker's fetches", () => {
  const config = ingestTestConfig('record-batches');
  const brokers = config.KAFKA_BROKERS!.join(',');
  const topic = `${config.TOPIC_PREFIX}batches`;
  const groups = [`${config.INGEST_GROUP_ID}-kafkajs`, `${config.INGEST_GROUP_ID}-ours`];

  afterAll(async () => {
    await removeKafkaTestData(config, groups);
  });

  it('hands out what kafkajs hands out: every codec, keys and headers, committed transactions, nothing of the aborted ones', async () => {
    const kafka = testKafka(config);
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 1 }] });
    await admin.disconnect();

    let expected = 0;
    for (const codec of ['none', 'gzip', 'snappy', 'lz4', 'zstd']) {
      const lines = Array.from({ length: 40 }, (_, n) => `key-${n}|${JSON.stringify({ event_message: `${codec} ${n}`, padding: 'x'.repeat(n * 7) })}`);
      await kcat(brokers, topic, codec, `${lines.join('\n')}\n`);
      expected += lines.length;
    }
    const producer = kafka.producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      transactionalId: `${config.INGEST_GROUP_ID}.record-batches`,
      idempotent: true,
      maxInFlightRequests: 1,
    });
    await producer.connect();
    try {
      const outcomes = ['commit', 'abort', 'abort', 'commit', 'abort', 'commit'] as const;
      for (const [turn, outcome] of outcomes.entries()) {
        const transaction = await producer.transaction();
        const messages = Array.from({ length: 5 }, (_, n) => ({
          key: `t${turn}-${n}`,
          value: JSON.stringify({ event_message: `${outcome} ${turn} ${n}` }),
          headers: { id: `t${turn}-${n}`, twice: ['a', 'b'] },
        }));
        await transaction.send({
          topic,
          compression: turn % 2 === 0 ? CompressionTypes.GZIP : CompressionTypes.LZ4,
          messages: messages.map((m) => ({ ...m, partition: 0 })),
        });
        if (outcome === 'commit') {
          await transaction.commit();
          expected += messages.length;
        } else {
          await transaction.abort();
        }
      }
    } finally {
      await producer.disconnect();
    }
    await kcat(brokers, topic, 'none', 'last|{"event_message":"after the transactions"}\n');
    expected += 1;

    const read = async (group: string, decoder: string[]) => {
      const { stdout } = await run(
        process.execPath,
        ['--import', 'tsx', path.join(repositoryRoot, 'test/support/read-topic.ts'), brokers, topic, group, String(expected), ...decoder],
        {
          cwd: repositoryRoot,
          timeout: 60_000,
          maxBuffer: 64 * 1024 * 1024,
        },
      );
      return JSON.parse(stdout) as { offset: string; value: string | null; headers: Record<string, unknown> }[];
    };
    const theirs = await read(groups[0]!, []);
    const ours = await read(groups[1]!, ['record-batches']);

    expect(ours).toHaveLength(expected);
    expect(ours).toEqual(theirs);
    const values = ours.map((message) => Buffer.from(message.value!, 'base64').toString());
    expect(values.filter((value) => value.includes('"abort '))).toEqual([]);
    expect(values.filter((value) => value.includes('"commit '))).toHaveLength(15);
    for (const codec of ['none', 'gzip', 'snappy', 'lz4', 'zstd']) expect(values.filter((value) => value.includes(`"${codec} `))).toHaveLength(40);
    expect(ours.find((message) => Buffer.from(message.value!, 'base64').toString().includes('commit 0 1'))!.headers).toEqual({
      id: Buffer.from('t0-1').toString('base64'),
      twice: [Buffer.from('a').toString('base64'), Buffer.from('b').toString('base64')],
    });
  });
});
