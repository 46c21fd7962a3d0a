import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { loadConfig, type Config } from '../shared/config.ts';
import { answerHelp } from '../shared/command-help.ts';
import { createElasticsearchClient, elasticsearchConnection } from '../shared/elasticsearch.ts';
import { kafkaConnection } from '../shared/kafka-connection.ts';
import { humanLogLine } from '../shared/log-format.ts';
import { createLogger } from '../shared/logger.ts';
import { loaderArgs, modulePath, repositoryRoot } from '../shared/module-runtime.ts';
import { sourceIndexPattern } from '../shared/partitions.ts';
import { SOURCES } from '../shared/sources.ts';
import { publishDemoData } from './publish-demo-data.ts';
import { startLocalStack, type LocalStack } from '../stack/index.ts';
import { waitForHealth } from './health-wait.ts';
import { removeStartState, startStateFile, writeStartState } from './start-state.ts';
import { QUERY_SERVICE_ENV, QUERY_SERVICE_NODE_ARGS } from '../shared/query-service-start.ts';
import { INGEST_WORKER_ENV, INGEST_WORKER_NODE_ARGS } from '../ingest/worker-start.ts';

/**
 * `npm start`: the local stack when no external servers are named, then the ingest worker and the
 * query service as separate processes; prints `ready: http://HOST:PORT` once events can be ingested
 * and queried. Ctrl-C stops everything it started. In a terminal, its own logs and its children's
 * are lines for people; otherwise they stay JSON.
 */
const DEMO_EVENTS = 20_000;

answerHelp(`Usage: npm start
Runs the platform on this machine: a local Kafka and Elasticsearch (unless KAFKA_BROKERS and
ELASTICSEARCH_URL name servers of yours), the ingest worker and the query service, then publishes
demo events and prints "ready: <url>" once they can be queried. Ctrl-C stops everything it started.
While it runs, npm run keys, produce, demo-data, endpoints and indices in another terminal use its servers.`);
const config = loadConfig(process.env);
const human = process.stdout.isTTY === true;
const logger = createLogger('start', config.LOG_LEVEL, { human });
const stateFile = startStateFile(config.STACK_CACHE_DIR);
const children: ChildProcess[] = [];
let stack: LocalStack | undefined;
let stopping = false;

/** A child's log line as this terminal wants it. */
function relay(line: string): void {
  process.stderr.write(`${human ? humanLogLine(line, process.stderr.isTTY === true) : line}\n`);
}

/**
 * Starts a service process and resolves with the URL it announces on stdout (`<label>: <url>`),
 * so ports chosen by the OS (0) are learned rather than assumed.
 */
function spawnService(entry: string, label: string, env: NodeJS.ProcessEnv, nodeArgs: readonly string[] = []): Promise<string> {
  const child = spawn(process.execPath, [...loaderArgs, ...nodeArgs, modulePath(entry)], {
    cwd: repositoryRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  createInterface({ input: child.stderr! }).on('line', relay);
  const announced = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const prefix = `${label}: `;
      if (line.startsWith(prefix)) resolve(line.slice(prefix.length).trim());
      else console.log(line);
    });
    child.once('exit', () => reject(new Error(`${entry} exited before it was listening`)));
  });
  child.on('exit', (code, signal) => {
    if (stopping) return;
    // Ctrl-C reaches the children too; a clean exit of theirs starts a clean shutdown of ours
    if (code !== 0) logger.error({ entry, code, signal }, 'a service exited unexpectedly; stopping everything');
    void shutdown(code === 0 ? 0 : 1);
  });
  return announced;
}

