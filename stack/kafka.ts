import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { Kafka, logLevel, type KafkaConfig } from 'kafkajs';
import type { StackCertificates } from './certificates.ts';
import { ServerProcess, StackError } from './server-process.ts';

export interface KafkaOptions {
  javaHome: string;
  kafkaLibs: string;
  runDir: string;
  port: number;
  controllerPort: number;
  heap: string;
  /** TLS and SASL on; `port` becomes the SASL_SSL listener. Default: one PLAINTEXT listener. */
  security?: KafkaSecurity;
  /** One node of a cluster. Default: a cluster of this one node (node 1). */
  cluster?: KafkaClusterNode;
}

/**
 * A combined broker and controller node of a cluster in which every node is a voter of the
 * controller quorum: node `nodeId` (1-based) listens for controllers on `controllerPorts[nodeId - 1]`.
 */
export interface KafkaClusterNode {
  nodeId: number;
  controllerPorts: number[];
  /** Every node of one cluster formats its storage with the same id. */
  clusterId: string;
}

/** A fresh KRaft cluster id: 16 random bytes in base64url, as kafka-storage random-uuid prints. */
export function newKafkaClusterId(): string {
  return randomBytes(16).toString('base64url');
}

export interface KafkaUser {
  username: string;
  password: string;
}

export interface KafkaSecurity {
  certificates: StackCertificates;
  /** A second listener: SSL that requires a client certificate signed by the stack's CA. */
  sslPort: number;
  /** The broker's own PLAIN user (inter-broker traffic and the readiness check). */
  admin: KafkaUser;
  /** Users of SASL PLAIN, declared in the listener's JAAS configuration. */
  plainUsers: KafkaUser[];
  /** SCRAM credentials, written into the metadata log when the storage is formatted. */
  scramUsers: Array<KafkaUser & { mechanism: 'SCRAM-SHA-256' | 'SCRAM-SHA-512' }>;
}

export interface RunningKafka {
  brokers: string[];
  process: ServerProcess;
}

