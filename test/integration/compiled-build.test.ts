import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repositoryRoot } from '../../shared/module-runtime.ts';
import { ingestTestConfig, produce, removeKafkaTestData, removeTestData, storeClient, waitFor } from '../support/ingest.ts';

const run = promisify(execFile);
const KEY = 'compiled-build-test-key-0123456789';

/**
 * A folder laid out like the runtime image: package.json, dist/ and the production dependencies of
 * the lock file (linked from node_modules), so an import of a dev dependency such as tsx fails here
 * as it would in the image.
 */
function runtimeCopy(): string {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'logplatform-runtime-'));
  cpSync(path.join(repositoryRoot, 'package.json'), path.join(folder, 'package.json'));
  cpSync(path.join(repositoryRoot, 'dist'), path.join(folder, 'dist'), { recursive: true });
  const lock = JSON.parse(readFileSync(path.join(repositoryRoot, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean; devOptional?: boolean }>;
  };
  for (const [location, entry] of Object.entries(lock.packages)) {
    // top-level packages only: nested ones come with their parent
    if (!location.startsWith('node_modules/') || location.lastIndexOf('node_modules/') !== 0 || entry.dev || entry.devOptional) continue;
    const installed = path.join(repositoryRoot, location);
    const linked = path.join(folder, location);
    mkdirSync(path.dirname(linked), { recursive: true });
    try {
      symlinkSync(installed, linked);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  return folder;
}

function jsFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.js'))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

interface Started {
  child: ChildProcess;
  url: string;
  output: string[];
}

/** Runs a compiled entry with plain node (no loader, no inherited NODE_OPTIONS) and waits for its `<label>: <url>` line. */
async function startCompiled(folder: string, entry: string, label: string, env: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, [path.join('dist', entry)], {
    cwd: folder,
    env: { PATH: process.env.PATH!, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const url = await waitFor(
    `${entry} to announce its address`,
    async () => {
      if (child.exitCode !== null) throw new Error(`${entry} exited with ${child.exitCode}: ${output.join('').slice(-2000)}`);
      return new RegExp(`^${label}: (\\S+)$`, 'm').exec(stdout)?.[1];
    },
    90_000,
  );
  return { child, url, output };
}

async function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const [code] = (await exited) as [number | null];
  clearTimeout(timer);
  return code;
}

async function healthcheck(folder: string, role: 'query' | 'ingest', env: Record<string, string>): Promise<number> {
  try {
    await run(process.execPath, [path.join('dist', 'scripts', 'healthcheck.js'), role], { cwd: folder, env: { PATH: process.env.PATH!, ...env } });
    return 0;
  } catch (error) {
    return (error as { code?: number }).code ?? -1;
  }
}

describe('the compiled build (npm run build, then plain node)', () => {
  const config = ingestTestConfig('compiled');
  const client = storeClient(config);
  const project = `${config.INDEX_PREFIX}project`;
  let folder: string | undefined;
  const started: ChildProcess[] = [];

  beforeAll(async () => {
    await run('npm', ['run', 'build'], { cwd: repositoryRoot, maxBuffer: 16 * 1024 * 1024 });
    folder = runtimeCopy();
  }, 300_000);

  afterAll(async () => {
    await Promise.all(started.map(stop));
    if (folder) rmSync(folder, { recursive: true, force: true });
    await removeTestData(client, config.INDEX_PREFIX);
    await removeKafkaTestData(config);
    await client.close();
  }, 120_000);

  it('emits JavaScript whose relative imports all name .js files', () => {
    const files = jsFiles(path.join(repositoryRoot, 'dist'));
    for (const entry of ['src/main.js', 'ingest/main.js', 'scripts/keys.js', 'scripts/healthcheck.js', 'src/executor/engine/engine-process.js']) {
      expect(files).toContain(path.join(repositoryRoot, 'dist', entry));
    }
    const tsImports = files.flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/(?:from|import\()\s*["'](\.{1,2}\/[^"']+\.ts)["']/g)].map((match) => `${file}: ${match[1]}`),
    );
    expect(tsImports).toEqual([]);
  });

  it('runs the worker and the query service without tsx: ingests an event, answers it, runs the engine, passes the health checks', async () => {
    const common = {
      KAFKA_BROKERS: config.KAFKA_BROKERS!.join(','),
      ELASTICSEARCH_URL: config.ELASTICSEARCH_URL!,
      INDEX_PREFIX: config.INDEX_PREFIX,
      TOPIC_PREFIX: config.TOPIC_PREFIX,
      LOG_LEVEL: 'warn',
    };
    const worker = await startCompiled(folder!, 'ingest/main.js', 'ingest', {
      ...common,
      INGEST_GROUP_ID: config.INGEST_GROUP_ID,
      INGEST_PORT: '0',
      INGEST_TOPIC_PARTITIONS: '1',
      INGEST_SESSION_TIMEOUT_MS: '6000',
    });
    started.push(worker.child);
    const query = await startCompiled(folder!, 'src/main.js', 'query', { ...common, PORT: '0', BOOTSTRAP_API_KEY: KEY });
    started.push(query.child);
    const ingestPort = new URL(worker.url).port;
    const queryPort = new URL(query.url).port;

    await waitFor(
      'the worker to join its group',
      async () => ((await healthcheck(folder!, 'ingest', { INGEST_PORT: ingestPort })) === 0 ? true : undefined),
      90_000,
    );
    expect(await healthcheck(folder!, 'query', { PORT: queryPort })).toBe(0);

    const message = 'compiled build ingests this';
    await produce(config, 'edge_logs', [
      {
        event_message: message,
        project,
        timestamp: new Date().toISOString(),
        metadata: { request: [{ url: 'https://example.test/rest/v1/x', path: '/rest/v1/x' }] },
      },
    ]);
    const ask = async (parameters: Record<string, string>) => {
      const response = await fetch(`${query.url}/api/endpoints/query/logs.all?${new URLSearchParams({ project, ...parameters })}`, {
        headers: { 'x-api-key': KEY },
      });
      return { status: response.status, body: (await response.json()) as { result?: Record<string, unknown>[] } };
    };
    const rows = await waitFor(
      'the event to be answered by logs.all',
      async () => {
        const { body } = await ask({});
        return body.result && body.result.length > 0 ? body.result : undefined;
      },
      60_000,
    );
    expect(rows.map((row) => row.event_message)).toEqual([message]);

    // a residual query runs in DuckDB in a forked engine process, which must start without tsx too
    const sandboxed = await ask({ sql: 'select upper(event_message) as shout from edge_logs' });
    expect(sandboxed).toEqual({ status: 200, body: { result: [{ shout: message.toUpperCase() }] } });
    const metrics = await (await fetch(`${query.url}/metrics`)).text();
    expect(metrics).toMatch(/sandbox_scans_total\{kind="pulled"\} [1-9]/);

    expect(await stop(query.child)).toBe(0);
    expect(await stop(worker.child)).toBe(0);
    expect(await healthcheck(folder!, 'query', { PORT: queryPort })).toBe(1);
    expect(await healthcheck(folder!, 'ingest', { INGEST_PORT: ingestPort })).toBe(1);
  }, 240_000);
});
