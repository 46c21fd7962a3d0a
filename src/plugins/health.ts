import type { Client } from '@elastic/elasticsearch';
import type { ConnectionOptions } from 'node:tls';
import type { FastifyPluginAsync } from 'fastify';
import { fetchApiVersions, kafkaReleaseFromApis } from '../../shared/kafka-version.ts';
import type { OpsAccess } from '../../shared/ops-access.ts';
import { NO_CREDENTIAL } from '../http/route-schemas.ts';

export interface HealthOptions {
  elasticsearch: Client;
  kafkaBrokers: string[];
  /** Present when the brokers speak TLS (SSL, SASL_SSL). */
  kafkaTls?: ConnectionOptions;
  /** Who sees the dependencies, versions and pid; others get the status alone. */
  allowed: OpsAccess;
}

interface Dependency {
  status: 'up' | 'down';
  version?: string;
  error?: string;
}

async function elasticsearchHealth(client: Client): Promise<Dependency & { url?: string }> {
  try {
    const info = await client.nodes.info({ node_id: '_local', metric: '_none', filter_path: 'nodes.*.version' }, { requestTimeout: 2000 });
    const version = Object.values(info.nodes ?? {})[0]?.version;
    return { status: 'up', version };
  } catch (error) {
    return { status: 'down', error: (error as Error).message };
  }
}

async function kafkaHealth(brokers: string[], tls: ConnectionOptions | undefined): Promise<Dependency & { brokers: string[] }> {
  for (const broker of brokers) {
    try {
      const apis = await fetchApiVersions(broker, 2000, tls);
      return { status: 'up', brokers, version: kafkaReleaseFromApis(apis) };
    } catch (error) {
      if (broker === brokers[brokers.length - 1]) return { status: 'down', brokers, error: (error as Error).message };
    }
  }
  return { status: 'down', brokers, error: 'no brokers configured' };
}

const DEPENDENCY_SCHEMA = {
  type: 'object',
  properties: { status: { type: 'string', enum: ['up', 'down'] }, version: { type: 'string' }, error: { type: 'string' } },
} as const;

const HEALTH_SCHEMA = {
  summary: 'Liveness',
  description: 'Always 200 while the process runs. With the operator token (or without OPS_TOKEN) also the dependencies, their versions and the pid.',
  tags: ['operations'],
  security: NO_CREDENTIAL,
  response: {
    200: {
      description: 'The process is alive',
      type: 'object',
      required: ['status'],
      properties: {
        status: { type: 'string', enum: ['ok'] },
        pid: { type: 'integer' },
        uptime_seconds: { type: 'integer' },
        elasticsearch: DEPENDENCY_SCHEMA,
        kafka: { ...DEPENDENCY_SCHEMA, properties: { ...DEPENDENCY_SCHEMA.properties, brokers: { type: 'array', items: { type: 'string' } } } },
        checked_at: { type: 'string', format: 'date-time', description: 'When the dependencies were last checked (at most every 2 s)' },
      },
    },
  },
};

/** How long a dependency check is reused: /health stays cheap (no store round trip per call) and answers within the event loop's time. */
const DEPENDENCY_CHECK_MS = 2000;

/**
 * Liveness plus the servers this process talks to and their versions. The dependency checks run
 * at most every 2 s and in the background: a caller gets the latest result at once (only the first
 * call waits), so /health measures the process, not Elasticsearch's latency.
 */
export const healthPlugin: FastifyPluginAsync<HealthOptions> = async (app, options) => {
  type Dependencies = { elasticsearch: Awaited<ReturnType<typeof elasticsearchHealth>>; kafka: Awaited<ReturnType<typeof kafkaHealth>>; checked_at: string };
  let latest: Dependencies | undefined;
  let checking: Promise<Dependencies> | undefined;
  let checkedAt = 0;
  const check = () =>
    (checking ??= Promise.all([elasticsearchHealth(options.elasticsearch), kafkaHealth(options.kafkaBrokers, options.kafkaTls)])
      .then(([elasticsearch, kafka]) => {
        checkedAt = Date.now();
        latest = { elasticsearch, kafka, checked_at: new Date(checkedAt).toISOString() };
        return latest;
      })
      .finally(() => {
        checking = undefined;
      }));

  app.get('/health', { schema: HEALTH_SCHEMA }, async (request) => {
    if (!options.allowed(request.headers.authorization)) return { status: 'ok' };
    if (Date.now() - checkedAt >= DEPENDENCY_CHECK_MS) void check().catch(() => undefined);
    const dependencies = latest ?? (await check());
    return { status: 'ok', pid: process.pid, uptime_seconds: Math.round(process.uptime()), ...dependencies };
  });
};
