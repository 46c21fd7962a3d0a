import { Worker } from 'node:worker_threads';
import { compiled } from '../../shared/module-runtime.ts';
import { BadParameter, InvalidQuery, SandboxViolation, SqlSyntax, UnknownTable } from '../errors.ts';
import { assertQuerySize, type SandboxQueryOptions } from './index.ts';
import type { ParseRefusal, ParseReply, ParseRequest } from './parser-thread.ts';
import type { Query } from './syntax.ts';

/**
 * The thread runs the way this process runs: the compiled build starts it from dist/ with plain
 * node; from source, the thread registers tsx first (tsx is a development dependency only).
 */
function startThread(): Worker {
  if (compiled) return new Worker(new URL('./parser-thread.js', import.meta.url));
  const entry = new URL('./parser-thread.ts', import.meta.url).href;
  const tsx = import.meta.resolve('tsx/esm/api');
  return new Worker(`import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(entry)}); })`, { eval: true });
}

/** The domain errors the front end throws, rebuilt from their data without running their constructors (which format the message). */
const REFUSAL_CLASSES: Record<string, { prototype: BadParameter }> = { SqlSyntax, SandboxViolation, UnknownTable, InvalidQuery, BadParameter };

function rebuild(refusal: ParseRefusal): Error {
  const prototype = (REFUSAL_CLASSES[refusal.errorClass] ?? BadParameter).prototype;
  const error = Object.create(prototype) as BadParameter & { position?: unknown };
  Object.defineProperties(error, {
    message: { value: refusal.message, writable: true, configurable: true },
    code: { value: refusal.code, writable: true, configurable: true, enumerable: true },
    position: { value: refusal.position, writable: true, configurable: true, enumerable: true },
    stack: { value: `${refusal.errorClass}: ${refusal.message}`, writable: true, configurable: true },
  });
  return error;
}

interface Pending {
  request: ParseRequest;
  resolve: (query: Query) => void;
  reject: (error: Error) => void;
  /** Set when it reaches a ready thread: a thread's start-up is not the query's parse time. */
  timer: NodeJS.Timeout | undefined;
  /** Threads it was sent to: one that keeps killing threads is refused rather than sent on forever. */
  sends: number;
}

/**
 * Sandboxed SQL parsed in a worker thread, so that a hostile 64 KiB query (a long IN list costs
 * the WebAssembly parser over a second) never holds the event loop. One thread, started on first
 * use; a parse running longer than `timeoutMs` is refused and the thread replaced, and what was
 * waiting is sent to the new one. A thread with nothing to parse for `idleMs` is ended: its V8
 * isolate and the parser's WebAssembly memory (about 40 MB of resident memory) go back to the
 * system, and the next parse starts a new one.
 */
export class SqlParserThread {
  private current: { worker: Worker; ready: Promise<Worker> } | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly timeoutMs: number,
    private readonly idleMs = Number.POSITIVE_INFINITY,
  ) {}

  /** Whether a thread is started (or starting) now. */
  get running(): boolean {
    return this.current !== undefined;
  }

  parse(text: string, options: SandboxQueryOptions): Promise<Query> {
    if (this.closed) return Promise.reject(new Error('the SQL parser thread is closed'));
    try {
      assertQuerySize(text, options);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    clearTimeout(this.idleTimer);
    const request: ParseRequest = {
      id: this.nextId++,
      text,
      options: { ...options, allowedTables: [...options.allowedTables], parameterNames: [...(options.parameterNames ?? [])] },
    };
    return new Promise<Query>((resolve, reject) => {
      const pending: Pending = { request, resolve, reject, timer: undefined, sends: 0 };
      this.pending.set(request.id, pending);
      this.send([pending]);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.idleTimer);
    for (const id of [...this.pending.keys()]) this.settle(id, (pending) => pending.reject(new Error('the SQL parser thread closed')));
    const current = this.current;
    this.current = undefined;
    if (current) await current.worker.terminate();
  }

  private started(): Promise<Worker> {
    if (!this.current) {
      const worker = startThread();
      worker.unref();
      const ready = new Promise<Worker>((resolve, reject) => {
        worker.on('message', (message: ParseReply | { ready: true }) => {
          if ('ready' in message) resolve(worker);
          else this.answered(message);
        });
        worker.once('error', reject);
        worker.once('exit', () => reject(new Error('the SQL parser thread exited before it was ready')));
      });
      worker.on('error', () => this.lost(worker));
      worker.on('exit', () => this.lost(worker));
      this.current = { worker, ready };
    }
    return this.current.ready;
  }

  private send(requests: Pending[]): void {
    this.started().then(
      (worker) => {
        for (const pending of requests) {
          if (!this.pending.has(pending.request.id)) continue;
          pending.sends += 1;
          clearTimeout(pending.timer);
          pending.timer = setTimeout(() => this.timedOut(pending.request.id), this.timeoutMs);
          worker.postMessage(pending.request);
        }
      },
      (error: unknown) => {
        for (const pending of requests) this.settle(pending.request.id, (waiting) => waiting.reject(error as Error));
      },
    );
  }

  private answered(message: ParseReply): void {
    this.settle(message.id, (pending) => {
      if ('query' in message) pending.resolve(message.query);
      else if ('refusal' in message) pending.reject(rebuild(message.refusal));
      else pending.reject(new Error(`the SQL parser thread failed: ${message.failure}`));
    });
  }

  private settle(id: number, action: (pending: Pending) => void): void {
    const pending = this.pending.get(id);
    if (!pending) return;
    this.pending.delete(id);
    clearTimeout(pending.timer);
    action(pending);
    if (this.pending.size === 0) this.endWhenIdle();
  }

  private endWhenIdle(): void {
    clearTimeout(this.idleTimer);
    if (!Number.isFinite(this.idleMs)) return;
    this.idleTimer = setTimeout(() => {
      const current = this.current;
      if (this.pending.size > 0 || !current) return;
      this.current = undefined;
      void current.worker.terminate();
    }, this.idleMs);
    this.idleTimer.unref();
  }

  private timedOut(id: number): void {
    this.settle(id, (pending) =>
      pending.reject(
        new SandboxViolation(`the query took more than ${this.timeoutMs} ms to parse; shorten it (long lists and many select items cost the most)`),
      ),
    );
    const current = this.current;
    this.current = undefined;
    if (current) void current.worker.terminate();
    this.resendWaiting();
  }

  /** A thread that failed or exited on its own: what was waiting goes to a new one. */
  private lost(worker: Worker): void {
    if (this.current?.worker !== worker) return;
    this.current = undefined;
    this.resendWaiting();
  }

  private resendWaiting(): void {
    if (this.closed) return;
    const waiting = [...this.pending.values()];
    for (const pending of waiting.filter((candidate) => candidate.sends >= 2)) {
      this.settle(pending.request.id, (refused) => refused.reject(new SandboxViolation('the query stopped the SQL parser twice; it is refused')));
    }
    const again = waiting.filter((candidate) => candidate.sends < 2);
    if (again.length > 0) this.send(again);
  }
}
