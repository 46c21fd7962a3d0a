import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIngestWorker, type IngestWorker } from '../../ingest/worker.ts';
import { loadConfig, repositoryRoot } from '../../shared/config.ts';
import { createElasticsearchClient, elasticsearchConnection } from '../../shared/elasticsearch.ts';
import { kafkaConnection } from '../../shared/kafka-connection.ts';
import { checkKafka, ServerAccessError } from '../../shared/startup-checks.ts';
import { startLocalStack, type LocalStack } from '../../stack/index.ts';
import { BOOTSTRAP_KEY, startEndpointServer } from '../support/endpoint-server.ts';
import { documentCount, ingestTestConfig, produce, removeTestData, silentLogger, sourceIndex, waitFor } from '../support/ingest.ts';

/**
 * The platform against a private Elasticsearch with security on (HTTPS, users, API keys) and a
 * private Kafka broker with SASL_SSL and SSL listeners, all signed by a CA made for this file:
 * not the suite's plaintext stack.
 */
let stack: LocalStack;
let otherCaFile: string;
const scratch = mkdtempSync(path.join(os.tmpdir(), 'secured-servers-'));

beforeAll(async () => {
  const ports = { STACK_KAFKA_PORT: '0', STACK_KAFKA_CONTROLLER_PORT: '0', STACK_ELASTICSEARCH_PORT: '0', STACK_ELASTICSEARCH_TRANSPORT_PORT: '0' };
  stack = await startLocalStack(
    loadConfig({ ...ports, STACK_ELASTICSEARCH_HEAP: '512m', STACK_KAFKA_HEAP: '384m' }),
    (line) => console.error(`secured stack: ${line}`),
    { secure: true },
  );
  // a CA that signed neither server: trusting it alone must not be enough
  otherCaFile = path.join(scratch, 'other-ca.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      '/CN=some other CA',
      '-days',
      '1',
      '-keyout',
      path.join(scratch, 'other-ca.key'),
      '-out',
      otherCaFile,
    ],
    { stdio: 'ignore' },
  );
}, 600_000);

afterAll(async () => {
  await stack?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

function security() {
  if (!stack.security) throw new Error('the stack was not started secured');
  return stack.security;
}

/** A client of the secured node as `elastic`, for the test's own set-up, look-ups and clean-up. */
function adminClient() {
  const env = {
    ELASTICSEARCH_URL: stack.elasticsearchUrl,
    ELASTICSEARCH_CA_FILE: security().caFile,
    ELASTICSEARCH_USERNAME: 'elastic',
    ELASTICSEARCH_PASSWORD: security().elasticsearch.password,
  };
  return createElasticsearchClient(elasticsearchConnection(loadConfig(env)));
}

/** Variables for the secured servers: Kafka SASL_SSL with the given mechanism, Elasticsearch as `elastic` unless told otherwise. */
function securedEnv(mechanism: 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512', elasticsearch: Record<string, string> = {}): Record<string, string> {
  const { caFile, kafka } = security();
  const user = { PLAIN: kafka.plain, 'SCRAM-SHA-256': kafka.scramSha256, 'SCRAM-SHA-512': kafka.scramSha512 }[mechanism];
  return {
    KAFKA_BROKERS: stack.kafkaBrokers.join(','),
    KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
    KAFKA_SASL_MECHANISM: mechanism,
    KAFKA_SASL_USERNAME: user.username,
    KAFKA_SASL_PASSWORD: user.password,
    KAFKA_CA_FILE: caFile,
    ELASTICSEARCH_URL: stack.elasticsearchUrl,
    ELASTICSEARCH_CA_FILE: caFile,
    ...(elasticsearch.ELASTICSEARCH_API_KEY ? {} : { ELASTICSEARCH_USERNAME: 'elastic', ELASTICSEARCH_PASSWORD: security().elasticsearch.password }),
    ...elasticsearch,
  };
}

const NOW = Date.UTC(2024, 0, 1, 12, 30);
// ids of their own, so a send the test producer retries cannot add events (the worker is what is tested)
const edgeEvent = (minutesAgo: number, path: string) => ({
  id: `secured-${minutesAgo}`,
  timestamp: new Date(NOW - minutesAgo * 60_000).toISOString(),
  event_message: `GET | 200 | ${path}`,
  project: 'secured',
  metadata: { request: { url: `https://secured.example${path}`, path } },
});

/** Kafka -> worker -> Elasticsearch -> query service, all through the secured servers. */
async function ingestAndQuery(label: string, env: Record<string, string>): Promise<void> {
  const config = ingestTestConfig(label, env);
  // the test's own look-ups and clean-up log in as `elastic`, whatever the platform was given
  const store = adminClient();
  let worker: IngestWorker | undefined;
  const server = await startEndpointServer({ now: NOW, overrides: { ...env, INDEX_PREFIX: config.INDEX_PREFIX } });
  try {
    worker = await startIngestWorker(config, silentLogger);
    await produce(config, 'edge_logs', [edgeEvent(20, '/rest/v1/items'), edgeEvent(10, '/auth/v1/token'), edgeEvent(5, '/storage/v1/object')]);
    await waitFor(
      'the three events to be searchable',
      async () => ((await documentCount(store, sourceIndex(config, 'edge_logs'))) === 3 ? true : undefined),
      90_000,
    );

    const response = await server.app.inject({ url: '/api/endpoints/query/logs.all?project=secured', headers: { 'x-api-key': BOOTSTRAP_KEY } });
    expect(response.statusCode).toBe(200);
    const rows = (response.json() as { result: Array<{ event_message: string }> }).result;
    expect(rows.map((row) => row.event_message)).toEqual(['GET | 200 | /storage/v1/object', 'GET | 200 | /auth/v1/token', 'GET | 200 | /rest/v1/items']);

    // /health asks the broker over TLS and Elasticsearch with the credentials
    const health = (await server.app.inject({ url: '/health' })).json() as { elasticsearch: { status: string; version?: string }; kafka: { status: string } };
    expect(health.elasticsearch).toMatchObject({ status: 'up', version: '8.19.21' });
    expect(health.kafka).toMatchObject({ status: 'up' });
  } finally {
    await worker?.stop();
    await server.close();
    await removeTestData(store, config.INDEX_PREFIX);
    await store.close();
  }
}

interface ProcessResult {
  code: number | null;
  output: string;
  seconds: number;
}

/** Runs one of the platform's processes with only the given variables and collects what it printed. */
function runProcess(entry: string, env: Record<string, string>, timeoutMs = 150_000): Promise<ProcessResult> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(repositoryRoot, entry)], {
      cwd: repositoryRoot,
      env: { PATH: process.env.PATH, LOG_LEVEL: 'debug', PORT: '0', INGEST_PORT: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${entry} was still running after ${timeoutMs / 1000} s (a retry loop?):\n${output}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output, seconds: (Date.now() - started) / 1000 });
    });
  });
}

