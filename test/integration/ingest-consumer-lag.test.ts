import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../shared/config.ts';
import { eventIndexTemplateName } from '../../shared/event-index.ts';
import { sourceTopic } from '../../ingest/topics.ts';
import { startIngestWorker, type IngestWorker } from '../../ingest/worker.ts';
import {
  deleteIndices,
  documentCount,
  ingestTestConfig,
  produce,
  silentLogger,
  sourceIndex,
  storeClient,
  waitFor,
  waitForCommittedToEnd,
} from '../support/ingest.ts';

/**
 * The worker reaches the suite's Elasticsearch through a TCP relay the test can close: a closed
 * port is Elasticsearch being unreachable for the worker only, without stopping the shared node.
 */
class Relay {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly target: URL) {}

  async open(): Promise<void> {
    const server = createServer((inbound) => {
      const outbound = createConnection({ host: this.target.hostname, port: Number(this.target.port) });
      for (const socket of [inbound, outbound]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      inbound.pipe(outbound).pipe(inbound);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

describe('ingest: consumer lag while Elasticsearch is unreachable', () => {
  let config: Config;
  let relay: Relay;
  let worker: IngestWorker | undefined;
  const client = storeClient(ingestTestConfig('consumer-lag-store'));

  beforeAll(async () => {
    const base = ingestTestConfig('consumer-lag', { INGEST_LAG_POLL_MS: '500', INGEST_RETRY_INITIAL_MS: '100', INGEST_RETRY_MAX_MS: '500' });
    relay = new Relay(new URL(base.ELASTICSEARCH_URL!));
    await relay.open();
    config = { ...base, ELASTICSEARCH_URL: `http://127.0.0.1:${relay.port}` };
    worker = await startIngestWorker(config, silentLogger);
  });
  afterAll(async () => {
    await worker?.stop();
    await relay.close();
    await deleteIndices(client, config.INDEX_PREFIX);
    await client.indices.deleteIndexTemplate({ name: eventIndexTemplateName(config.INDEX_PREFIX) }, { ignore: [404] });
    await client.close();
  });

  /** ingest_consumer_lag summed over the partitions of a topic, once every partition is reported. */
  const topicLag = async (topic: string): Promise<number | undefined> => {
    const text = await (await fetch(`http://127.0.0.1:${worker!.port}/metrics`)).text();
    const values = [...text.matchAll(/^ingest_consumer_lag\{topic="([^"]+)",partition="(\d+)"\} (\d+)$/gm)]
      .filter((match) => match[1] === topic)
      .map((match) => Number(match[3]));
    return values.length === Number(config.INGEST_TOPIC_PARTITIONS) ? values.reduce((sum, value) => sum + value, 0) : undefined;
  };

  it('reports the uncommitted events during the outage and 0 once the worker has caught up', { timeout: 120_000 }, async () => {
    const topic = sourceTopic(config, 'storage_logs');
    const index = sourceIndex(config, 'storage_logs');
    const batch = (from: number, count: number) =>
      Array.from({ length: count }, (_, n) => ({ event_message: `object ${from + n}`, metadata: { project: 'default', seq: from + n } }));

    await produce(config, 'storage_logs', batch(0, 50));
    await waitForCommittedToEnd(config, [topic]);
    await waitFor('lag 0 after the first events', async () => ((await topicLag(topic)) === 0 ? true : undefined));

    await relay.close();
    await produce(config, 'storage_logs', batch(50, 300));
    // nothing can be committed while Elasticsearch is unreachable, so the lag is exactly what was produced since
    const lagDuringOutage = await waitFor('lag to show the events produced during the outage', async () => {
      const lag = await topicLag(topic);
      return lag !== undefined && lag >= 300 ? lag : undefined;
    });
    expect(lagDuringOutage).toBe(300);
    expect(await documentCount(client, index)).toBe(50);

    await relay.open();
    await waitForCommittedToEnd(config, [topic]);
    await waitFor('lag back to 0 after catching up', async () => ((await topicLag(topic)) === 0 ? true : undefined));
    expect(await documentCount(client, index)).toBe(350);
  });
});
