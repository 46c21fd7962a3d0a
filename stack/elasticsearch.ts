import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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

/**
 * The unprivileged user may not be able to traverse the folder that holds the cache (a clone under
 * /root, say), so as root we run from a world-readable copy of the distribution under the temp dir.
 */
function readableInstall(elasticsearchHome: string): string {
  const copy = path.join(os.tmpdir(), `logplatform-elasticsearch-${ELASTICSEARCH_VERSION}`);
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

function settings(options: ElasticsearchOptions, dataDir: string, logDir: string): string {
  return [
    'cluster.name: logplatform-local',
    'node.name: local',
    'network.host: 127.0.0.1',
    `http.port: ${options.httpPort}`,
    `transport.port: ${options.transportPort}`,
    'discovery.type: single-node',
    `path.data: ${dataDir}`,
    `path.logs: ${logDir}`,
    'xpack.security.enabled: false',
    // the machines are shared and disks fill up; a full disk must not turn indices read-only under tests
    'cluster.routing.allocation.disk.threshold_enabled: false',
    // tests delete their indices by pattern
    'action.destructive_requires_name: false',
    '',
  ].join('\n');
}

export async function startElasticsearch(options: ElasticsearchOptions): Promise<RunningElasticsearch> {
  const asRoot = process.getuid?.() === 0;
  const identity = asRoot ? ensureUser(options.unprivilegedUser) : undefined;
  const home = asRoot ? readableInstall(options.elasticsearchHome) : options.elasticsearchHome;

  const base = path.join(options.runDir, 'elasticsearch');
  const configDir = path.join(base, 'config');
  const dataDir = path.join(base, 'data');
  const logDir = path.join(base, 'logs');
  const tmpDir = path.join(base, 'tmp');
  cpSync(path.join(home, 'config'), configDir, { recursive: true });
  for (const dir of [dataDir, logDir, tmpDir]) mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(configDir, 'elasticsearch.yml'), settings(options, dataDir, logDir));
  if (identity) {
    chmodSync(options.runDir, 0o755);
    spawnSync('chown', ['-R', `${identity.uid}:${identity.gid}`, base]);
  }

  const server = new ServerProcess({
    name: 'elasticsearch',
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
  const url = `http://127.0.0.1:${options.httpPort}`;
  await waitForElasticsearch(url, server);
  return { url, process: server };
}

/** Ready means the cluster health is green or yellow. */
async function waitForElasticsearch(url: string, server: ServerProcess, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = 'no answer yet';
  while (Date.now() < deadline) {
    if (!server.running) {
      throw new StackError(`elasticsearch exited during start-up:\n${server.logTail()}`);
    }
    try {
      const response = await fetch(`${url}/_cluster/health?wait_for_status=yellow&timeout=2s`, { signal: AbortSignal.timeout(5000) });
      const body = (await response.json()) as { status?: string };
      if (response.ok && (body.status === 'green' || body.status === 'yellow')) return;
      lastError = `cluster status ${body.status}`;
    } catch (error) {
      lastError = String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new StackError(`elasticsearch did not become ready within ${timeoutMs / 1000} s (${lastError}):\n${server.logTail()}`);
}
