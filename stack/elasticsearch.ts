import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import os from 'node:os';
import path from 'node:path';
import type { StackCertificates } from './certificates.ts';
import { ServerProcess, StackError } from './server-process.ts';
import { ELASTICSEARCH_VERSION } from './versions.ts';

export interface ElasticsearchOptions {
  javaHome: string;
  elasticsearchHome: string;
  runDir: string;
  httpPort: number;
  transportPort: number;
  heap: string;
  /** Elasticsearch refuses to run as root; when we are root it runs as this user. */
  unprivilegedUser: string;
  /** Security on: HTTPS with these certificates and `elastic` with this password. Default: off. */
  security?: ElasticsearchSecurity;
  /** One node of a cluster. Default: a single-node cluster (`discovery.type: single-node`). */
  cluster?: ElasticsearchClusterNode;
}

/** Node `nodeNumber` (1-based) of a cluster whose nodes listen for each other on `transportPorts`. */
export interface ElasticsearchClusterNode {
  nodeNumber: number;
  transportPorts: number[];
}

/** A cluster node's name: `es-<n>`. */
export function elasticsearchNodeName(nodeNumber: number): string {
  return `es-${nodeNumber}`;
}

export interface ElasticsearchSecurity {
  elasticPassword: string;
  certificates: StackCertificates;
}

export interface RunningElasticsearch {
  url: string;
  process: ServerProcess;
}

interface Identity {
  uid: number;
  gid: number;
}

function ensureUser(name: string): Identity {
  const lookup = () => spawnSync('id', ['-u', name], { encoding: 'utf8' });
  if (lookup().status !== 0) {
    const created = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', name], { encoding: 'utf8' });
    if (created.status !== 0) {
      throw new StackError(`Elasticsearch cannot run as root and the user ${name} could not be created: ${created.stderr || created.error}`);
    }
  }
  const uid = Number(lookup().stdout.trim());
  const gid = Number(spawnSync('id', ['-g', name], { encoding: 'utf8' }).stdout.trim());
  return { uid, gid };
}

/** Short digest of the distribution's plugins folder (names and contents). */
function pluginsDigest(elasticsearchHome: string): string {
  const plugins = path.join(elasticsearchHome, 'plugins');
  const hash = createHash('sha256');
  const files = readdirSync(plugins, { recursive: true, encoding: 'utf8' })
    .filter((file) => statSync(path.join(plugins, file)).isFile())
    .sort();
  for (const file of files)
    hash
      .update(file)
      .update('\0')
      .update(readFileSync(path.join(plugins, file)))
      .update('\0');
  return hash.digest('hex').slice(0, 12);
}

/**
 * The unprivileged user may not be able to traverse the folder that holds the cache (a clone under
 * /root, say), so as root we run from a world-readable copy of the distribution under the temp dir.
 * The copy is named after its plugins: a rebuilt plugin gets a fresh copy, never a stale one.
 */
function readableInstall(elasticsearchHome: string): string {
  const copy = path.join(os.tmpdir(), `logplatform-elasticsearch-${ELASTICSEARCH_VERSION}-${pluginsDigest(elasticsearchHome)}`);
  if (existsSync(path.join(copy, '.complete'))) return copy;
  // copy aside, then rename into place: several launchers may start at once, none sees a half copy
  const staging = mkdtempSync(`${copy}.staging-`);
  cpSync(elasticsearchHome, staging, { recursive: true });
  spawnSync('chmod', ['-R', 'a+rX', staging]);
  writeFileSync(path.join(staging, '.complete'), '');
  try {
    renameSync(staging, copy);
  } catch {
    rmSync(staging, { recursive: true, force: true });
    if (!existsSync(path.join(copy, '.complete'))) throw new StackError(`could not prepare ${copy}; remove it and retry`);
  }
  return copy;
}

/** HTTPS with the stack's server certificate, users and API keys on; transport stays local to the one node. */
function securitySettings(security: ElasticsearchSecurity | undefined): string[] {
  if (!security) return ['xpack.security.enabled: false'];
  return [
    'xpack.security.enabled: true',
    'xpack.security.http.ssl.enabled: true',
    // inside the config folder: Elasticsearch reads TLS files from nowhere else
    'xpack.security.http.ssl.keystore.path: certs/http.p12',
    'xpack.security.authc.api_key.enabled: true',
  ];
}

/** The `elastic` password and the key store's password go into Elasticsearch's own secure settings. */
function writeSecureSettings(options: ElasticsearchOptions, home: string, configDir: string, security: ElasticsearchSecurity): void {
  mkdirSync(path.join(configDir, 'certs'), { recursive: true });
  cpSync(security.certificates.serverKeystore, path.join(configDir, 'certs', 'http.p12'));
  const added = spawnSync(
    path.join(home, 'bin', 'elasticsearch-keystore'),
    ['add', '--force', '--stdin', 'bootstrap.password', 'xpack.security.http.ssl.keystore.secure_password'],
    {
      env: { PATH: process.env.PATH, ES_JAVA_HOME: options.javaHome, ES_PATH_CONF: configDir },
      input: `${security.elasticPassword}\n${security.certificates.storePassword}\n`,
      encoding: 'utf8',
    },
  );
  if (added.status !== 0) throw new StackError(`elasticsearch-keystore could not store the secure settings: ${added.stderr || added.stdout || added.error}`);
}

/**
 * How the node finds the others. `firstStart`: the cluster is bootstrapped from the listed
 * master-eligible nodes; a node that has joined before keeps its cluster state and must not be told
 * to bootstrap again.
 */
