import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { ServerProcess, StackError } from './server-process.ts';

export interface KafkaOptions {
  javaHome: string;
  kafkaLibs: string;
  runDir: string;
  port: number;
  controllerPort: number;
  heap: string;
}

export interface RunningKafka {
  brokers: string[];
  process: ServerProcess;
}

function serverProperties(options: KafkaOptions, logDir: string): string {
  return [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${options.controllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:${options.port},CONTROLLER://127.0.0.1:${options.controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${options.port}`,
    'controller.listener.names=CONTROLLER',
    'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
    'inter.broker.listener.name=PLAINTEXT',
    `log.dirs=${logDir}`,
    'num.partitions=1',
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=4',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    // single node: a consumer group should not wait 3 s for members that will never come
    'group.initial.rebalance.delay.ms=0',
    'auto.create.topics.enable=false',
    'delete.topic.enable=true',
    '',
  ].join('\n');
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

/** Formats a fresh KRaft log directory and starts a single combined broker/controller node. */
export async function startKafka(options: KafkaOptions): Promise<RunningKafka> {
  const home = path.join(options.runDir, 'kafka');
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
  const clusterId = randomBytes(16).toString('base64url');
  const format = spawnSync(java, ['-Xmx256m', logging, '-cp', classpath, 'kafka.tools.StorageTool', 'format', `--cluster-id=${clusterId}`, '-c', propertiesFile], {
    encoding: 'utf8',
  });
  if (format.status !== 0) {
    throw new StackError(`kafka storage format failed: ${format.stderr || format.stdout}`);
  }

  const server = new ServerProcess({
    name: 'kafka',
    command: java,
    args: [
      `-Xms${options.heap}`, `-Xmx${options.heap}`,
      '-XX:+UseG1GC', '-XX:MaxGCPauseMillis=20',
      '-Djava.awt.headless=true',
      logging,
      `-Dkafka.logs.dir=${home}`,
      '-cp', classpath,
      'kafka.Kafka', propertiesFile,
    ],
    logFile: path.join(home, 'kafka.log'),
  });
  const brokers = [`127.0.0.1:${options.port}`];
  await waitForKafka(brokers, server);
  return { brokers, process: server };
}

/** Ready means a message produced to a fresh topic can be consumed back. */
async function waitForKafka(brokers: string[], server: ServerProcess, timeoutMs = 90_000): Promise<void> {
  const kafka = new Kafka({ clientId: 'stack-readiness', brokers, logLevel: logLevel.NOTHING, retry: { retries: 0 } });
  const deadline = Date.now() + timeoutMs;
  const topic = 'stack-readiness';
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (!server.running) {
      throw new StackError(`kafka exited during start-up:\n${server.logTail()}`);
    }
    const admin = kafka.admin();
    const producer = kafka.producer();
    const consumer = kafka.consumer({ groupId: 'stack-readiness' });
    try {
      await admin.connect();
      const topics = await admin.listTopics();
      if (!topics.includes(topic)) {
        await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true });
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
