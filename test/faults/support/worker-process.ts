import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { repositoryRoot } from '../../../shared/config.ts';

/** The ingest worker as its own process (`tsx ingest/main.ts`), so SIGKILL hits it wherever it stands. */
export class WorkerProcess {
  private readonly lines: string[] = [];

  private constructor(
    readonly name: string,
    readonly child: ChildProcess,
    readonly port: number,
    lines: string[],
  ) {
    this.lines = lines;
  }

  static async spawn(name: string, env: Record<string, string>, options: { logFile?: string; timeoutMs?: number } = {}): Promise<WorkerProcess> {
    const timeoutMs = options.timeoutMs ?? 180_000;
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(repositoryRoot, 'ingest', 'main.ts')], {
      cwd: repositoryRoot,
      env: { PATH: process.env.PATH, INGEST_PORT: '0', LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: string[] = [];
    createInterface({ input: child.stderr! }).on('line', (line) => {
      lines.push(line);
      if (lines.length > 300) lines.shift();
      if (options.logFile) appendFileSync(options.logFile, `${line}\n`);
    });
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`worker ${name} did not print its address within ${timeoutMs} ms:\n${lines.slice(-20).join('\n')}`)),
        timeoutMs,
      );
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`worker ${name} exited during start-up (${code ?? signal}):\n${lines.slice(-20).join('\n')}`));
      });
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const match = /^ingest: http:\/\/[^:]+:(\d+)\/health$/.exec(line);
        if (match) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      });
    });
    return new WorkerProcess(name, child, port, lines);
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The worker's last log lines (JSON, warn and above), for failure messages. */
  logTail(count = 20): string {
    return this.lines.slice(-count).join('\n');
  }

  async health(): Promise<{ status: string; heldPartitions: number }> {
    return (await (await fetch(`http://127.0.0.1:${this.port}/health`, { signal: AbortSignal.timeout(5000) })).json()) as {
      status: string;
      heldPartitions: number;
    };
  }

  /** Events this process has indexed since it started, every source together. */
  async indexed(): Promise<number> {
    const text = await (await fetch(`http://127.0.0.1:${this.port}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
    return [...text.matchAll(/^ingest_events_indexed_total\{[^}]*\} (\d+)$/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
  }

  /** SIGKILL: no shutdown code runs, whatever was in flight is left as it was. */
  async kill(): Promise<void> {
    if (!this.running) return;
    const exited = once(this.child, 'exit');
    this.child.kill('SIGKILL');
    await exited;
  }

  /** SIGTERM: leaves the group after committing what is durable; resolves with the exit code. */
  async terminate(timeoutMs = 60_000): Promise<number | null> {
    if (!this.running) return this.child.exitCode;
    const exited = once(this.child, 'exit');
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    const [code] = (await exited) as [number | null];
    clearTimeout(timer);
    return code;
  }
}
