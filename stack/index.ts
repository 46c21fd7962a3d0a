import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ensureArtifacts } from './artifacts.ts';
import { createStackCertificates } from './certificates.ts';
import { startElasticsearch, type RunningElasticsearch } from './elasticsearch.ts';
import { startKafka, type KafkaSecurity, type KafkaUser, type RunningKafka } from './kafka.ts';
import { claimPort } from './ports.ts';
import { processAlive, ServerProcess } from './server-process.ts';
import type { Config } from '../shared/config.ts';

export { StackError } from './server-process.ts';

export type StackSettings = Pick<
  Config,
  | 'STACK_CACHE_DIR'
  | 'STACK_KAFKA_PORT'
  | 'STACK_KAFKA_CONTROLLER_PORT'
  | 'STACK_ELASTICSEARCH_PORT'
  | 'STACK_ELASTICSEARCH_TRANSPORT_PORT'
  | 'STACK_ELASTICSEARCH_HEAP'
  | 'STACK_KAFKA_HEAP'
  | 'STACK_ELASTICSEARCH_USER'
>;

export interface LocalStack {
  /** The SASL_SSL listener when the stack is secured. */
  kafkaBrokers: string[];
  /** https:// when the stack is secured. */
  elasticsearchUrl: string;
  runDir: string;
  /** How to get in, when started with `secure`. */
  security?: LocalStackSecurity;
  stop(): Promise<void>;
}

export interface StackOptions {
  /**
   * Elasticsearch with security on (HTTPS, the `elastic` user, API keys) and Kafka with a SASL_SSL
   * listener (PLAIN and SCRAM users) and an SSL listener that requires a client certificate, all
   * signed by a CA made for this run. Default: plaintext and unauthenticated.
   */
  secure?: boolean;
}

export interface LocalStackSecurity {
  /** PEM of the run's CA, which signed both servers' certificates and the client certificate. */
  caFile: string;
  elasticsearch: { username: 'elastic'; password: string };
  kafka: {
    plain: KafkaUser;
    scramSha256: KafkaUser;
    scramSha512: KafkaUser;
    /** The listener that takes TLS client certificates instead of SASL. */
    sslBrokers: string[];
    clientCertFile: string;
    clientKeyFile: string;
  };
}

const secret = () => randomBytes(16).toString('hex');

const RUN_DIR_PREFIX = 'logplatform-stack-';

/** A launcher killed with SIGKILL cannot clean up; the watchdog stops its JVMs and the next launch removes its data. */
function removeAbandonedRunDirs(): void {
  for (const entry of readdirSync(os.tmpdir())) {
    if (!entry.startsWith(RUN_DIR_PREFIX)) continue;
    const dir = path.join(os.tmpdir(), entry);
    let owner: number;
    try {
      owner = Number(readFileSync(path.join(dir, 'owner.pid'), 'utf8'));
    } catch {
      continue;
    }
    if (owner > 0 && !processAlive(owner)) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Starts Kafka and Elasticsearch on loopback (downloading them on first use) and waits until both
 * really answer. Kafka and Elasticsearch start side by side; any failure stops what already started.
 */
export async function startLocalStack(settings: StackSettings, progress: (line: string) => void, options: StackOptions = {}): Promise<LocalStack> {
  const artifacts = await ensureArtifacts(settings.STACK_CACHE_DIR, progress);
  const claimed = new Set<number>();
  const kafkaPort = await claimPort(settings.STACK_KAFKA_PORT, 'kafka', 'STACK_KAFKA_PORT', claimed);
  const controllerPort = await claimPort(settings.STACK_KAFKA_CONTROLLER_PORT, 'kafka controller', 'STACK_KAFKA_CONTROLLER_PORT', claimed);
  const httpPort = await claimPort(settings.STACK_ELASTICSEARCH_PORT, 'elasticsearch http', 'STACK_ELASTICSEARCH_PORT', claimed);
  const transportPort = await claimPort(settings.STACK_ELASTICSEARCH_TRANSPORT_PORT, 'elasticsearch transport', 'STACK_ELASTICSEARCH_TRANSPORT_PORT', claimed);
  const sslPort = options.secure ? await claimPort(0, 'kafka ssl', 'STACK_KAFKA_PORT', claimed) : undefined;
  removeAbandonedRunDirs();
  const runDir = mkdtempSync(path.join(os.tmpdir(), RUN_DIR_PREFIX));
  writeFileSync(path.join(runDir, 'owner.pid'), String(process.pid));
  progress(`starting kafka and elasticsearch (run folder ${runDir})`);

  // a server that failed its readiness check may still be running, so stop by run folder, not by result
  const ours = () => [...ServerProcess.live].filter((server) => server.options.logFile.startsWith(runDir));
  const stopAll = async () => {
    await Promise.all(ours().map((server) => server.stop()));
    rmSync(runDir, { recursive: true, force: true });
  };

  let security: LocalStackSecurity | undefined;
  let kafkaSecurity: KafkaSecurity | undefined;
  if (options.secure) {
    progress('making a CA and certificates for this run (keytool)');
    let certificates;
    try {
      certificates = await createStackCertificates(artifacts.javaHome, path.join(runDir, 'certs'));
    } catch (error) {
      await stopAll();
      throw error;
    }
    const user = (username: string): KafkaUser => ({ username, password: secret() });
    security = {
      caFile: certificates.caFile,
      elasticsearch: { username: 'elastic', password: secret() },
      kafka: {
        plain: user('plain-client'),
        scramSha256: user('scram256-client'),
        scramSha512: user('scram512-client'),
        sslBrokers: [`127.0.0.1:${sslPort}`],
        clientCertFile: certificates.clientCertFile,
        clientKeyFile: certificates.clientKeyFile,
      },
    };
    kafkaSecurity = {
      certificates,
      sslPort: sslPort!,
      admin: user('broker-admin'),
      plainUsers: [security.kafka.plain],
      scramUsers: [
        { ...security.kafka.scramSha256, mechanism: 'SCRAM-SHA-256' },
        { ...security.kafka.scramSha512, mechanism: 'SCRAM-SHA-512' },
      ],
    };
  }

  const kafka = startKafka({ ...artifacts, runDir, port: kafkaPort, controllerPort, heap: settings.STACK_KAFKA_HEAP, security: kafkaSecurity });
  const elasticsearch = startElasticsearch({
    ...artifacts,
    runDir,
    httpPort,
    transportPort,
    heap: settings.STACK_ELASTICSEARCH_HEAP,
    unprivilegedUser: settings.STACK_ELASTICSEARCH_USER,
    security: security && kafkaSecurity ? { elasticPassword: security.elasticsearch.password, certificates: kafkaSecurity.certificates } : undefined,
  });
  const results = await Promise.allSettled([kafka, elasticsearch]);
  const failures = results.filter((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failures.length > 0) {
    await stopAll();
    throw failures[0]!.reason;
  }
  const [runningKafka, runningElasticsearch] = results.map((result) => (result as PromiseFulfilledResult<RunningKafka | RunningElasticsearch>).value) as [
    RunningKafka,
    RunningElasticsearch,
  ];
  return {
    kafkaBrokers: runningKafka.brokers,
    elasticsearchUrl: runningElasticsearch.url,
    runDir,
    security,
    stop: stopAll,
  };
}
