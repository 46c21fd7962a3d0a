import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { repositoryRoot } from '../shared/config.ts';

/** A server a benchmark starts as its own process, so its CPU and memory are its own and can be read. */
export interface BenchProcess {
  /** e.g. http://127.0.0.1:41234 */
  address: string;
  pid: number;
  /** Peak resident memory so far (VmHWM), in MB. */
  peakRssMb(): number;
  stop(): Promise<void>;
}

export interface BenchProcessOptions {
  /** Script under the repository root, run with tsx (or plain node when `compiled`). */
  script: string;
  /** The script is compiled JavaScript (dist/, after npm run build): run with plain node, as production does, not under tsx. */
  compiled?: boolean;
  /** Another checkout to run the script from (a baseline measured in the same run); default this repository. */
  root?: string;
  args?: string[];
  env: Record<string, string>;
  /** The stdout line announcing the address, its first group the address. */
  announces: RegExp;
  /** Where its stderr (logs) goes; default: kept in memory, the last lines shown if it fails to start. */
  logFile?: string;
  /** Writes a V8 CPU profile into this folder when the process exits (node --cpu-prof). */
  cpuProfileDir?: string;
  /** More node options, after tsx is registered (e.g. V8 flags, or `--import` of a TypeScript module). */
  nodeArgs?: readonly string[];
}

/** Reads a process's peak resident set from /proc (Linux): exact, and with no sampling to miss a peak. */
export function peakRssMbOf(pid: number): number {
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Math.round(Number(match[1]) / 1024);
}

export async function startBenchProcess(options: BenchProcessOptions): Promise<BenchProcess> {
  const profile = options.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`] : [];
  // a log file, not a pipe: the benchmark process must not spend its CPU reading the service's log lines
  const logFd = options.logFile ? openSync(options.logFile, 'w') : undefined;
  const root = options.root ?? repositoryRoot;
  const child: ChildProcess = spawn(
    process.execPath,
    [...profile, ...(options.compiled ? [] : ['--import', 'tsx']), ...(options.nodeArgs ?? []), path.join(root, options.script), ...(options.args ?? [])],
    {
      cwd: root,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', logFd ?? 'pipe'],
    },
  );
  if (logFd !== undefined) closeSync(logFd);
  const tail: string[] = [];
  if (child.stderr) {
    createInterface({ input: child.stderr }).on('line', (line) => {
      tail.push(line);
      if (tail.length > 20) tail.shift();
    });
  }
  const lastLines = () => (options.logFile ? readFileSync(options.logFile, 'utf8').split('\n').slice(-20) : tail).join('\n');
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${options.script} did not listen within 120 s:\n${lastLines()}`)), 120_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const match = options.announces.exec(line);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`${options.script} exited before listening:\n${lastLines()}`));
    });
  });
  return {
    address,
    pid: child.pid!,
    peakRssMb: () => peakRssMbOf(child.pid!),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      // SIGTERM lets the service close and node write its CPU profile
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(killer);
    },
  };
}