/** Waits until the demo events are searchable, so the first query a newcomer runs returns rows. */
async function waitForDemoData(elasticsearchUrl: string, expected: number): Promise<void> {
  const client = createElasticsearchClient(elasticsearchConnection(config, elasticsearchUrl));
  const indices = SOURCES.map((source) => sourceIndexPattern(config.INDEX_PREFIX, source.name)).join(',');
  const started = Date.now();
  const deadline = started + 180_000;
  let last = -1;
  try {
    while (Date.now() < deadline) {
      const { count } = await client.count({ index: indices, ignore_unavailable: true, allow_no_indices: true });
      if (count !== last) logger.debug({ searchable: count, expected }, 'demo data arriving');
      last = count;
      if (count >= expected) {
        logger.info({ events: count, seconds: Math.round((Date.now() - started) / 100) / 10 }, 'demo data searchable');
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    throw new Error(`only ${last} of ${expected} demo events became searchable within 180 s`);
  } finally {
    await client.close();
  }
}

/** The security variables that differ from their defaults (they describe servers the operator runs). */
function securityVariablesSet(runConfig: Config): string[] {
  const settings: Array<[string, boolean]> = [
    ['ELASTICSEARCH_API_KEY', runConfig.ELASTICSEARCH_API_KEY !== undefined],
    ['ELASTICSEARCH_USERNAME', runConfig.ELASTICSEARCH_USERNAME !== undefined],
    ['ELASTICSEARCH_CA_FILE', runConfig.ELASTICSEARCH_CA_FILE !== undefined],
    ['ELASTICSEARCH_TLS_VERIFY', !runConfig.ELASTICSEARCH_TLS_VERIFY],
    ['KAFKA_SECURITY_PROTOCOL', runConfig.KAFKA_SECURITY_PROTOCOL !== 'PLAINTEXT'],
  ];
  return settings.filter(([, set]) => set).map(([name]) => name);
}

async function shutdown(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  removeStartState(stateFile);
  logger.info('stopping');
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
          child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
  await stack?.stop();
  logger.info('stopped');
  process.exit(code);
}

async function main(runConfig: Config): Promise<void> {
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  process.on('SIGHUP', () => void shutdown(0));

  const external = runConfig.KAFKA_BROKERS !== undefined || runConfig.ELASTICSEARCH_URL !== undefined;
  if (external && !(runConfig.KAFKA_BROKERS && runConfig.ELASTICSEARCH_URL)) {
    throw new Error('set both KAFKA_BROKERS and ELASTICSEARCH_URL to use external servers, or neither to run the local stack');
  }
  const security = securityVariablesSet(runConfig);
  if (!external && security.length > 0) {
    throw new Error(
      `${security.join(', ')} set, but no KAFKA_BROKERS / ELASTICSEARCH_URL: the local stack is plaintext and unauthenticated; name your secured servers or unset these`,
    );
  }
  let brokers = runConfig.KAFKA_BROKERS;
  let elasticsearchUrl = runConfig.ELASTICSEARCH_URL;
  if (!external) {
    stack = await startLocalStack(runConfig, (line) => logger.info(line));
    brokers = stack.kafkaBrokers;
    elasticsearchUrl = stack.elasticsearchUrl;
    logger.info({ kafka: brokers.join(','), elasticsearch: elasticsearchUrl }, 'local stack ready');
  }
  // a local first run gets a key to try the API with; against external servers the operator brings one
  const bootstrapKey = runConfig.BOOTSTRAP_API_KEY ?? (external ? undefined : `dev_${randomBytes(24).toString('base64url')}`);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    KAFKA_BROKERS: brokers!.join(','),
    ELASTICSEARCH_URL: elasticsearchUrl,
    ...(bootstrapKey ? { BOOTSTRAP_API_KEY: bootstrapKey } : {}),
  };
  // the tools (npm run keys, produce, demo-data, endpoints, indices) in another terminal find these servers without being told
  mkdirSync(runConfig.STACK_CACHE_DIR, { recursive: true });
  writeStartState(stateFile, env);
  const [ingestHealth, base] = await Promise.all([
    spawnService('ingest/main', 'ingest', { ...env, ...INGEST_WORKER_ENV }, INGEST_WORKER_NODE_ARGS),
    spawnService('src/main', 'query', { ...env, ...QUERY_SERVICE_ENV }, QUERY_SERVICE_NODE_ARGS),
  ]);
  const stopped = () => stopping;
  await Promise.all([waitForHealth(ingestHealth, 'ingest worker', { stopped }), waitForHealth(`${base}/health`, 'query service', { stopped })]);

  if (!external) {
    const now = new Date();
    const { published } = await publishDemoData({
      kafka: kafkaConnection(runConfig, brokers),
      topics: runConfig,
      events: DEMO_EVENTS,
      from: new Date(now.getTime() - 24 * 3600_000),
      to: now,
      projects: ['default'],
      logger,
    });
    await waitForDemoData(elasticsearchUrl!, published);
  }

  console.log(`ready: ${base}`);
  if (bootstrapKey && !runConfig.BOOTSTRAP_API_KEY) {
    console.log(`api key for this run (BOOTSTRAP_API_KEY): ${bootstrapKey}`);
    console.log(`try: curl -H 'X-API-KEY: ${bootstrapKey}' '${base}/api/endpoints/query/usage.api-counts?interval=hourly&project=default'`);
  }
  console.log('npm run keys, produce, demo-data, endpoints and indices in another terminal use these servers; Ctrl-C stops everything');
}

main(config).catch((error: unknown) => {
  // a wait cut short by Ctrl-C is not a failure
  if (stopping) return;
  logger.error({ err: error }, error instanceof Error ? error.message : String(error));
  void shutdown(1);
});