function discoverySettings(cluster: ElasticsearchClusterNode | undefined, firstStart: boolean): string[] {
  if (!cluster) return ['node.name: local', 'discovery.type: single-node'];
  const nodes = cluster.transportPorts.map((_, index) => elasticsearchNodeName(index + 1));
  return [
    `node.name: ${elasticsearchNodeName(cluster.nodeNumber)}`,
    `discovery.seed_hosts: [${cluster.transportPorts.map((port) => `"127.0.0.1:${port}"`).join(', ')}]`,
    ...(firstStart ? [`cluster.initial_master_nodes: [${nodes.map((node) => `"${node}"`).join(', ')}]`] : []),
  ];
}

/** The elasticsearch.yml of one node (pure, for tests). */
export function elasticsearchSettings(options: ElasticsearchOptions, dataDir: string, logDir: string, firstStart = true): string {
  return [
    'cluster.name: logplatform-local',
    'network.host: 127.0.0.1',
    `http.port: ${options.httpPort}`,
    `transport.port: ${options.transportPort}`,
    ...discoverySettings(options.cluster, firstStart),
    `path.data: ${dataDir}`,
    `path.logs: ${logDir}`,
    ...securitySettings(options.security),
    // the machines are shared and disks fill up; a full disk must not turn indices read-only under tests
    'cluster.routing.allocation.disk.threshold_enabled: false',
    // tests delete their indices by pattern
    'action.destructive_requires_name: false',
    '',
  ].join('\n');
}

/** The node's folder in the run folder: `elasticsearch` alone, `elasticsearch-<n>` in a cluster. */
export function elasticsearchNodeDir(options: Pick<ElasticsearchOptions, 'runDir' | 'cluster'>): string {
  return path.join(options.runDir, options.cluster ? `elasticsearch-${options.cluster.nodeNumber}` : 'elasticsearch');
}

export async function startElasticsearch(options: ElasticsearchOptions): Promise<RunningElasticsearch> {
  const asRoot = process.getuid?.() === 0;
  const identity = asRoot ? ensureUser(options.unprivilegedUser) : undefined;
  const home = asRoot ? readableInstall(options.elasticsearchHome) : options.elasticsearchHome;

  const base = elasticsearchNodeDir(options);
  const configDir = path.join(base, 'config');
  const dataDir = path.join(base, 'data');
  const logDir = path.join(base, 'logs');
  const tmpDir = path.join(base, 'tmp');
  // a node started again in the same run folder has its cluster state on disk already
  const firstStart = !existsSync(path.join(dataDir, '_state'));
  cpSync(path.join(home, 'config'), configDir, { recursive: true });
  for (const dir of [dataDir, logDir, tmpDir]) mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(configDir, 'elasticsearch.yml'), elasticsearchSettings(options, dataDir, logDir, firstStart));
  if (options.security) writeSecureSettings(options, home, configDir, options.security);
  if (identity) {
    chmodSync(options.runDir, 0o755);
    spawnSync('chown', ['-R', `${identity.uid}:${identity.gid}`, base]);
  }

  const server = new ServerProcess({
    name: options.cluster ? elasticsearchNodeName(options.cluster.nodeNumber) : 'elasticsearch',
    command: path.join(home, 'bin', 'elasticsearch'),
    args: [],
    cwd: base,
    env: {
      PATH: process.env.PATH,
      HOME: base,
      ES_JAVA_HOME: options.javaHome,
      ES_PATH_CONF: configDir,
      ES_TMPDIR: tmpDir,
      ES_JAVA_OPTS: `-Xms${options.heap} -Xmx${options.heap}`,
    },
    logFile: path.join(base, 'console.log'),
    uid: identity?.uid,
    gid: identity?.gid,
  });
  const url = `${options.security ? 'https' : 'http'}://127.0.0.1:${options.httpPort}`;
  // six JVMs of a cluster starting at once on a small machine take minutes, not seconds
  await waitForElasticsearch(url, server, options.security, options.cluster ? 300_000 : 120_000);
  return { url, process: server };
}

/** GET of a JSON document, trusting the stack's CA and logging in as `elastic` when security is on. */
function getJson(url: string, security: ElasticsearchSecurity | undefined, timeoutMs: number): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const options = security
      ? { ca: readFileSync(security.certificates.caFile), auth: `elastic:${security.elasticPassword}`, timeout: timeoutMs }
      : { timeout: timeoutMs };
    const request = (security ? httpsRequest : httpRequest)(url, options, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        try {
          resolve({ status: response.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
        } catch (error) {
          reject(error);
        }
      });
    });
    request.on('timeout', () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on('error', reject);
    request.end();
  });
}

/**
 * Ready means the cluster health is green or yellow. A node on a busy 2-core machine has taken over
 * 120 s to open its HTTP port; a node that dies is reported at once, so a long wait costs nothing.
 */
async function waitForElasticsearch(url: string, server: ServerProcess, security: ElasticsearchSecurity | undefined, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = 'no answer yet';
  while (Date.now() < deadline) {
    if (!server.running) {
      throw new StackError(`elasticsearch exited during start-up:\n${server.logTail()}`);
    }
    try {
      const response = await getJson(`${url}/_cluster/health?wait_for_status=yellow&timeout=2s`, security, 5000);
      const body = response.body as { status?: string };
      if (response.status === 200 && (body.status === 'green' || body.status === 'yellow')) return;
      lastError = `cluster status ${body.status}`;
    } catch (error) {
      lastError = String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new StackError(`elasticsearch did not become ready within ${timeoutMs / 1000} s (${lastError}):\n${server.logTail()}`);
}
