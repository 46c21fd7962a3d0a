import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { repositoryRoot } from '../../shared/config.ts';

export interface ServiceProcess {
  /** e.g. http://127.0.0.1:41234 */
  address: string;
  child: ChildProcess;
  /** The last lines of its stderr (JSON logs), for failure messages. */
  logTail(): string;
  stop(): Promise<void>;
}

/** The query service as its own process (`src/main.ts`), so that what a test measures is the service's event loop alone. */
export async function startServiceProcess(env: Record<string, string>): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(repositoryRoot, 'src', 'main.ts')], {
    cwd: repositoryRoot,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  createInterface({ input: child.stderr! }).on('line', (line) => {
    lines.push(line);
    if (lines.length > 200) lines.shift();
  });
  const logTail = () => lines.slice(-20).join('\n');
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the query service did not listen within 90 s:\n${logTail()}`)), 90_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const match = /^query: (http:\/\/\S+)$/.exec(line);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    void exited.then(() => reject(new Error(`the query service exited before listening:\n${logTail()}`)));
  });
  return {
    address,
    child,
    logTail,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(killer);
      }
    },
  };
}
