import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { repositoryRoot } from '../../shared/config.ts';

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function waitUntilClosed(ports: number[], timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  let open = ports;
  while (Date.now() < deadline) {
    open = [];
    for (const port of ports) if (await portOpen(port)) open.push(port);
    if (open.length === 0) return [];
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return open;
}

/** Processes whose command line or environment mention the run folder: the servers and their children. */
function processesOf(runDir: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const text = readFileSync(`/proc/${entry}/cmdline`, 'utf8') + readFileSync(`/proc/${entry}/environ`, 'utf8');
      if (text.includes(runDir)) found.push(Number(entry));
    } catch {
      // exited meanwhile, or not ours to read
    }
  }
  return found;
}

async function waitUntilGone(runDir: string, timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  let left = processesOf(runDir);
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    left = processesOf(runDir);
  }
  return left;
}

/** `npm run stack` on free ports; resolves with the launcher, the two ports it printed and its run folder. */
async function launchStack(): Promise<{ launcher: ChildProcess; ports: number[]; runDir: string }> {
  const launcher = spawn(process.execPath, ['--import', 'tsx', path.join(repositoryRoot, 'stack', 'cli.ts')], {
    cwd: repositoryRoot,
    env: {
      ...process.env,
      STACK_KAFKA_PORT: '0',
      STACK_KAFKA_CONTROLLER_PORT: '0',
      STACK_ELASTICSEARCH_PORT: '0',
      STACK_ELASTICSEARCH_TRANSPORT_PORT: '0',
      STACK_ELASTICSEARCH_HEAP: '512m',
      STACK_KAFKA_HEAP: '256m',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const errors: string[] = [];
  createInterface({ input: launcher.stderr! }).on('line', (line) => errors.push(line));
  const ports = await new Promise<number[]>((resolve, reject) => {
    const found: number[] = [];
    const timer = setTimeout(() => reject(new Error(`stack not ready within 150 s:\n${errors.join('\n')}`)), 150_000);
    createInterface({ input: launcher.stdout! }).on('line', (line) => {
      const match = /^(kafka|elasticsearch): (?:http:\/\/)?127\.0\.0\.1:(\d+)$/.exec(line);
      if (match) found.push(Number(match[2]));
      if (found.length === 2) {
        clearTimeout(timer);
        resolve(found);
      }
    });
    launcher.once('exit', (code) => reject(new Error(`launcher exited with ${code}:\n${errors.join('\n')}`)));
  });
  const runDir = errors.map((line) => /run folder (\S+)\)/.exec(line)?.[1]).find(Boolean);
  if (!runDir) throw new Error(`the launcher did not name its run folder:\n${errors.join('\n')}`);
  return { launcher, ports, runDir };
}

describe('the stack launcher leaves no server behind', () => {
  it('stops Kafka and Elasticsearch on SIGTERM, and by its watchdog when the launcher is killed with SIGKILL', { timeout: 400_000 }, async () => {
    const first = await launchStack();
    for (const port of first.ports) expect(await portOpen(port)).toBe(true);
    const exitCode = new Promise((resolve) => first.launcher.once('exit', resolve));
    first.launcher.kill('SIGTERM');
    expect(await exitCode).toBe(0);
    expect(await waitUntilClosed(first.ports, 5_000)).toEqual([]);
    expect(processesOf(first.runDir)).toEqual([]);

    const second = await launchStack();
    second.launcher.kill('SIGKILL');
    // the launcher could not clean up: each server's watchdog sees its parent gone and ends the group
    expect(await waitUntilClosed(second.ports, 60_000)).toEqual([]);
    expect(await waitUntilGone(second.runDir, 60_000)).toEqual([]);
  });
});
