import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repositoryRoot } from '../../shared/config.ts';

const check = (...version: string[]) => spawnSync(process.execPath, [path.join(repositoryRoot, '.ci', 'node-version.cjs'), ...version], { encoding: 'utf8' });

describe("CI's Node version check against package.json engines (>=20.19)", () => {
  it('stops on an older Node, saying which and what package.json asks for', () => {
    for (const version of ['v18.19.1', 'v20.18.3', 'v20.9.0', 'v16.20.2']) {
      const result = check(version);
      expect({ version, status: result.status }).toEqual({ version, status: 1 });
      expect(result.stderr).toContain(`Node ${version} is older than package.json's engines.node (>=20.19)`);
    }
  });

  it('passes this Node, the minimum and newer ones', () => {
    for (const version of [[], ['v20.19.0'], ['v20.20.2'], ['v22.1.0'], ['v24.0.0']]) expect(check(...version).status).toBe(0);
  });

  it('refuses what is not a version', () => {
    expect(check('twenty').status).toBe(2);
  });

  it('runs in .ci/run before npm ci', () => {
    const run = readFileSync(path.join(repositoryRoot, '.ci', 'run'), 'utf8');
    expect(run.indexOf('node .ci/node-version.cjs')).toBeGreaterThan(run.indexOf('apt_install nodejs'));
    expect(run.indexOf('node .ci/node-version.cjs')).toBeLessThan(run.indexOf('\nnpm ci '));
  });
});
