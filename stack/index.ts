import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ensureArtifacts } from './artifacts.ts';
import { createStackCertificates } from './certificates.ts';
import { startElasticsearch, type ElasticsearchOptions, type RunningElasticsearch } from './elasticsearch.ts';
import { newKafkaClusterId, startKafka, type KafkaOptions, type KafkaSecurity, type KafkaUser, type RunningKafka } from './kafka.ts';
import { claimPort } from './ports.ts';
import { processAlive, ServerProcess, StackError } from './server-process.ts';
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
  /** The SASL_SSL listener when the stack is secured; one per broker in a cluster. */
  kafkaBrokers: string[];
  /** https:// when the stack is secured; in a cluster every node's URL, comma-separated (as ELASTICSEARCH_URL takes them). */
  elasticsearchUrl: string;
  runDir: string;
  /** How to get in, when started with `secure`. */
  security?: LocalStackSecurity;
  /** Every server of the stack, one per node, for tests that crash and restart them. */
  servers: { kafka: StackServer[]; elasticsearch: StackServer[] };
  stop(): Promise<void>;
}

/** One server (a Kafka node or an Elasticsearch node) of the stack. */
export interface StackServer {
  /** `kafka`, `elasticsearch`; in a cluster `kafka-<id>`, `es-<n>`. */
  name: string;
  /** `127.0.0.1:<port>` for a broker, the HTTP URL for Elasticsearch. */
  address: string;
  readonly running: boolean;
  /** SIGKILL of the server's whole process group, as a crash: no shutdown hook runs. */
  kill(): Promise<void>;
  /** Starts it again on the same ports and data (after kill); resolves when it answers again. */
  restart(): Promise<void>;
}

export interface StackOptions {
  /**
   * Elasticsearch with security on (HTTPS, the `elastic` user, API keys) and Kafka with a SASL_SSL
   * listener (PLAIN and SCRAM users) and an SSL listener that requires a client certificate, all
   * signed by a CA made for this run. Default: plaintext and unauthenticated.
   */
  secure?: boolean;
  /**
   * Three Kafka nodes (each broker and controller, the three forming the controller quorum;
   * replication factor 3, min.insync.replicas 2) and three Elasticsearch nodes in one cluster, with
   * smaller heaps. Node n (0-based) listens on each configured port plus 10 n.
   */
  cluster?: boolean;
}

