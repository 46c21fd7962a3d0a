import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { createElasticsearchClient } from '../../shared/elasticsearch.ts';
import { createLogger } from '../../shared/logger.ts';
import { buildServer } from '../../src/server.ts';
import { ELASTICSEARCH_VERSION } from '../../stack/versions.ts';
import { testConfig, uniqueName } from '../support/stack.ts';

describe('the stack is real', () => {
  const elasticsearch = createElasticsearchClient({ url: inject('elasticsearchUrl') });
  const kafka = new Kafka({ clientId: 'smoke', brokers: inject('kafkaBrokers'), logLevel: logLevel.NOTHING });
  const index = uniqueName('smoke');

  afterAll(async () => {
    await elasticsearch.indices.delete({ index, ignore_unavailable: true });
    await elasticsearch.close();
  });

  it('consumes back a message produced with kafkajs', async () => {
    const topic = uniqueName('smoke');
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
    const producer = kafka.producer();
    await producer.connect();
    const payload = randomUUID();
    await producer.send({ topic, messages: [{ key: 'k', value: payload }] });
    const consumer = kafka.consumer({ groupId: uniqueName('smoke-group') });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const received = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('message not consumed within 20 s')), 20_000);
      void consumer.run({
        eachMessage: async ({ message }) => {
          clearTimeout(timer);
          resolve(message.value?.toString() ?? '');
        },
      });
    });
    await consumer.disconnect();
    await producer.disconnect();
    await admin.deleteTopics({ topics: [topic] });
    await admin.disconnect();
    expect(received).toBe(payload);
  });

  it('finds an indexed document with a search', async () => {
    const marker = randomUUID();
    await elasticsearch.index({ index, id: '1', document: { message: `hello ${marker}`, marker }, refresh: 'wait_for' });
    await elasticsearch.index({ index, id: '2', document: { message: 'other', marker: 'other' }, refresh: 'wait_for' });
    const result = await elasticsearch.search<{ marker: string }>({ index, query: { term: { 'marker.keyword': marker } } });
    expect(result.hits.hits.map((hit) => hit._id)).toEqual(['1']);
  });

  it('the query service reports the Kafka and Elasticsearch versions it is connected to', async () => {
    const config = testConfig();
    const app = await buildServer({ config, logger: createLogger('test', 'silent'), elasticsearch, kafkaBrokers: config.KAFKA_BROKERS! });
    const response = await app.inject({ method: 'GET', url: '/health' });
    await app.close();
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.elasticsearch).toEqual({ status: 'up', version: ELASTICSEARCH_VERSION });
    expect(body.kafka.status).toBe('up');
    expect(body.kafka.version).toBe('3.9');
  });

  it('health says which server is down instead of failing', async () => {
    const config = testConfig();
    const unreachable = createElasticsearchClient({ url: 'http://127.0.0.1:1' });
    const app = await buildServer({ config, logger: createLogger('test', 'silent'), elasticsearch: unreachable, kafkaBrokers: ['127.0.0.1:1'] });
    const response = await app.inject({ method: 'GET', url: '/health' });
    await app.close();
    expect(response.json().elasticsearch.status).toBe('down');
    expect(response.json().kafka.status).toBe('down');
  });
});
