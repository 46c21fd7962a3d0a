import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { environmentWithStartState, removeStartState, startStateFile, writeStartState } from '../../scripts/start-state.ts';

describe('the state npm start leaves for keys and produce', () => {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'start-state-'));
  const file = startStateFile(folder);
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it('completes an environment that names no servers with what npm start runs', () => {
    writeStartState(file, {
      KAFKA_BROKERS: '127.0.0.1:39092',
      ELASTICSEARCH_URL: 'http://127.0.0.1:39200',
      INDEX_PREFIX: 'dev-',
      BOOTSTRAP_API_KEY: 'never-shared-0123456789',
      PATH: '/usr/bin',
    });
    const { env, source } = environmentWithStartState({ STACK_CACHE_DIR: folder, TOPIC_PREFIX: 'mine.' });
    expect(env).toEqual({
      STACK_CACHE_DIR: folder,
      TOPIC_PREFIX: 'mine.',
      KAFKA_BROKERS: '127.0.0.1:39092',
      ELASTICSEARCH_URL: 'http://127.0.0.1:39200',
      INDEX_PREFIX: 'dev-',
    });
    expect(source).toContain(`pid ${process.pid}`);
  });

  it('lets variables the caller set win, and leaves an environment that names a server alone', () => {
    writeStartState(file, { KAFKA_BROKERS: '127.0.0.1:39092', ELASTICSEARCH_URL: 'http://127.0.0.1:39200', INDEX_PREFIX: 'dev-' });
    expect(environmentWithStartState({ STACK_CACHE_DIR: folder, INDEX_PREFIX: 'other-' }).env.INDEX_PREFIX).toBe('other-');
    const own = { STACK_CACHE_DIR: folder, ELASTICSEARCH_URL: 'http://es.example:9200' };
    expect(environmentWithStartState(own)).toEqual({ env: own });
  });

  it('ignores a state file whose npm start is gone, and removes only its own', () => {
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    writeFileSync(file, JSON.stringify({ pid: Number(gone.stdout), env: { KAFKA_BROKERS: '127.0.0.1:1' } }));
    expect(environmentWithStartState({ STACK_CACHE_DIR: folder }).env.KAFKA_BROKERS).toBeUndefined();
    removeStartState(file);
    expect(existsSync(file)).toBe(true);
    writeStartState(file, { KAFKA_BROKERS: '127.0.0.1:39092' });
    removeStartState(file);
    expect(existsSync(file)).toBe(false);
    expect(environmentWithStartState({ STACK_CACHE_DIR: folder }).env.KAFKA_BROKERS).toBeUndefined();
  });
});
