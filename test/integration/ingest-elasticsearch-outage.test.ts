import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../shared/config.ts';
import { createElasticsearchClient } from '../../shared/elasticsearch.ts';
import { ensureArtifacts, type StackArtifacts } from '../../stack/artifacts.ts';
import { startElasticsearch, type RunningElasticsearch } from '../../stack/elasticsearch.ts';
import { claimPort } from '../../stack/ports.ts';
import { sourceTopic } from '../../ingest/topics.ts';
import { startIngestWorker, type IngestWorker } from '../../ingest/worker.ts';
import { documentCount, ingestTestConfig, produce, silentLogger, sourceIndex, testKafka, waitFor, waitForCommittedToEnd } from '../support/ingest.ts';

/**
 * The suite's Elasticsearch is shared with other test files, so this test runs a private one
 * (same distribution, its own folder and ports) and really stops and restarts it.
 */
describe('ingest: Elasticsearch stopped mid-stream and restarted', () => {
  let artifacts: StackArtifacts;
  let runDir: string;
  let ports: { http: number; transport: number };
  let elasticsearch: RunningElasticsearch | undefined;
  let config: Config;
  let worker: IngestWorker | undefined;

  const startPrivate = () =>
    startElasticsearch({
      ...artifacts,
      runDir,
      httpPort: ports.http,
      transportPort: ports.transport,
      heap: '512m',
      unprivilegedUser: config.STACK_ELASTICSEARCH_USER,
    });

  beforeAll(async () => {
    config = ingestTestConfig('es-outage', { INGEST_RETRY_INITIAL_MS: '100', INGEST_RETRY_MAX_MS: '1000', INGEST_BULK_MAX_EVENTS: '200' });
    artifacts = await ensureArtifacts(config.STACK_CACHE_DIR, () => {});
    const claimed = new Set<number>();
    ports = {
      http: await claimPort(0, 'private elasticsearch http', 'none', claimed),
      transport: await claimPort(0, 'private elasticsearch transport', 'none', claimed),
    };
    runDir = mkdtempSync(path.join(os.tmpdir(), 'logplatform-ingest-outage-'));
    elasticsearch = await startPrivate();
    config = { ...config, ELASTICSEARCH_URL: elasticsearch.url };
  }, 180_000);

  afterAll(async () => {
    await worker?.stop();
    await elasticsearch?.process.stop();
    if (runDir) rmSync(runDir, { recursive: true, force: true });
  }, 60_000);

  it('holds the stream while Elasticsearch is down and stores every event exactly once after it is back', { timeout: 180_000 }, async () => {
    worker = await startIngestWorker(config, silentLogger);
    const client = createElasticsearchClient({ url: config.ELASTICSEARCH_URL! });
    const index = sourceIndex(config, 'storage_logs');
    let sent = 0;
    let producing = true;
    // a steady stream that keeps arriving across the outage
    const stream = (async () => {
      while (producing) {
        const values = Array.from({ length: 100 }, (_, n) => ({ event_message: `object ${sent + n}`, metadata: { project: 'default', seq: sent + n } }));
        await produce(config, 'storage_logs', values);
        sent += values.length;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();

    await waitFor('events to be searchable before the outage', async () => ((await documentCount(client, index)) >= 500 ? true : undefined));
    await elasticsearch!.process.stop();
    const sentAtOutage = sent;

    const health = async () => (await (await fetch(`http://127.0.0.1:${worker!.port}/health`)).json()) as { status: string; heldPartitions: number };
    await waitFor('the worker to hold its partitions', async () => ((await health()).heldPartitions > 0 ? true : undefined));
    await waitFor('more events to arrive during the outage', async () => (sent >= sentAtOutage + 1000 ? true : undefined));
    const metricsDuringOutage = await (await fetch(`http://127.0.0.1:${worker!.port}/metrics`)).text();
    expect(Number(/ingest_bulk_retries_total\{source="storage_logs",cause="[^"]+"\} (\d+)/.exec(metricsDuringOutage)?.[1] ?? 0)).toBeGreaterThan(0);
    // nothing sent during the outage may be committed yet
    const admin = testKafka(config).admin();
    await admin.connect();
    const ends = await admin.fetchTopicOffsets(sourceTopic(config, 'storage_logs'));
    const [committed] = await admin.fetchOffsets({ groupId: config.INGEST_GROUP_ID, topics: [sourceTopic(config, 'storage_logs')] });
    await admin.disconnect();
    const committedTotal = (committed?.partitions ?? []).reduce((sum, partition) => sum + Math.max(0, Number(partition.offset)), 0);
    expect(committedTotal).toBeLessThan(ends.reduce((sum, partition) => sum + Number(partition.high), 0));

    elasticsearch = await startPrivate();
    await waitFor('the worker to resume by itself', async () => ((await health()).heldPartitions === 0 ? true : undefined), 60_000);
    await waitFor('events to flow after the restart', async () => ((await documentCount(client, index)) > sentAtOutage ? true : undefined), 60_000);
    producing = false;
    await stream;

    await waitForCommittedToEnd(config, [sourceTopic(config, 'storage_logs')], 60_000);
    expect(await documentCount(client, index)).toBe(sent);
    const sums = await client.search({ index, size: 0, aggs: { seq: { sum: { field: 'metadata.seq' } } } });
    expect((sums.aggregations!.seq as { value: number }).value).toBe((sent * (sent - 1)) / 2);
    expect((await health()).status).toBe('consuming');
    await client.close();
  });
});
