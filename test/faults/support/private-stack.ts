import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../../shared/config.ts';
import { ensureArtifacts, type StackArtifacts } from '../../../stack/artifacts.ts';
import { startElasticsearch, type RunningElasticsearch } from '../../../stack/elasticsearch.ts';
import { startKafka, type RunningKafka } from '../../../stack/kafka.ts';
import { claimPort } from '../../../stack/ports.ts';
import { ServerProcess, StackError } from '../../../stack/server-process.ts';

/** Extra time a started node gets beyond the launcher's own 120 s when the shared machine is loaded. */
const EXTRA_START_MS = 240_000;

/**
 * A Kafka broker and an Elasticsearch node of the fault suite's own (own folder, own ports), so a
 * test can stop and start them without touching servers other tests use. A restart reuses the
 * folder and ports: the broker keeps its log and Elasticsearch its data, as after a real restart.
 */
export class PrivateStack {
  private kafka: RunningKafka | undefined;
  private elasticsearch: RunningElasticsearch | undefined;

  private constructor(
    private readonly artifacts: StackArtifacts,
    readonly runDir: string,
    private readonly ports: { kafka: number; controller: number; http: number; transport: number },
    private readonly elasticsearchUser: string,
  ) {}

  /** Starts the servers asked for (both by default); the other can be started later. */
  static async start(label: string, servers: { kafka: boolean; elasticsearch: boolean } = { kafka: true, elasticsearch: true }): Promise<PrivateStack> {
    const defaults = loadConfig({});
    const artifacts = await ensureArtifacts(defaults.STACK_CACHE_DIR, () => {});
    const claimed = new Set<number>();
    const ports = {
      kafka: await claimPort(0, 'fault suite kafka', 'none', claimed),
      controller: await claimPort(0, 'fault suite kafka controller', 'none', claimed),
      http: await claimPort(0, 'fault suite elasticsearch http', 'none', claimed),
      transport: await claimPort(0, 'fault suite elasticsearch transport', 'none', claimed),
    };
    const stack = new PrivateStack(artifacts, mkdtempSync(path.join(os.tmpdir(), `logplatform-faults-${label}-`)), ports, defaults.STACK_ELASTICSEARCH_USER);
    try {
      await Promise.all([servers.kafka ? stack.startKafka() : undefined, servers.elasticsearch ? stack.startElasticsearch() : undefined]);
    } catch (error) {
      await stack.stop();
      throw error;
    }
    return stack;
  }

  get kafkaBrokers(): string[] {
    return [`127.0.0.1:${this.ports.kafka}`];
  }

  get elasticsearchUrl(): string {
    return `http://127.0.0.1:${this.ports.http}`;
  }

  async startKafka(): Promise<void> {
    this.kafka = await startKafka({ ...this.artifacts, runDir: this.runDir, port: this.ports.kafka, controllerPort: this.ports.controller, heap: '512m' });
  }

  async stopKafka(): Promise<void> {
    await this.kafka?.process.stop();
    this.kafka = undefined;
  }

  async startElasticsearch(): Promise<void> {
    try {
      this.elasticsearch = await startElasticsearch({
        ...this.artifacts,
        runDir: this.runDir,
        httpPort: this.ports.http,
        transportPort: this.ports.transport,
        heap: '512m',
        unprivilegedUser: this.elasticsearchUser,
      });
    } catch (error) {
      // the launcher gives up after 120 s but leaves the node running: on a machine shared by several
      // stacks it is often still starting, so wait for it a while longer before calling it a failure
      const node = [...ServerProcess.live].find((server) => server.options.logFile.startsWith(path.join(this.runDir, 'elasticsearch')));
      if (!(error instanceof StackError) || !node?.running || !(await this.elasticsearchAnswers(EXTRA_START_MS))) {
        await node?.stop();
        throw error;
      }
      this.elasticsearch = { url: this.elasticsearchUrl, process: node };
    }
  }

  private async elasticsearchAnswers(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      try {
        const response = await fetch(`${this.elasticsearchUrl}/_cluster/health?wait_for_status=yellow&timeout=2s`, { signal: AbortSignal.timeout(5000) });
        if (response.ok) return true;
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    return false;
  }

  async stopElasticsearch(): Promise<void> {
    await this.elasticsearch?.process.stop();
    this.elasticsearch = undefined;
  }

  /** Stops whatever runs and removes the folder. */
  async stop(): Promise<void> {
    await Promise.all([this.stopKafka(), this.stopElasticsearch()]);
    rmSync(this.runDir, { recursive: true, force: true });
  }
}
