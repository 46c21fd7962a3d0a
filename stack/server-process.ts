import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { once } from 'node:events';

export class StackError extends Error {
  override name = 'StackError';
}

/** Whether a process (or, with a negative id, a process group) still exists. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

let exitHookInstalled = false;

/** Last line of defence: whatever way Node exits, no server of ours stays behind. */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const server of ServerProcess.live) server.killNow();
  });
}

export interface ServerProcessOptions {
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  logFile: string;
  uid?: number;
  gid?: number;
}

/**
 * A server (a JVM and any children it forks) running in its own process group, so that stopping it
 * reaches every process it started. A detached watchdog kills the group if this Node process dies
 * without stopping it (SIGKILL, crash), so no JVM outlives its parent.
 */
export class ServerProcess {
  /** Every server started by this Node process and not yet stopped. */
  static readonly live = new Set<ServerProcess>();
  readonly child: ChildProcess;
  private readonly watchdog: ChildProcess;
  private exited = false;
  readonly exit: Promise<number | null>;

  constructor(readonly options: ServerProcessOptions) {
    const log = createWriteStream(options.logFile, { flags: 'a' });
    this.child = spawn(options.command, options.args, {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      uid: options.uid,
      gid: options.gid,
    });
    this.child.stdout?.pipe(log);
    this.child.stderr?.pipe(log);
    this.exit = once(this.child, 'exit').then(([code]) => {
      this.exited = true;
      return code as number | null;
    });
    this.child.on('error', () => {
      this.exited = true;
    });
    const groupId = this.child.pid;
    this.watchdog = spawn(
      'sh',
      [
        '-c',
        // Polls the parent; when it is gone (or the group ended), ends the group: TERM first, KILL after 20 s.
        'while kill -0 "$1" 2>/dev/null && kill -0 -"$2" 2>/dev/null; do sleep 1; done; ' +
          'kill -TERM -"$2" 2>/dev/null; for i in $(seq 20); do kill -0 -"$2" 2>/dev/null || exit 0; sleep 1; done; kill -KILL -"$2" 2>/dev/null',
        'stack-watchdog',
        String(process.pid),
        String(groupId),
      ],
      { detached: true, stdio: 'ignore' },
    );
    this.watchdog.unref();
    ServerProcess.live.add(this);
    installExitHook();
  }

  get running(): boolean {
    return !this.exited;
  }

  logTail(lines = 30): string {
    try {
      return readFileSync(this.options.logFile, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }

  /** Ends the whole process group: SIGTERM, then SIGKILL after the grace period. */
  async stop(graceMs = 20_000): Promise<void> {
    const groupId = this.child.pid;
    if (groupId !== undefined && this.groupAlive(groupId)) {
      this.signalGroup(groupId, 'SIGTERM');
      const deadline = Date.now() + graceMs;
      while (this.groupAlive(groupId) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    await this.kill();
  }

  /** Ends the whole process group at once with SIGKILL, as a crash would: no shutdown hook runs. */
  async kill(): Promise<void> {
    const groupId = this.child.pid;
    if (groupId !== undefined && this.groupAlive(groupId)) {
      this.signalGroup(groupId, 'SIGKILL');
      while (this.groupAlive(groupId)) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (this.watchdog.pid !== undefined) {
      try {
        process.kill(this.watchdog.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    ServerProcess.live.delete(this);
  }

  /** Synchronous last resort for process 'exit' handlers, where nothing async can run. */
  killNow(): void {
    if (this.child.pid !== undefined) this.signalGroup(this.child.pid, 'SIGKILL');
  }

  private signalGroup(groupId: number, signal: NodeJS.Signals): void {
    try {
      process.kill(-groupId, signal);
    } catch {
      // group already gone
    }
  }

  private groupAlive(groupId: number): boolean {
    return processAlive(-groupId);
  }
}
