import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { loaderArgs, modulePath, repositoryRoot } from '../../shared/module-runtime.ts';
import { startStateFile } from '../../scripts/start-state.ts';
import { processAlive } from '../../stack/server-process.ts';
import { removeKafkaTestData, removeTestData, storeClient, waitFor } from '../support/ingest.ts';
import { testConfig, uniqueName } from '../support/stack.ts';

const KEY = 'start-script-test-key-0123456789';

/** Runs one of the npm scripts' entries the way npm does, with only the variables given (no server addresses). */
async function runScript(
  entry: string,
  args: string[],
  env: Record<string, string>,
  input?: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [...loaderArgs, modulePath(entry), ...args], {
    cwd: repositoryRoot,
    env: { PATH: process.env.PATH!, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(input ?? '');
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

describe('npm start against external servers', () => {
  const prefix = uniqueName('start');
  const config = testConfig({ INDEX_PREFIX: `${prefix}-`, TOPIC_PREFIX: `${prefix}.`, INGEST_GROUP_ID: `${prefix}-ingest` });
  const cacheDir = mkdtempSync(path.join(os.tmpdir(), 'start-script-'));
  let child: ChildProcess | undefined;

  // whatever happens in the test, nothing it started outlives the file
  afterAll(async () => {
    if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      // npm start and the services it spawned share its process group
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    rmSync(cacheDir, { recursive: true, force: true });
    const client = storeClient(config);
    await removeTestData(client, config.INDEX_PREFIX);
    await client.close();
    await removeKafkaTestData(config);
  }, 120_000);

  it('starts the worker and the API, serves keys and produce through its state file, logs no error on a normal start, and stops everything on SIGTERM', async () => {
    child = spawn(process.execPath, [...loaderArgs, modulePath('scripts/start')], {
      cwd: repositoryRoot,
      env: {
        PATH: process.env.PATH!,
        KAFKA_BROKERS: config.KAFKA_BROKERS!.join(','),
        ELASTICSEARCH_URL: config.ELASTICSEARCH_URL!,
        BOOTSTRAP_API_KEY: KEY,
        PORT: '0',
        INGEST_PORT: '0',
        INDEX_PREFIX: config.INDEX_PREFIX,
        TOPIC_PREFIX: config.TOPIC_PREFIX,
        INGEST_GROUP_ID: config.INGEST_GROUP_ID,
        STACK_CACHE_DIR: cacheDir,
        LOG_LEVEL: 'info',
      },
      // its own process group, so clean-up can end it and its children together
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const started = child;
    const lines: string[] = [];
    createInterface({ input: started.stderr! }).on('line', (line) => lines.push(line));
    const ready = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ready line within 120 s:\n${lines.slice(-20).join('\n')}`)), 120_000);
      createInterface({ input: started.stdout! }).on('line', (line) => {
        const match = /^ready: (http:\/\/\S+)$/.exec(line);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      });
      started.once('exit', (code) => reject(new Error(`npm start exited with ${code} before ready:\n${lines.slice(-20).join('\n')}`)));
    });

    const health = await (await fetch(`${ready}/health`)).json();
    expect(health.elasticsearch.status).toBe('up');
    expect(health.kafka.status).toBe('up');
    expect((await fetch(`${ready}/api/endpoints/query/logs.all?project=default`)).status).toBe(401);
    const answered = await fetch(`${ready}/api/endpoints/query/logs.all?project=default`, { headers: { 'x-api-key': KEY } });
    expect(answered.status).toBe(200);
    // against external servers no demo data is loaded
    expect((await answered.json()).result).toEqual([]);

    // keys and produce, given no addresses, find the servers npm start uses
    const stateFile = startStateFile(cacheDir);
    expect(JSON.parse(readFileSync(stateFile, 'utf8')).env).toMatchObject({
      KAFKA_BROKERS: config.KAFKA_BROKERS!.join(','),
      ELASTICSEARCH_URL: config.ELASTICSEARCH_URL,
      INDEX_PREFIX: config.INDEX_PREFIX,
    });
    const created = await runScript('scripts/keys', ['create', '--account', 'start-test'], { STACK_CACHE_DIR: cacheDir });
    expect(created.stderr).toContain('using the stack npm start');
    expect(created.code).toBe(0);
    const key = created.stdout.trim();
    const withCreatedKey = await fetch(`${ready}/api/endpoints/query/logs.all?project=${prefix}`, { headers: { 'x-api-key': key } });
    expect(withCreatedKey.status).toBe(200);
    const produced = await runScript(
      'scripts/produce',
      ['--source', 'edge_logs'],
      { STACK_CACHE_DIR: cacheDir },
      `${JSON.stringify({ message: 'produced without addresses', project: prefix })}\n`,
    );
    expect(produced.code).toBe(0);
    expect(produced.stdout).toContain(`published 1 event(s) to ${config.TOPIC_PREFIX}edge_logs`);
    const rows = await waitFor(
      'the produced event to be answered',
      async () => {
        const response = await fetch(`${ready}/api/endpoints/query/logs.all?project=${prefix}`, { headers: { 'x-api-key': key } });
        const { result } = (await response.json()) as { result: { event_message: string }[] };
        return result.length > 0 ? result : undefined;
      },
      60_000,
    );
    expect(rows.map((row) => row.event_message)).toEqual(['produced without addresses']);

    // indices and demo-data find them the same way
    const listed = await runScript('scripts/indices', ['--json'], { STACK_CACHE_DIR: cacheDir });
    expect(listed.stderr).toContain('using the stack npm start');
    expect(listed.code).toBe(0);
    const edge = (JSON.parse(listed.stdout) as { source: string; partitions: { index: string }[] }[]).find((report) => report.source === 'edge_logs');
    // the current partition, and the next one when it is made ahead
    expect(edge?.partitions.length).toBeGreaterThan(0);
    for (const partition of edge!.partitions) expect(partition.index.startsWith(config.INDEX_PREFIX)).toBe(true);
    const demo = await runScript('scripts/demo-data', ['--events', '20', '--hours', '1', '--project', prefix], { STACK_CACHE_DIR: cacheDir });
    expect(demo.stderr).toContain('using the stack npm start');
    expect(demo.code).toBe(0);
    expect(demo.stdout).toContain(`published 20 demo events over the last 1 h for ${prefix}`);

    // a normal start logs nothing at error level (kafkajs's "coordinator is loading" among others)
    const entries = lines.flatMap((line) => {
      try {
        return [JSON.parse(line) as { level: number; msg: string }];
      } catch {
        return [];
      }
    });
    expect(entries.length).toBeGreaterThan(3);
    expect(entries.filter((entry) => entry.level >= 50)).toEqual([]);

    const serverPid = Number((await (await fetch(`${ready}/health`)).json()).pid ?? 0);
    const exited = once(started, 'exit');
    started.kill('SIGTERM');
    const [exitCode] = (await exited) as [number | null];
    expect(exitCode).toBe(0);
    if (serverPid > 0) expect(processAlive(serverPid)).toBe(false);
    await expect(fetch(`${ready}/health`)).rejects.toThrow();
    expect(existsSync(stateFile)).toBe(false);
  }, 300_000);
});
