import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const logging = (then: string) => `
  import { createLogger } from './shared/logger.ts';
  const log = createLogger('access', 'info', { redact: false, buffered: true });
  log.info({ n: 1 }, 'request answered');
  log.info({ n: 2 }, 'request answered');
  ${then}
`;
const run = (script: string) => ['--import', 'tsx', '--input-type=module', '--eval', script];

describe('the buffered logger of the access line', () => {
  it('writes the lines still gathered when the process exits', () => {
    const child = spawnSync(process.execPath, run(logging('process.exit(0);')), { cwd: root, encoding: 'utf8' });
    expect(child.stderr.match(/"msg":"request answered"/g)).toHaveLength(2);
  });

  it('writes gathered lines while the process keeps running, without more lines to fill its buffer', async () => {
    const child = spawn(process.execPath, run(logging('setInterval(() => {}, 1000);')), { cwd: root });
    let stderr = '';
    try {
      await new Promise<void>((resolve, reject) => {
        child.stderr.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
          if ((stderr.match(/"msg":"request answered"/g) ?? []).length === 2) resolve();
        });
        child.once('exit', (code) => reject(new Error(`exited (${code}) before writing both lines: ${stderr}`)));
      });
    } finally {
      child.kill('SIGKILL');
    }
    expect(stderr).toContain('"n":1');
  });
});
