import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { repositoryRoot } from '../../shared/module-runtime.ts';
import { ELASTICSEARCH_VERSION, KAFKA_VERSION } from '../../stack/versions.ts';

const composeFile = path.join(repositoryRoot, 'docker-compose.yml');
const envExample = path.join(repositoryRoot, '.env.example');
const composeText = readFileSync(composeFile, 'utf8');
/** Every `${NAME...}` the compose file interpolates. */
const composeVariables = [...new Set([...composeText.matchAll(/\$\{([A-Z_][A-Z0-9_]*)/g)].map((match) => match[1]!))].sort();

/** `docker compose` (v2 plugin) when present, else the standalone docker-compose; neither needs an engine for `config`. */
function composeCommand(): string[] | undefined {
  if (spawnSync('docker', ['compose', 'version']).status === 0) return ['docker', 'compose'];
  if (spawnSync('docker-compose', ['version']).status === 0) return ['docker-compose'];
  return undefined;
}

interface ComposeService {
  environment?: Record<string, string | number | null>;
  ports?: (string | { host_ip?: string; published?: string | number; target?: number })[];
  container_name?: string;
  deploy?: { replicas?: number };
  build?: { context?: string; target?: string };
}

/** `config` of the compose file (plus extra files), run with only the variables given (the caller's are left out). */
function composeConfig(command: string[], env: Record<string, string>, options: { files?: string[]; envFile?: string } = {}) {
  const cleanEnv: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined && !composeVariables.includes(name)) cleanEnv[name] = value;
  const files = [composeFile, ...(options.files ?? [])].flatMap((file) => ['-f', file]);
  const envFile = options.envFile ? ['--env-file', options.envFile] : [];
  const result = spawnSync(command[0]!, [...command.slice(1), ...envFile, ...files, 'config'], {
    encoding: 'utf8',
    env: { ...cleanEnv, ...env },
    cwd: os.tmpdir(),
  });
  const services = result.status === 0 ? (parse(result.stdout) as { services: Record<string, ComposeService> }).services : {};
  return { ...result, services };
}

/** A published port as `host_ip:published:target`, from the short or the long syntax. */
function publishedPort(port: NonNullable<ComposeService['ports']>[number]): string {
  if (typeof port === 'string') return port.replace(/\/tcp$/, '');
  return `${port.host_ip ?? ''}:${port.published}:${port.target}`;
}

const KEY = { BOOTSTRAP_API_KEY: 'compose-config-check-key' };

