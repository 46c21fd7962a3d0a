import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repositoryRoot } from '../../shared/config.ts';
import { ELASTICSEARCH_VERSION, KAFKA_VERSION } from '../../stack/versions.ts';

const composeFile = path.join(repositoryRoot, 'docker-compose.yml');

/** `docker compose` (v2 plugin) when present, else the standalone docker-compose; neither needs an engine for `config`. */
function composeCommand(): string[] | undefined {
  if (spawnSync('docker', ['compose', 'version']).status === 0) return ['docker', 'compose'];
  if (spawnSync('docker-compose', ['version']).status === 0) return ['docker-compose'];
  return undefined;
}

function runCompose(command: string[], env: Record<string, string>) {
  const cleanEnv = { ...process.env, ...env };
  if (!('BOOTSTRAP_API_KEY' in env)) delete cleanEnv.BOOTSTRAP_API_KEY;
  return spawnSync(command[0]!, [...command.slice(1), '-f', composeFile, 'config'], { encoding: 'utf8', env: cleanEnv });
}

describe('docker-compose.yml', () => {
  const text = readFileSync(composeFile, 'utf8');
  const command = composeCommand();

  it('runs the same server versions as the tests', () => {
    expect(text).toContain(`elasticsearch:${ELASTICSEARCH_VERSION}`);
    expect(text).toContain(`apache/kafka:${KAFKA_VERSION}`);
  });

  it.skipIf(command === undefined)('is a valid compose file with the four services', () => {
    const result = runCompose(command!, { BOOTSTRAP_API_KEY: 'compose-config-check-key' });
    expect(result.stderr).not.toMatch(/invalid|error/i);
    expect(result.status).toBe(0);
    for (const service of ['kafka:', 'elasticsearch:', 'ingest:', 'query:']) expect(result.stdout).toContain(service);
  });

  it.skipIf(command === undefined)('refuses to start the query service without a bootstrap key', () => {
    const result = runCompose(command!, {});
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('BOOTSTRAP_API_KEY');
  });
});