/** Nodes of each server in cluster mode. */
export const CLUSTER_NODES = 3;
/** Each node's ports are the configured ones plus this many times its 0-based number. */
export const CLUSTER_PORT_STEP = 10;
/** What the platform should ask of a cluster stack: every topic partition on 3 brokers, one replica of every shard. */
export const CLUSTER_TOPIC_REPLICATION_FACTOR = 3;
export const CLUSTER_INDEX_REPLICAS = 1;
/** Heaps per node when STACK_ELASTICSEARCH_HEAP / STACK_KAFKA_HEAP are unset. */
export const DEFAULT_HEAPS = { single: { elasticsearch: '1g', kafka: '512m' }, cluster: { elasticsearch: '384m', kafka: '256m' } } as const;

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
  if (options.cluster && options.secure) throw new StackError('--cluster and --secure cannot be combined yet: the secured stack is single-node');
  const nodes = options.cluster ? CLUSTER_NODES : 1;
  const heaps = options.cluster ? DEFAULT_HEAPS.cluster : DEFAULT_HEAPS.single;
  const artifacts = await ensureArtifacts(settings.STACK_CACHE_DIR, progress);
  const claimed = new Set<number>();
  // node by node, in a fixed order, so that a port in use is reported with the node it was meant for
  const ports: { kafka: number; controller: number; http: number; transport: number }[] = [];
  for (let node = 0; node < nodes; node += 1) {
    const at = (port: number) => (port === 0 ? 0 : port + node * CLUSTER_PORT_STEP);
    const of = (purpose: string) => (options.cluster ? `${purpose}, node ${node + 1}` : purpose);
    ports.push({
      kafka: await claimPort(at(settings.STACK_KAFKA_PORT), of('kafka'), 'STACK_KAFKA_PORT', claimed),
      controller: await claimPort(at(settings.STACK_KAFKA_CONTROLLER_PORT), of('kafka controller'), 'STACK_KAFKA_CONTROLLER_PORT', claimed),
      http: await claimPort(at(settings.STACK_ELASTICSEARCH_PORT), of('elasticsearch http'), 'STACK_ELASTICSEARCH_PORT', claimed),
      transport: await claimPort(at(settings.STACK_ELASTICSEARCH_TRANSPORT_PORT), of('elasticsearch transport'), 'STACK_ELASTICSEARCH_TRANSPORT_PORT', claimed),
    });
  }
  const sslPort = options.secure ? await claimPort(0, 'kafka ssl', 'STACK_KAFKA_PORT', claimed) : undefined;
  removeAbandonedRunDirs();
  const runDir = mkdtempSync(path.join(os.tmpdir(), RUN_DIR_PREFIX));
  writeFileSync(path.join(runDir, 'owner.pid'), String(process.pid));
  progress(
    options.cluster
      ? `starting ${nodes} kafka nodes and ${nodes} elasticsearch nodes (run folder ${runDir})`
      : `starting kafka and elasticsearch (run folder ${runDir})`,
  );

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

  const kafkaClusterId = newKafkaClusterId();
  const kafkaNodes: KafkaOptions[] = ports.map((node, index) => ({
    ...artifacts,
    runDir,
    port: node.kafka,
    controllerPort: node.controller,
    heap: settings.STACK_KAFKA_HEAP ?? heaps.kafka,
    security: kafkaSecurity,
    cluster: options.cluster ? { nodeId: index + 1, controllerPorts: ports.map((each) => each.controller), clusterId: kafkaClusterId } : undefined,
  }));
  const elasticsearchNodes: ElasticsearchOptions[] = ports.map((node, index) => ({
    ...artifacts,
    runDir,
    httpPort: node.http,
    transportPort: node.transport,
    heap: settings.STACK_ELASTICSEARCH_HEAP ?? heaps.elasticsearch,
    unprivilegedUser: settings.STACK_ELASTICSEARCH_USER,
    security: security && kafkaSecurity ? { elasticPassword: security.elasticsearch.password, certificates: kafkaSecurity.certificates } : undefined,
    cluster: options.cluster ? { nodeNumber: index + 1, transportPorts: ports.map((each) => each.transport) } : undefined,
  }));
  // every node side by side: a cluster node is ready only once the others are there too
  const started = await Promise.allSettled<RunningKafka | RunningElasticsearch>([...kafkaNodes.map(startKafka), ...elasticsearchNodes.map(startElasticsearch)]);
  const failures = started.filter((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failures.length > 0) {
    await stopAll();
    throw failures[0]!.reason;
  }
  const running = started.map((result) => (result as PromiseFulfilledResult<RunningKafka | RunningElasticsearch>).value);
  const runningKafka = running.slice(0, nodes) as RunningKafka[];
  const runningElasticsearch = running.slice(nodes) as RunningElasticsearch[];
  if (options.cluster) {
    try {
      await waitForElasticsearchNodes(runningElasticsearch[0]!.url, nodes);
    } catch (error) {
      await stopAll();
      throw error;
    }
  }
  return {
    kafkaBrokers: runningKafka.flatMap((node) => node.brokers),
    elasticsearchUrl: runningElasticsearch.map((node) => node.url).join(','),
    runDir,
    security,
    servers: {
      kafka: kafkaNodes.map((node, index) => stackServer(runningKafka[index]!, runningKafka[index]!.brokers[0]!, () => startKafka(node))),
      elasticsearch: elasticsearchNodes.map((node, index) =>
        stackServer(runningElasticsearch[index]!, runningElasticsearch[index]!.url, () => startElasticsearch(node)),
      ),
    },
    stop: stopAll,
  };
}

/** A started server that a test can crash and start again; it always refers to the latest process. */
function stackServer(first: { process: ServerProcess }, address: string, start: () => Promise<{ process: ServerProcess }>): StackServer {
  let current = first.process;
  return {
    name: current.options.name,
    address,
    get running() {
      return current.running;
    },
    kill: () => current.kill(),
    async restart() {
      if (current.running) throw new StackError(`${current.options.name} is still running: kill it before starting it again`);
      current = (await start()).process;
    },
  };
}

/** The nodes find each other by themselves; the stack is ready once all of them are in one cluster. */
async function waitForElasticsearchNodes(url: string, nodes: number, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    try {
      const response = await fetch(`${url}/_cluster/health?wait_for_nodes=${nodes}&wait_for_status=yellow&timeout=5s`);
      const body = (await response.json()) as { number_of_nodes?: number; status?: string };
      if (response.status === 200) return;
      last = `${body.number_of_nodes ?? '?'} of ${nodes} nodes, status ${body.status}`;
    } catch (error) {
      last = String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new StackError(`the elasticsearch nodes did not form one cluster of ${nodes} within ${timeoutMs / 1000} s (${last})`);
}