describe('docker-compose.yml', () => {
  const command = composeCommand();
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'compose-check-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('runs the same server versions as the tests', () => {
    expect(composeText).toContain(`elasticsearch:${ELASTICSEARCH_VERSION}`);
    expect(composeText).toContain(`apache/kafka:${KAFKA_VERSION}`);
  });

  it('has a compose client to check it with (required in CI, where CI is set)', (context) => {
    if (command) return;
    if (!process.env.CI) return context.skip('no docker compose / docker-compose client: the compose checks below are skipped (they fail in CI)');
    throw new Error("no compose client found: install Debian's docker-compose or the docker compose plugin (.ci/run does); the compose file cannot be checked");
  });

  it.skipIf(command === undefined)('is a valid compose file with the four services, each process built from its Dockerfile target', () => {
    const result = composeConfig(command!, KEY);
    expect(result.stderr).not.toMatch(/invalid|error/i);
    expect(result.status).toBe(0);
    expect(Object.keys(result.services).sort()).toEqual(['elasticsearch', 'ingest', 'kafka', 'query']);
    expect(result.services.ingest!.build?.target).toBe('ingest');
    expect(result.services.query!.build?.target).toBe('query');
  });

  it.skipIf(command === undefined)('refuses to start the query service without a bootstrap key', () => {
    const result = composeConfig(command!, {});
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('BOOTSTRAP_API_KEY');
  });

  it.skipIf(command === undefined)('publishes a Kafka listener for producers outside the network, localhost:9094 unless told otherwise', () => {
    const defaults = composeConfig(command!, KEY).services.kafka!;
    expect(String(defaults.environment?.KAFKA_ADVERTISED_LISTENERS)).toBe('INTERNAL://kafka:9092,EXTERNAL://localhost:9094');
    expect(defaults.ports?.map(publishedPort)).toEqual(['127.0.0.1:9094:9094']);

    const moved = composeConfig(command!, { ...KEY, KAFKA_EXTERNAL_HOST: 'logs.example.com', KAFKA_EXTERNAL_PORT: '19094', KAFKA_EXTERNAL_BIND: '0.0.0.0' })
      .services.kafka!;
    expect(String(moved.environment?.KAFKA_ADVERTISED_LISTENERS)).toBe('INTERNAL://kafka:9092,EXTERNAL://logs.example.com:19094');
    expect(moved.ports?.map(publishedPort)).toEqual(['0.0.0.0:19094:9094']);
  });

  it.skipIf(command === undefined)('lets the worker scale: no host ports or container name, and a scaled variant is valid', () => {
    const { services } = composeConfig(command!, KEY);
    expect(services.ingest!.ports ?? []).toEqual([]);
    expect(services.ingest!.container_name).toBeUndefined();
    // what `--scale ingest=3` asks for, as a file `config` can check
    const scaled = path.join(scratch, 'scaled.yml');
    writeFileSync(scaled, 'services:\n  ingest:\n    deploy:\n      replicas: 3\n');
    const result = composeConfig(command!, KEY, { files: [scaled] });
    expect(result.status).toBe(0);
    expect(result.services.ingest!.deploy?.replicas).toBe(3);
    expect(result.services.ingest!.ports ?? []).toEqual([]);
  });

  it.skipIf(command === undefined)(
    'scales to a cluster with docker-compose.cluster.yml: three Kafka nodes in one quorum, three Elasticsearch nodes, both processes given every node',
    () => {
      const result = composeConfig(command!, KEY, { files: [path.join(repositoryRoot, 'docker-compose.cluster.yml')] });
      expect(result.stderr).not.toMatch(/invalid|error/i);
      expect(result.status).toBe(0);
      const { services } = result;
      expect(Object.keys(services).sort()).toEqual(['elasticsearch', 'elasticsearch-2', 'elasticsearch-3', 'ingest', 'kafka', 'kafka-2', 'kafka-3', 'query']);
      const kafkaNodes = ['kafka', 'kafka-2', 'kafka-3'].map((name) => services[name]!.environment!);
      expect(kafkaNodes.map((environment) => String(environment.KAFKA_NODE_ID))).toEqual(['1', '2', '3']);
      for (const environment of kafkaNodes) {
        expect(environment.KAFKA_CONTROLLER_QUORUM_VOTERS).toBe('1@kafka:9093,2@kafka-2:9093,3@kafka-3:9093');
        expect(String(environment.KAFKA_DEFAULT_REPLICATION_FACTOR)).toBe('3');
        expect(String(environment.KAFKA_MIN_INSYNC_REPLICAS)).toBe('2');
        expect(String(environment.KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR)).toBe('3');
        // one cluster id for all: a 16-byte base64url UUID, as the storage format requires
        expect(Buffer.from(String(environment.CLUSTER_ID), 'base64url')).toHaveLength(16);
        expect(environment.CLUSTER_ID).toBe(kafkaNodes[0]!.CLUSTER_ID);
      }
      // every node reachable from outside on its own advertised port
      expect(kafkaNodes.map((environment) => /EXTERNAL:\/\/[^,]+:(\d+)/.exec(String(environment.KAFKA_ADVERTISED_LISTENERS))?.[1])).toEqual([
        '9094',
        '9095',
        '9096',
      ]);
      const elasticsearchNodes = ['elasticsearch', 'elasticsearch-2', 'elasticsearch-3'].map((name) => services[name]!.environment!);
      expect(elasticsearchNodes.map((environment) => environment['node.name'])).toEqual(['es-1', 'es-2', 'es-3']);
      for (const environment of elasticsearchNodes) {
        expect(environment['discovery.type']).toBe('multi-node');
        expect(environment['discovery.seed_hosts']).toBe('elasticsearch,elasticsearch-2,elasticsearch-3');
        expect(environment['cluster.initial_master_nodes']).toBe('es-1,es-2,es-3');
      }
      for (const name of ['ingest', 'query']) {
        const environment = services[name]!.environment!;
        expect(environment.KAFKA_BROKERS).toBe('kafka:9092,kafka-2:9092,kafka-3:9092');
        expect(environment.ELASTICSEARCH_URL).toBe('http://elasticsearch:9200,http://elasticsearch-2:9200,http://elasticsearch-3:9200');
        expect(String(environment.INGEST_TOPIC_REPLICATION_FACTOR)).toBe('3');
        expect(String(environment.ELASTICSEARCH_INDEX_REPLICAS)).toBe('1');
      }
    },
  );

  it('.env.example lists exactly the variables the compose file reads', () => {
    const listed = readFileSync(envExample, 'utf8')
      .split('\n')
      .map((line) => /^([A-Z_][A-Z0-9_]*)=/.exec(line.trim())?.[1])
      .filter((name): name is string => name !== undefined)
      .sort();
    expect(composeVariables.length).toBeGreaterThan(5);
    expect(listed).toEqual(composeVariables);
  });

  it.skipIf(command === undefined)('gives the same configuration with .env.example as with the defaults written in the file', () => {
    const withDefaults = composeConfig(command!, KEY);
    const withExample = composeConfig(command!, KEY, { envFile: envExample });
    expect(withExample.status).toBe(0);
    expect(withExample.services).toEqual(withDefaults.services);
  });
});