/** The message the process ends with: its last non-JSON line on stderr/stdout. */
function lastPlainLine(output: string): string {
  return (
    output
      .split('\n')
      .filter((line) => line.trim() !== '' && !line.startsWith('{'))
      .at(-1) ?? ''
  );
}

describe('secured servers: ingest and queries', () => {
  it('SCRAM-SHA-512 to Kafka, user and password to Elasticsearch', { timeout: 240_000 }, async () => {
    await ingestAndQuery('secured-scram512', securedEnv('SCRAM-SHA-512'));
  });

  // API keys live in the .security index, whose analyzer needs components of a module the minimal
  // distribution lacks; the stack installs our own plugin with them (stack/elasticsearch-plugin)
  it('an Elasticsearch API key made by `elastic` (no user or password given), SCRAM-SHA-512 to Kafka; invalidated, it stops both processes at start-up', {
    timeout: 600_000,
  }, async () => {
    const admin = adminClient();
    try {
      const key = await admin.security.createApiKey({ name: 'secured-servers-test' });
      const env = securedEnv('SCRAM-SHA-512', { ELASTICSEARCH_API_KEY: key.encoded });
      expect(env).not.toHaveProperty('ELASTICSEARCH_USERNAME');
      expect(env).not.toHaveProperty('ELASTICSEARCH_PASSWORD');
      // the key is what Elasticsearch sees: it authenticates as an API key of `elastic`
      const withKey = createElasticsearchClient(elasticsearchConnection(loadConfig(env)));
      const seen = await withKey.security.authenticate().finally(() => withKey.close());
      expect(seen).toMatchObject({ username: 'elastic', authentication_type: 'api_key', api_key: { id: key.id, name: 'secured-servers-test' } });

      await ingestAndQuery('secured-apikey', env);

      expect((await admin.security.invalidateApiKey({ ids: [key.id] })).invalidated_api_keys).toEqual([key.id]);
      const [worker, queryService] = await Promise.all([runProcess('ingest/main.ts', env), runProcess('src/main.ts', env)]);
      for (const result of [worker, queryService]) {
        expect(result.code).not.toBe(0);
        expect(lastPlainLine(result.output)).toBe(`Elasticsearch at ${stack.elasticsearchUrl} rejected the credentials (401): check ELASTICSEARCH_API_KEY`);
        expect(result.output).not.toContain(key.api_key);
        expect(result.output).not.toContain(key.encoded);
      }
    } finally {
      await admin.close();
    }
  });

  it('PLAIN to Kafka, user and password to Elasticsearch', { timeout: 240_000 }, async () => {
    await ingestAndQuery('secured-plain', securedEnv('PLAIN'));
  });

  it('SCRAM-SHA-256, and the SSL listener with a client certificate (refused without one)', { timeout: 120_000 }, async () => {
    expect(await checkKafka(kafkaConnection(loadConfig(securedEnv('SCRAM-SHA-256'))), { waitMs: 0, required: true })).toBeUndefined();
    const { kafka } = security();
    const ssl = { KAFKA_BROKERS: kafka.sslBrokers.join(','), KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_CA_FILE: security().caFile };
    const withCertificate = { ...ssl, KAFKA_CLIENT_CERT_FILE: kafka.clientCertFile, KAFKA_CLIENT_KEY_FILE: kafka.clientKeyFile };
    expect(await checkKafka(kafkaConnection(loadConfig(withCertificate)), { waitMs: 0, required: true })).toBeUndefined();
    const refused = await checkKafka(kafkaConnection(loadConfig(ssl)), { waitMs: 0, required: true }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ServerAccessError);
    expect((refused as Error).message).toMatch(new RegExp(`^Kafka at ${kafka.sslBrokers[0]} \\(SSL\\) refused the TLS handshake .*KAFKA_CLIENT_CERT_FILE`));
  });
});

