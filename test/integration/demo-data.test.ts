import { describe, expect, it } from 'vitest';
import { publishDemoData } from '../../scripts/publish-demo-data.ts';
import { SOURCE_NAMES } from '../../shared/sources.ts';
import { documentCount, silentLogger, sourceIndex, testKafka, waitFor, workerForFile } from '../support/ingest.ts';
import { uniqueName } from '../support/stack.ts';
import { kafkaConnection } from '../../shared/kafka-connection.ts';

describe('demo data with SOURCE_TOPICS', () => {
  const edgeTopic = uniqueName('cf-edge');
  const { config, client } = workerForFile('demo-data', { SOURCE_TOPICS: `edge_logs=${edgeTopic}` });

  it('is published to the topics the worker reads, so every event becomes searchable', async () => {
    const to = new Date();
    const { published } = await publishDemoData({
      kafka: kafkaConnection(config),
      topics: config,
      events: 400,
      from: new Date(to.getTime() - 3_600_000),
      to,
      projects: ['default'],
      logger: silentLogger,
    });
    expect(published).toBe(400);

    const admin = testKafka(config).admin();
    await admin.connect();
    try {
      const edgeOffsets = await admin.fetchTopicOffsets(edgeTopic);
      expect(edgeOffsets.reduce((sum, partition) => sum + Number(partition.high), 0)).toBeGreaterThan(0);
      // nothing went to the name the override replaces
      expect(await admin.listTopics()).not.toContain(`${config.TOPIC_PREFIX}edge_logs`);
    } finally {
      await admin.disconnect();
    }

    const counts = await waitFor(
      'all demo events indexed',
      async () => {
        const perSource = await Promise.all(SOURCE_NAMES.map((source) => documentCount(client, sourceIndex(config, source))));
        return perSource.reduce((sum, count) => sum + count, 0) === published ? perSource : undefined;
      },
      120_000,
    );
    expect(counts[SOURCE_NAMES.indexOf('edge_logs')]).toBeGreaterThan(0);
  }, 180_000);
});
