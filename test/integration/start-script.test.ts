import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { repositoryRoot } from '../../shared/config.ts';
import { processAlive } from '../../stack/server-process.ts';
import { uniqueName } from '../support/stack.ts';

describe('npm start against external servers', () => {
  it('starts the worker and the API, prints ready:, and stops both on SIGTERM', async () => {
    const prefix = uniqueName('start');
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(repositoryRoot, 'scripts', 'start.ts')], {
      cwd: repositoryRoot,
      env: {
        ...process.env,
        KAFKA_BROKERS: inject('kafkaBrokers').join(','),
        ELASTICSEARCH_URL: inject('elasticsearchUrl'),
        BOOTSTRAP_API_KEY: 'start-script-test-key-0123456789',
        PORT: '0',
        INGEST_PORT: '0',
        INDEX_PREFIX: `${prefix}-`,
        TOPIC_PREFIX: `${prefix}.`,
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: string[] = [];
    createInterface({ input: child.stderr! }).on('line', (line) => lines.push(line));
    const ready = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ready line within 90 s:\n${lines.slice(-20).join('\n')}`)), 90_000);
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const match = /^ready: (http:\/\/\S+)$/.exec(line);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      });
      child.once('exit', (code) => reject(new Error(`npm start exited with ${code} before ready:\n${lines.slice(-20).join('\n')}`)));
    });

    const health = await (await fetch(`${ready}/health`)).json();
    expect(health.elasticsearch.status).toBe('up');
    expect(health.kafka.status).toBe('up');
    const unauthenticated = await fetch(`${ready}/api/endpoints/query/logs.all?project=default`);
    expect(unauthenticated.status).toBe(401);
    const answered = await fetch(`${ready}/api/endpoints/query/logs.all?project=default`, {
      headers: { 'x-api-key': 'start-script-test-key-0123456789' },
    });
    expect(answered.status).toBe(200);
    // against external servers no demo data is loaded
    expect((await answered.json()).result).toEqual([]);

    const serverPid = Number((await (await fetch(`${ready}/health`)).json()).pid ?? 0);
    const exitCode = await new Promise<number | null>((resolve) => {
      child.once('exit', resolve);
      child.kill('SIGTERM');
    });
    expect(exitCode).toBe(0);
    if (serverPid > 0) expect(processAlive(serverPid)).toBe(false);
    await expect(fetch(`${ready}/health`)).rejects.toThrow();
  });
});