describe('secured servers: refused at start-up, with the server named', () => {
  it('the worker with a wrong SASL password exits non-zero naming Kafka, and logs no secret', { timeout: 180_000 }, async () => {
    const env = { ...securedEnv('SCRAM-SHA-512'), KAFKA_SASL_PASSWORD: 'wrong-kafka-password' };
    const result = await runProcess('ingest/main.ts', env);
    expect(result.code).not.toBe(0);
    expect(lastPlainLine(result.output)).toMatch(
      new RegExp(
        `^Kafka at ${stack.kafkaBrokers[0]} \\(SASL_SSL \\(SCRAM-SHA-512\\)\\): SASL authentication failed: check KAFKA_SASL_USERNAME / KAFKA_SASL_PASSWORD`,
      ),
    );
    // debug logs included: neither the password tried nor the Elasticsearch password appears
    expect(result.output).not.toContain('wrong-kafka-password');
    expect(result.output).not.toContain(security().elasticsearch.password);
  });

  it('the worker trusting another CA exits non-zero naming Kafka and KAFKA_CA_FILE', { timeout: 180_000 }, async () => {
    const result = await runProcess('ingest/main.ts', { ...securedEnv('SCRAM-SHA-512'), KAFKA_CA_FILE: otherCaFile });
    expect(result.code).not.toBe(0);
    expect(lastPlainLine(result.output)).toMatch(
      new RegExp(`^Kafka at ${stack.kafkaBrokers[0]} .*presented a certificate this client does not trust: set KAFKA_CA_FILE`),
    );
  });

  it('the worker with a wrong Elasticsearch password exits non-zero naming Elasticsearch', { timeout: 180_000 }, async () => {
    const result = await runProcess(
      'ingest/main.ts',
      securedEnv('SCRAM-SHA-512', { ELASTICSEARCH_USERNAME: 'elastic', ELASTICSEARCH_PASSWORD: 'wrong-es-password' }),
    );
    expect(result.code).not.toBe(0);
    expect(lastPlainLine(result.output)).toBe(
      `Elasticsearch at ${stack.elasticsearchUrl} rejected the credentials (401): check ELASTICSEARCH_USERNAME / ELASTICSEARCH_PASSWORD`,
    );
    expect(result.output).not.toContain('wrong-es-password');
  });

  it('the query service with a wrong API key, or trusting another CA, exits non-zero naming Elasticsearch', { timeout: 240_000 }, async () => {
    const wrongKey = await runProcess(
      'src/main.ts',
      securedEnv('SCRAM-SHA-512', { ELASTICSEARCH_API_KEY: Buffer.from('no-such-id:no-such-key').toString('base64') }),
    );
    expect(wrongKey.code).not.toBe(0);
    expect(lastPlainLine(wrongKey.output)).toBe(`Elasticsearch at ${stack.elasticsearchUrl} rejected the credentials (401): check ELASTICSEARCH_API_KEY`);

    const untrusted = await runProcess('src/main.ts', securedEnv('SCRAM-SHA-512', { ELASTICSEARCH_CA_FILE: otherCaFile }));
    expect(untrusted.code).not.toBe(0);
    expect(lastPlainLine(untrusted.output)).toMatch(
      new RegExp(`^Elasticsearch at ${stack.elasticsearchUrl} presented a certificate this client does not trust: set ELASTICSEARCH_CA_FILE`),
    );
  });

  it('a password without its user stops the worker before it connects', { timeout: 60_000 }, async () => {
    const env = securedEnv('SCRAM-SHA-512');
    delete env.ELASTICSEARCH_USERNAME;
    const result = await runProcess('ingest/main.ts', env);
    expect(result.code).toBe(2);
    expect(result.output).toContain('ELASTICSEARCH_PASSWORD: set, but ELASTICSEARCH_USERNAME is not');
  });
});