/** A JAAS value in a properties file: quoted, with backslashes and quotes escaped. */
function jaasQuoted(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

function listenerProperties(options: KafkaOptions): string[] {
  const security = options.security;
  const controller = `CONTROLLER://127.0.0.1:${options.controllerPort}`;
  if (!security) {
    return [
      `listeners=PLAINTEXT://127.0.0.1:${options.port},${controller}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${options.port}`,
      'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
      'inter.broker.listener.name=PLAINTEXT',
    ];
  }
  const { certificates, admin } = security;
  const plainUsers = [admin, ...security.plainUsers].map((user) => `user_${user.username}=${jaasQuoted(user.password)}`).join(' ');
  return [
    // no plaintext listener for clients: only the controller, which listens on loopback for this one node
    `listeners=SASL_SSL://127.0.0.1:${options.port},SSL://127.0.0.1:${security.sslPort},${controller}`,
    `advertised.listeners=SASL_SSL://127.0.0.1:${options.port},SSL://127.0.0.1:${security.sslPort}`,
    'listener.security.protocol.map=CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL',
    'inter.broker.listener.name=SASL_SSL',
    'sasl.mechanism.inter.broker.protocol=PLAIN',
    'sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512',
    `listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=${jaasQuoted(admin.username)} password=${jaasQuoted(admin.password)} ${plainUsers};`,
    'listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;',
    'listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;',
    'listener.name.ssl.ssl.client.auth=required',
    `ssl.keystore.location=${certificates.serverKeystore}`,
    'ssl.keystore.type=PKCS12',
    `ssl.keystore.password=${certificates.storePassword}`,
    `ssl.key.password=${certificates.storePassword}`,
    `ssl.truststore.location=${certificates.truststore}`,
    'ssl.truststore.type=PKCS12',
    `ssl.truststore.password=${certificates.storePassword}`,
  ];
}

/** How the launcher's own client reaches the broker: as the broker's admin user when security is on. */
function readinessClient(options: KafkaOptions): Pick<KafkaConfig, 'ssl' | 'sasl'> {
  if (!options.security) return {};
  const { admin, certificates } = options.security;
  return { ssl: { ca: [readFileSync(certificates.caFile, 'utf8')] }, sasl: { mechanism: 'plain', username: admin.username, password: admin.password } };
}

/** Replication a cluster of this many nodes asks for: every partition on 3 nodes, writes acknowledged by 2. */
function replicationProperties(nodes: number): string[] {
  if (nodes === 1) {
    return ['offsets.topic.replication.factor=1', 'transaction.state.log.replication.factor=1', 'transaction.state.log.min.isr=1'];
  }
  const factor = Math.min(3, nodes);
  const minInSync = Math.max(1, factor - 1);
  return [
    `default.replication.factor=${factor}`,
    // an acks=all write needs this many copies: one broker may be down, a lone survivor refuses writes
    `min.insync.replicas=${minInSync}`,
    `offsets.topic.replication.factor=${factor}`,
    `transaction.state.log.replication.factor=${factor}`,
    `transaction.state.log.min.isr=${minInSync}`,
    // a replica that is behind must never become leader: that would drop acknowledged writes
    'unclean.leader.election.enable=false',
  ];
}

/** The server.properties of one node (pure, for tests). */
export function serverProperties(options: KafkaOptions, logDir: string): string {
  const nodeId = options.cluster?.nodeId ?? 1;
  const controllerPorts = options.cluster?.controllerPorts ?? [options.controllerPort];
  return [
    'process.roles=broker,controller',
    `node.id=${nodeId}`,
    `controller.quorum.voters=${controllerPorts.map((port, index) => `${index + 1}@127.0.0.1:${port}`).join(',')}`,
    ...listenerProperties(options),
    'controller.listener.names=CONTROLLER',
    `log.dirs=${logDir}`,
    'num.partitions=1',
    ...replicationProperties(controllerPorts.length),
    'offsets.topic.num.partitions=4',
    // single node: a consumer group should not wait 3 s for members that will never come
    'group.initial.rebalance.delay.ms=0',
    'auto.create.topics.enable=false',
    'delete.topic.enable=true',
    '',
  ].join('\n');
}

/** The node's folder in the run folder: `kafka` alone, `kafka-<id>` in a cluster. */
export function kafkaNodeDir(options: Pick<KafkaOptions, 'runDir' | 'cluster'>): string {
  return path.join(options.runDir, options.cluster ? `kafka-${options.cluster.nodeId}` : 'kafka');
}

const log4jProperties = [
  'log4j.rootLogger=INFO, stdout',
  'log4j.appender.stdout=org.apache.log4j.ConsoleAppender',
  'log4j.appender.stdout.layout=org.apache.log4j.PatternLayout',
  'log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n',
  'log4j.logger.kafka.request.logger=WARN',
  'log4j.logger.org.apache.kafka.controller=INFO',
  'log4j.logger.state.change.logger=WARN',
  '',
].join('\n');

/**
 * Formats a fresh KRaft log directory (or reuses the one a previous start in `runDir` formatted) and
 * starts one combined broker/controller node; in a cluster the other voters must start alongside.
 */
export async function startKafka(options: KafkaOptions): Promise<RunningKafka> {
  const home = kafkaNodeDir(options);
  const dataDir = path.join(home, 'data');
  mkdirSync(dataDir, { recursive: true });
  const propertiesFile = path.join(home, 'server.properties');
  const log4jFile = path.join(home, 'log4j.properties');
  writeFileSync(propertiesFile, serverProperties(options, dataDir));
  writeFileSync(log4jFile, log4jProperties);

  const java = path.join(options.javaHome, 'bin', 'java');
  const classpath = `${options.kafkaLibs}/*`;
  const logging = `-Dlog4j.configuration=file:${log4jFile}`;
  // base64url ids may start with '-': passed as --cluster-id=<id> so it is never read as an option
  const clusterId = options.cluster?.clusterId ?? newKafkaClusterId();
  const scram = (options.security?.scramUsers ?? []).flatMap((user) => ['--add-scram', `${user.mechanism}=[name=${user.username},password=${user.password}]`]);
  // a restart in the same run folder keeps its log: formatting again would refuse (or wipe) it
  const format = existsSync(path.join(dataDir, 'meta.properties'))
    ? { status: 0, stderr: '', stdout: '' }
    : spawnSync(
        java,
        ['-Xmx256m', logging, '-cp', classpath, 'kafka.tools.StorageTool', 'format', `--cluster-id=${clusterId}`, '-c', propertiesFile, ...scram],
        {
          encoding: 'utf8',
        },
      );
  if (format.status !== 0) {
    throw new StackError(`kafka storage format failed: ${format.stderr || format.stdout}`);
  }

  const server = new ServerProcess({
    name: options.cluster ? `kafka-${options.cluster.nodeId}` : 'kafka',
    command: java,
    args: [
      `-Xms${options.heap}`,
      `-Xmx${options.heap}`,
      '-XX:+UseG1GC',
      '-XX:MaxGCPauseMillis=20',
      '-Djava.awt.headless=true',
      logging,
      `-Dkafka.logs.dir=${home}`,
      '-cp',
      classpath,
      'kafka.Kafka',
      propertiesFile,
    ],
    logFile: path.join(home, 'kafka.log'),
  });
  const brokers = [`127.0.0.1:${options.port}`];
  await waitForKafka(brokers, server, readinessClient(options), options.cluster);
  return { brokers, process: server };
}

/**
 * Ready means a message produced to a fresh topic can be consumed back; in a cluster, through this
 * node, to a topic on every node (so the first start waits for all of them), and the cluster lists
 * this node as a live broker. On a busy 2-core machine a broker has needed more than 90 s; one that
 * dies is reported at once, so a long wait costs nothing.
 */
async function waitForKafka(
  brokers: string[],
  server: ServerProcess,
  access: Pick<KafkaConfig, 'ssl' | 'sasl'>,
  cluster: KafkaClusterNode | undefined,
  timeoutMs = 300_000,
): Promise<void> {
  const kafka = new Kafka({ clientId: 'stack-readiness', brokers, ...access, logLevel: logLevel.NOTHING, retry: { retries: 0 } });
  const deadline = Date.now() + timeoutMs;
  const topic = 'stack-readiness';
  const replicationFactor = cluster ? cluster.controllerPorts.length : 1;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (!server.running) {
      throw new StackError(`kafka exited during start-up:\n${server.logTail()}`);
    }
    const admin = kafka.admin();
    const producer = kafka.producer();
    // one group per node: nodes checked side by side must not rebalance each other
    const consumer = kafka.consumer({ groupId: cluster ? `stack-readiness-${cluster.nodeId}` : 'stack-readiness' });
    try {
      await admin.connect();
      if (cluster) {
        const { brokers: live } = await admin.describeCluster();
        if (!live.some((broker) => broker.nodeId === cluster.nodeId)) throw new Error(`node ${cluster.nodeId} is not yet a live broker of the cluster`);
      }
      const topics = await admin.listTopics();
      if (!topics.includes(topic)) {
        await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor }], waitForLeaders: true });
      }
      const marker = randomBytes(8).toString('hex');
      await producer.connect();
      await producer.send({ topic, messages: [{ value: marker }] });
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      const seen = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), 15_000);
        void consumer.run({
          eachMessage: async ({ message }) => {
            if (message.value?.toString() === marker) {
              clearTimeout(timer);
              resolve(true);
            }
          },
        });
      });
      if (seen) return;
      lastError = new Error('produced readiness message was not consumed within 15 s');
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      await Promise.allSettled([consumer.disconnect(), producer.disconnect(), admin.disconnect()]);
    }
  }
  throw new StackError(`kafka did not become ready within ${timeoutMs / 1000} s: ${String(lastError)}\n${server.logTail()}`);
}
