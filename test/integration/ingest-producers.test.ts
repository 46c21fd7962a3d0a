import { spawn } from 'node:child_process';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureArtifacts } from '../../stack/artifacts.ts';
import { sourceTopic } from '../../ingest/topics.ts';
import { documentCount, sourceIndex, storedIds, waitFor, waitForCommittedToEnd, workerForFile, storedById } from '../support/ingest.ts';

const CODECS = ['gzip', 'snappy', 'lz4', 'zstd'] as const;
const PER_RUN = 150;

/** Runs a producer tool with `input` on stdin; rejects with its output when it fails. */
function run(command: string, args: string[], input: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', (error) => reject(new Error(`${command} could not run (${error.message}); CI installs it in .ci/run`)));
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} exited ${code}:\n${output}`))));
    child.stdin.end(input);
  });
}

describe('ingest: real producer tools, every codec, every event exactly once', () => {
  const { config, client, worker } = workerForFile('producers', { INGEST_TOPIC_PARTITIONS: '3' });
  const brokers = config.KAFKA_BROKERS!.join(',');
  const topic = sourceTopic(config, 'edge_logs');
  const index = sourceIndex(config, 'edge_logs');
  const expectedIds = new Set<string>();
  let java: { bin: string; classpath: string };

  beforeAll(async () => {
    const artifacts = await ensureArtifacts(config.STACK_CACHE_DIR, () => {});
    java = { bin: path.join(artifacts.javaHome, 'bin', 'java'), classpath: path.join(artifacts.kafkaLibs, '*') };
  });

  it('consumes kcat (librdkafka) batches compressed with gzip, snappy, lz4 and zstd, keys and an id header included', async () => {
    for (const codec of CODECS) {
      const lines = Array.from({ length: PER_RUN }, (_, n) => {
        const id = `kcat-${codec}-${n}`;
        expectedIds.add(id);
        // the shapes producers really write: `message` and `@timestamp`, extra top-level fields
        return `key-${n}|${JSON.stringify({ id, message: `kcat ${codec} ${n}`, '@timestamp': new Date(Date.UTC(2024, 0, 1, 0, 0, n)).toISOString(), level: 'info', project: 'default' })}`;
      });
      await run('kcat', ['-P', '-b', brokers, '-t', topic, '-z', codec, '-K', '|', '-X', 'linger.ms=50'], `${lines.join('\n')}\n`);
    }
    // no id in the body: the header gives it
    await run('kcat', ['-P', '-b', brokers, '-t', topic, '-z', 'zstd', '-H', 'id=kcat-header-id'], `${JSON.stringify({ msg: 'id from a header' })}\n`);
    expectedIds.add('kcat-header-id');

    await waitFor('the kcat events', async () => ((await documentCount(client, index)) >= expectedIds.size ? true : undefined));
    const sample = await storedById<Record<string, unknown>>(client, index, 'kcat-snappy-7');
    expect(sample._source).toMatchObject({
      event_message: 'kcat snappy 7',
      timestamp: '2024-01-01T00:00:07.000000Z',
      project: 'default',
      metadata: { level: 'info', kafka_key: 'key-7' },
    });
    expect((await storedById<Record<string, unknown>>(client, index, 'kcat-header-id'))._source).toMatchObject({ event_message: 'id from a header' });
  });

  it('consumes the Java console producer with each --compression-codec, parse.key and an id header', async () => {
    for (const codec of CODECS) {
      const lines = Array.from({ length: PER_RUN }, (_, n) => {
        const id = `java-${codec}-${n}`;
        expectedIds.add(id);
        // headers, a tab, key|value (parse.headers=true, parse.key=true)
        return `id:${id}\tjava-key-${n}|${JSON.stringify({ log: `java ${codec} ${n}`, time: 1_704_067_200 + n })}`;
      });
      await run(
        java.bin,
        [
          '-cp',
          java.classpath,
          'kafka.tools.ConsoleProducer',
          '--bootstrap-server',
          brokers,
          '--topic',
          topic,
          '--compression-codec',
          codec,
          '--property',
          'parse.key=true',
          '--property',
          'key.separator=|',
          '--property',
          'parse.headers=true',
          '--batch-size',
          '100',
          '--timeout',
          '50',
        ],
        `${lines.join('\n')}\n`,
      );
    }
    await waitForCommittedToEnd(config, [topic], 90_000);
    const ids = await storedIds(client, index);
    // exactly once: the stored ids are the produced ids, none missing, none extra
    expect(ids.length).toBe(expectedIds.size);
    expect(new Set(ids)).toEqual(expectedIds);
    const sample = await storedById<Record<string, unknown>>(client, index, 'java-snappy-3');
    expect(sample._source).toMatchObject({ event_message: 'java snappy 3', timestamp: '2024-01-01T00:00:03.000000Z', metadata: { kafka_key: 'java-key-3' } });

    const metrics = await (await fetch(`http://127.0.0.1:${worker().port}/metrics`)).text();
    expect(metrics).not.toMatch(/ingest_events_dead_lettered_total\{/);
    expect(metrics).not.toMatch(/ingest_undecodable_batches_total\{/);
  }, 180_000);
});
