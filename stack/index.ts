import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureArtifacts } from './artifacts.ts';
import { startElasticsearch, type RunningElasticsearch } from './elasticsearch.ts';
import { startKafka, type RunningKafka } from './kafka.ts';
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
  kafkaBrokers: string[];
  elasticsearchUrl: string;
  runDir: string;
  stop(): Promise<void>;
}

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
export async function startLocalStack(settings: StackSettings, progress: (line: string) => void): Promise<LocalStack> {
  const artifacts = await ensureArtifacts(settings.STACK_CACHE_DIR, progress);
  const claimed = new Set<number>();
  const kafkaPort = await claimPort(settings.STACK_KAFKA_PORT, 'kafka', 'STACK_KAFKA_PORT', claimed);
  const controllerPort = await claimPort(settings.STACK_KAFKA_CONTROLLER_PORT, 'kafka controller', 'STACK_KAFKA_CONTROLLER_PORT', claimed);
  const httpPort = await claimPort(settings.STACK_ELASTICSEARCH_PORT, 'elasticsearch http', 'STACK_ELASTICSEARCH_PORT', claimed);
  const transportPort = await claimPort(settings.STACK_ELASTICSEARCH_TRANSPORT_PORT, 'elasticsearch transport', 'STACK_ELASTICSEARCH_TRANSPORT_PORT', claimed);
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

  const kafka = startKafka({ ...artifacts, runDir, port: kafkaPort, controllerPort, heap: settings.STACK_KAFKA_HEAP });
  const elasticsearch = startElasticsearch({
    ...artifacts,
    runDir,
    httpPort,
    transportPort,
    heap: settings.STACK_ELASTICSEARCH_HEAP,
    unprivilegedUser: settings.STACK_ELASTICSEARCH_USER,
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
    stop: stopAll,
  };
}
