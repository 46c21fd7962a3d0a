import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repositoryRoot } from '../../shared/config.ts';
import { helpRequested } from '../../shared/command-help.ts';

/** The npm scripts a person runs: every one that runs a TypeScript file with tsx, with that file. */
function commands(): Array<{ name: string; file: string }> {
  const { scripts } = JSON.parse(readFileSync(path.join(repositoryRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  return Object.entries(scripts).flatMap(([name, command]) => {
    const match = /^tsx (\S+\.ts)$/.exec(command);
    return match ? [{ name, file: match[1]! }] : [];
  });
}

/** Each command run with `flag` alone, in one process (test/support/command-help-driver.ts). */
function runWith(flag: string, files: string[]): Map<string, { exitCode: number | null; stdout: string }> {
  const driver = spawnSync(process.execPath, ['--import', 'tsx', 'test/support/command-help-driver.ts', flag, ...files], {
    cwd: repositoryRoot,
    encoding: 'utf8',
    // servers that refuse every connection: a command that ignored the flag fails to reach them instead of starting a stack
    env: { PATH: process.env.PATH, KAFKA_BROKERS: '127.0.0.1:1', ELASTICSEARCH_URL: 'http://127.0.0.1:1', STACK_CACHE_DIR: os.tmpdir(), LOG_LEVEL: 'silent' },
    timeout: 120_000,
  });
  const runs = driver.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { file: string; exitCode: number | null; stdout: string });
  return new Map(runs.map(({ file, ...run }) => [file, run]));
}

describe('every npm run command answers --help and -h', () => {
  const listed = commands();

  it('finds the commands people run', () => {
    expect(listed.map((command) => command.name)).toEqual(
      expect.arrayContaining(['start', 'stack', 'serve', 'ingest', 'produce', 'demo-data', 'keys', 'endpoints', 'indices', 'bench', 'soak']),
    );
  });

  for (const flag of ['--help', '-h']) {
    it(`prints the usage and exits 0 on ${flag}`, () => {
      const runs = runWith(
        flag,
        listed.map((command) => command.file),
      );
      for (const command of listed) {
        const run = runs.get(command.file);
        expect({ command: command.name, exitCode: run?.exitCode }).toEqual({ command: command.name, exitCode: 0 });
        expect(run?.stdout.split('\n')[0], command.name).toMatch(/^Usage:/);
        expect(run?.stdout, command.name).toContain(command.name === 'start' ? 'npm start' : `npm run ${command.name}`);
      }
    });
  }

  it('reads --help and -h as options, not after --', () => {
    expect(helpRequested(['--help'])).toBe(true);
    expect(helpRequested(['create', '-h'])).toBe(true);
    expect(helpRequested(['--source', 'edge_logs', '--', '-h'])).toBe(false);
    expect(helpRequested(['--json'])).toBe(false);
  });
});
