import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repositoryRoot, type Config } from '../../shared/config.ts';
import { sourceTopic } from '../../ingest/topics.ts';
import {
  deleteIndices,
  documentCount,
  ingestTestConfig,
  produce,
  sourceIndex,
  storeClient,
  testKafka,
  waitFor,
  waitForCommittedToEnd,
} from '../support/ingest.ts';

const EVENTS = 40_000;

interface WorkerProcess {
  child: ChildProcess;
  port: number;
}

/** The real worker process (`npm run ingest`), so SIGKILL hits it where it stands. */
async function spawnWorker(config: Config): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(repositoryRoot, 'ingest', 'main.ts')], {
    cwd: repositoryRoot,
    env: {
      PATH: process.env.PATH,
      KAFKA_BROKERS: config.KAFKA_BROKERS!.join(','),
      ELASTICSEARCH_URL: config.ELASTICSEARCH_URL!,
      INDEX_PREFIX: config.INDEX_PREFIX,
      TOPIC_PREFIX: config.TOPIC_PREFIX,
      INGEST_GROUP_ID: config.INGEST_GROUP_ID,
      INGEST_PORT: '0',
      INGEST_TOPIC_PARTITIONS: String(config.INGEST_TOPIC_PARTITIONS),
      INGEST_SESSION_TIMEOUT_MS: String(config.INGEST_SESSION_TIMEOUT_MS),
      // small bulks: many commits, so the kill lands between some of them
      INGEST_BULK_MAX_EVENTS: '250',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const port = await waitFor('the worker to print its address', async () => {
    if (child.exitCode !== null) throw new Error(`worker exited with ${child.exitCode}`);
    const match = /ingest: http:\/\/[^:]+:(\d+)\/health/.exec(output);
    return match ? Number(match[1]) : undefined;
  });
  return { child, port };
}

async function indexedSoFar(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return Number(/ingest_events_indexed_total\{source="edge_logs"\} (\d+)/.exec(text)?.[1] ?? 0);
}

async function committedTotal(config: Config, topic: string): Promise<number> {
  const admin = testKafka(config).admin();
  await admin.connect();
  try {
    const [committed] = await admin.fetchOffsets({ groupId: config.INGEST_GROUP_ID, topics: [topic] });
    return (committed?.partitions ?? []).reduce((sum, partition) => sum + Math.max(0, Number(partition.offset)), 0);
  } finally {
    await admin.disconnect();
  }
}

describe('ingest: the worker killed with SIGKILL mid-batch', () => {
  const config = ingestTestConfig('sigkill');
  const client = storeClient(config);
  const started: ChildProcess[] = [];
  afterAll(async () => {
    for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await deleteIndices(client, config.INDEX_PREFIX);
    await client.close();
  });

  it('stores every event exactly once after a restart, and a SIGTERM afterwards exits 0 with everything committed', async () => {
    const topic = sourceTopic(config, 'edge_logs');
    const index = sourceIndex(config, 'edge_logs');
    const first = await spawnWorker(config);
    started.push(first.child);
    // no ids: the restarted worker must derive the same ids from the same positions
    const producing = produce(
      config,
      'edge_logs',
      // ids of their own: a send the test producer retries under load cannot add events; the worker's redelivery is what is tested
      Array.from({ length: EVENTS }, (_, seq) => ({
        id: `seq-${seq}`,
        event_message: `GET | 200 | event ${seq}`,
        project: 'default',
        metadata: { seq, request: { path: '/rest/v1/items', url: 'https://default.supabase.co/rest/v1/items' } },
      })),
    );
    // killed while the stream is still arriving and batches are in flight
    await waitFor('part of the stream to be indexed', async () => ((await indexedSoFar(first.port)) >= EVENTS / 20 ? true : undefined));
    first.child.kill('SIGKILL');
    await once(first.child, 'exit');
    await producing;
    expect(first.child.signalCode).toBe('SIGKILL');
    // killed mid-stream: not everything was committed
    expect(await committedTotal(config, topic)).toBeLessThan(EVENTS);

    const second = await spawnWorker(config);
    started.push(second.child);
    await waitForCommittedToEnd(config, [topic], 120_000);
    expect(await documentCount(client, index)).toBe(EVENTS);
    // every sequence number once: the count and the sum both match only if none is missing or doubled
    const sums = await client.search({ index, size: 0, aggs: { seq: { sum: { field: 'metadata.seq' } } } });
    expect((sums.aggregations!.seq as { value: number }).value).toBe((EVENTS * (EVENTS - 1)) / 2);

    second.child.kill('SIGTERM');
    const [code] = await once(second.child, 'exit');
    expect(code).toBe(0);
    expect(await committedTotal(config, topic)).toBe(EVENTS);
    // its waits allow 120 s for the restarted worker; 40 s is usual, a loaded CI machine took over 60
  }, 240_000);
});
