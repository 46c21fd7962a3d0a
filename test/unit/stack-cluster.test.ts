import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.ts';
import { createElasticsearchClient, elasticsearchNodes } from '../../shared/elasticsearch.ts';
import { elasticsearchSettings, type ElasticsearchOptions } from '../../stack/elasticsearch.ts';
import { serverProperties, type KafkaOptions } from '../../stack/kafka.ts';

/** `key=value` lines of a properties file as a map (the last one wins, as Kafka reads them). */
function properties(text: string): Map<string, string> {
  return new Map(
    text
      .split('\n')
      .filter((line) => line.includes('='))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}

/** `key: value` lines of the flat elasticsearch.yml the launcher writes. */
function yamlSettings(text: string): Map<string, string> {
  return new Map(
    text
      .split('\n')
      .filter((line) => line.includes(': '))
      .map((line) => [line.slice(0, line.indexOf(': ')), line.slice(line.indexOf(': ') + 2)]),
  );
}

const kafkaBase: KafkaOptions = { javaHome: '/jdk', kafkaLibs: '/libs', runDir: '/run', port: 19092, controllerPort: 19093, heap: '256m' };
const elasticsearchBase: ElasticsearchOptions = {
  javaHome: '/jdk',
  elasticsearchHome: '/es',
  runDir: '/run',
  httpPort: 19200,
  transportPort: 19300,
  heap: '384m',
  unprivilegedUser: 'es',
};

describe('cluster stack: server.properties of a Kafka node', () => {
  it('single node: node 1 alone in the quorum, every internal topic with one copy, no cluster-wide replication defaults', () => {
    const single = properties(serverProperties(kafkaBase, '/run/kafka/data'));
    expect(single.get('node.id')).toBe('1');
    expect(single.get('controller.quorum.voters')).toBe('1@127.0.0.1:19093');
    expect(single.get('offsets.topic.replication.factor')).toBe('1');
    expect(single.get('transaction.state.log.replication.factor')).toBe('1');
    expect(single.get('transaction.state.log.min.isr')).toBe('1');
    expect(single.has('default.replication.factor')).toBe(false);
    expect(single.has('min.insync.replicas')).toBe(false);
  });

  it('node 2 of 3: its own id and listener, the three voters, replication factor 3 and min.insync.replicas 2 for every topic', () => {
    const node = properties(
      serverProperties(
        { ...kafkaBase, port: 19102, controllerPort: 19103, cluster: { nodeId: 2, controllerPorts: [19093, 19103, 19113], clusterId: 'abc' } },
        '/run/kafka-2/data',
      ),
    );
    expect(node.get('node.id')).toBe('2');
    expect(node.get('process.roles')).toBe('broker,controller');
    expect(node.get('controller.quorum.voters')).toBe('1@127.0.0.1:19093,2@127.0.0.1:19103,3@127.0.0.1:19113');
    expect(node.get('listeners')).toBe('PLAINTEXT://127.0.0.1:19102,CONTROLLER://127.0.0.1:19103');
    expect(node.get('advertised.listeners')).toBe('PLAINTEXT://127.0.0.1:19102');
    expect(node.get('log.dirs')).toBe('/run/kafka-2/data');
    expect(node.get('default.replication.factor')).toBe('3');
    expect(node.get('min.insync.replicas')).toBe('2');
    expect(node.get('offsets.topic.replication.factor')).toBe('3');
    expect(node.get('transaction.state.log.replication.factor')).toBe('3');
    expect(node.get('transaction.state.log.min.isr')).toBe('2');
    expect(node.get('unclean.leader.election.enable')).toBe('false');
  });
});

describe('cluster stack: elasticsearch.yml of a node', () => {
  it('single node: single-node discovery, no seed hosts', () => {
    const single = yamlSettings(elasticsearchSettings(elasticsearchBase, '/run/elasticsearch/data', '/run/elasticsearch/logs'));
    expect(single.get('discovery.type')).toBe('single-node');
    expect(single.has('discovery.seed_hosts')).toBe(false);
    expect(single.has('cluster.initial_master_nodes')).toBe(false);
  });

  it('node 3 of 3: its name and ports, the others as seeds, the cluster bootstrapped from all three on the first start only', () => {
    const options = { ...elasticsearchBase, httpPort: 19220, transportPort: 19320, cluster: { nodeNumber: 3, transportPorts: [19300, 19310, 19320] } };
    const first = yamlSettings(elasticsearchSettings(options, '/d', '/l'));
    expect(first.get('node.name')).toBe('es-3');
    expect(first.get('cluster.name')).toBe('logplatform-local');
    expect(first.get('http.port')).toBe('19220');
    expect(first.get('transport.port')).toBe('19320');
    expect(first.get('network.host')).toBe('127.0.0.1');
    expect(first.get('discovery.seed_hosts')).toBe('["127.0.0.1:19300", "127.0.0.1:19310", "127.0.0.1:19320"]');
    expect(first.get('cluster.initial_master_nodes')).toBe('["es-1", "es-2", "es-3"]');
    expect(first.has('discovery.type')).toBe(false);
    const restarted = yamlSettings(elasticsearchSettings(options, '/d', '/l', false));
    expect(restarted.has('cluster.initial_master_nodes')).toBe(false);
    expect(restarted.get('discovery.seed_hosts')).toBe(first.get('discovery.seed_hosts'));
  });
});

describe('cluster configuration of the platform', () => {
  it('defaults to one copy of each topic partition and no index replicas (a single node)', () => {
    const config = loadConfig({});
    expect(config.INGEST_TOPIC_REPLICATION_FACTOR).toBe(1);
    expect(config.ELASTICSEARCH_INDEX_REPLICAS).toBe(0);
    expect(loadConfig({ INGEST_TOPIC_REPLICATION_FACTOR: '3', ELASTICSEARCH_INDEX_REPLICAS: '1' })).toMatchObject({
      INGEST_TOPIC_REPLICATION_FACTOR: 3,
      ELASTICSEARCH_INDEX_REPLICAS: 1,
    });
    expect(() => loadConfig({ INGEST_TOPIC_REPLICATION_FACTOR: '0' })).toThrow(/INGEST_TOPIC_REPLICATION_FACTOR/);
    expect(() => loadConfig({ ELASTICSEARCH_INDEX_REPLICAS: '-1' })).toThrow(/ELASTICSEARCH_INDEX_REPLICAS/);
  });

  it('takes several Elasticsearch nodes in ELASTICSEARCH_URL, one scheme for all', () => {
    const config = loadConfig({ ELASTICSEARCH_URL: ' http://127.0.0.1:9200 , http://127.0.0.1:9201,' });
    expect(config.ELASTICSEARCH_URL).toBe('http://127.0.0.1:9200,http://127.0.0.1:9201');
    expect(elasticsearchNodes(config.ELASTICSEARCH_URL!)).toEqual(['http://127.0.0.1:9200', 'http://127.0.0.1:9201']);
    expect(loadConfig({ ELASTICSEARCH_URL: 'http://es:9200' }).ELASTICSEARCH_URL).toBe('http://es:9200');
    expect(() => loadConfig({ ELASTICSEARCH_URL: 'http://a:9200,https://b:9200' })).toThrow(/ELASTICSEARCH_URL: mixes http:\/\/ and https:\/\//);
    expect(() => loadConfig({ ELASTICSEARCH_URL: 'http://a:9200,b:9200' })).toThrow(/ELASTICSEARCH_URL: not an http:\/\/ or https:\/\/ URL: b:9200/);
  });

  it('sends a request a dead node refused to the next node, and fails at once with a single dead node', async () => {
    const live = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'x-elastic-product': 'Elasticsearch' });
      response.end('{"answered":"live"}');
    });
    await new Promise<void>((resolve) => live.listen(0, '127.0.0.1', resolve));
    const livePort = (live.address() as AddressInfo).port;
    const [deadA, deadB] = await Promise.all([closedPort(), closedPort()]);
    const cluster = createElasticsearchClient({ url: `http://127.0.0.1:${deadA},http://127.0.0.1:${deadB},http://127.0.0.1:${livePort}` });
    const single = createElasticsearchClient({ url: `http://127.0.0.1:${deadA}` });
    try {
      // round robin starts at the first node: the two dead ones are tried before the live one
      for (let attempt = 0; attempt < 6; attempt += 1) {
        expect(await cluster.transport.request({ method: 'GET', path: '/' })).toEqual({ answered: 'live' });
      }
      await expect(single.transport.request({ method: 'GET', path: '/' })).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      await Promise.all([cluster.close(), single.close()]);
      await new Promise((resolve) => live.close(resolve));
    }
  });

  it('keeps finding a node when every node has failed requests now and then (a pool that only weighs failures down runs out of nodes)', async () => {
    // a fixed pseudo-random sequence: about one answer in three is a 503
    let state = 12345;
    const unlucky = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31 < 0.3;
    const nodes = await Promise.all(
      [0, 1, 2].map(async () => {
        const server = createServer((_request, response) => {
          response.writeHead(unlucky() ? 503 : 200, { 'content-type': 'application/json', 'x-elastic-product': 'Elasticsearch' });
          response.end('{}');
        });
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        return server;
      }),
    );
    const client = createElasticsearchClient({ url: nodes.map((server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`).join(',') });
    const outcomes = new Map<string, number>();
    try {
      for (let request = 0; request < 300; request += 1) {
        const outcome = await client.transport.request({ method: 'GET', path: '/' }).then(
          () => 'answered',
          (error: Error) => error.name,
        );
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
      }
    } finally {
      await client.close();
      await Promise.all(nodes.map((server) => new Promise((resolve) => server.close(resolve))));
    }
    expect(outcomes.get('NoLivingConnectionsError')).toBeUndefined();
    // a request fails only when all three nodes answered it 503 (0.3 cubed: a few percent)
    expect(outcomes.get('answered')).toBeGreaterThan(270);
    expect([...outcomes.keys()].sort()).toEqual(outcomes.has('ResponseError') ? ['ResponseError', 'answered'] : ['answered']);
  });
});

/** A loopback port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
