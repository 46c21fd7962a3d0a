import { fork, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Logger } from '../../../shared/logger.ts';
import { loaderArgs, modulePath, repositoryRoot } from '../../../shared/module-runtime.ts';
import { InvalidQuery, QueryTimeout, QueryTooExpensive, StoreUnavailable } from '../../errors.ts';
import { sandboxEngineResultRowsTotal, sandboxEngineTruncatedResultsTotal } from '../../metrics.ts';
import type { TableSchema } from '../../sql/types.ts';
import { columnsOf, rowObjects, type EngineMessage, type ResultColumn, type ServiceMessage } from './engine-protocol.ts';
import { EngineQueue, outOfTime, type EngineReservation as EngineQueueReservation } from './engine-queue.ts';
import type { EngineLimits } from './locked-database.ts';

export interface EngineTable {
  schema: TableSchema;
  /** JSON values; `timestamp` columns as integer microseconds, `bytes` as base64. */
  rows: Record<string, unknown>[];
}

export interface EngineRequest {
  tables: EngineTable[];
  /** One SELECT in DuckDB's dialect, reading the tables by their schema names. */
  sql: string;
  /** Time from this call to the answer, waiting for a process included. */
  timeoutMs: number;
  /** Whose query it is (an API key id): a key runs at most `perKey` queries at once. */
  key?: string;
  /** The answer's first rows only: the engine reads no further. Default: no row cap. */
  maxRows?: number;
}

/** A query run in a reserved turn: its time and key are the reservation's. */
export type ReservedRequest = Omit<EngineRequest, 'timeoutMs' | 'key'>;

/** A query's place in the engine's turns, taken before its scans (EngineQueue). */
export interface EngineReservation {
  /** Waits for the turn (in turn order, by the reservation's deadline), then runs the query. Once. */
  run(request: ReservedRequest): Promise<EngineResult>;
  /** Frees the place of a query that will not run (its scans failed); after run(), nothing to do. May be called again. */
  release(): void;
}

export interface EngineResult {
  columns: ResultColumn[];
  /** Values already in the API's JSON form (docs/design/DESIGN.md 1). */
  rows: Record<string, unknown>[];
  /** The query had rows beyond `maxRows`, which were not read. */
  truncated: boolean;
}

export interface EngineOptions extends EngineLimits {
  logger: Logger;
  /** Engine processes, each running one request at a time. */
  poolSize?: number;
  /** How long an interrupted query may take to stop before its process is killed. */
  interruptGraceMs?: number;
  /** JSON bytes of the rows one query may return (SANDBOX_MAX_RESULT_BYTES). */
  maxResultBytes?: number;
  /** Queries one key may run at once; default: every process. */
  perKey?: number;
  /** Queries one key may have waiting for a process; default: no bound. */
  maxWaitingPerKey?: number;
  /** Queries waiting for a process in all; default: no bound. */
  maxWaiting?: number;
}

const ENTRY = modulePath('src/executor/engine/engine-process');
const START_TIMEOUT_MS = 30_000;
const ROWS_PER_MESSAGE = 2_000;
/** Whose query it is when the caller does not say. */
const NO_KEY = '';

/**
 * Runs residual queries in DuckDB in child processes, so that DuckDB's native failures and its
 * CPU-bound work stay off the query service's process and event loop. Requests take turns for a
 * process by key (EngineQueue), within the time they were given; a process that dies fails only the
 * request it was running and is replaced.
 */
export class EmbeddedEngine {
  private readonly idle: EngineProcess[] = [];
  /** Processes that answered and are resetting their database before they take another request. */
  private readonly resetting = new Set<EngineProcess>();
  private readonly waiting: ((process: EngineProcess) => void)[] = [];
  private readonly queue: EngineQueue;
  private closing = false;

  private constructor(private readonly options: Required<EngineOptions>) {
    this.queue = new EngineQueue({
      slots: options.poolSize,
      perKey: options.perKey,
      maxWaiting: options.maxWaiting,
      maxWaitingPerKey: options.maxWaitingPerKey,
    });
  }

  static async start(options: EngineOptions): Promise<EmbeddedEngine> {
    const poolSize = options.poolSize ?? 1;
    const engine = new EmbeddedEngine({
      interruptGraceMs: 2_000,
      maxResultBytes: 16 * 1024 * 1024,
      perKey: poolSize,
      maxWaitingPerKey: Infinity,
      maxWaiting: Infinity,
      ...options,
      poolSize,
    });
    const started = Date.now();
    const processes = await Promise.all(Array.from({ length: engine.options.poolSize }, () => EngineProcess.start(engine.options)));
    engine.idle.push(...processes);
    options.logger.info({ poolSize: processes.length, startMs: Date.now() - started }, 'embedded engine started');
    return engine;
  }

  async run(request: EngineRequest): Promise<EngineResult> {
    const reservation = this.reserve(request.key ?? NO_KEY, performance.now() + request.timeoutMs);
    try {
      return await reservation.run(request);
    } finally {
      reservation.release();
    }
  }

  /**
   * A place in the engine's turns for a query that has until `deadline` (performance.now()'s clock),
   * taken before its scans; throws RateLimited or StoreUnavailable (with Retry-After) when the key or
   * the engine may take no more.
   */
  reserve(key: string, deadline: number): EngineReservation {
    if (this.closing) throw new StoreUnavailable('the query engine is shutting down');
    const place = this.queue.reserve(key, deadline);
    let ran = false;
    return {
      run: (request) => {
        ran = true;
        return this.runIn(place, deadline, request);
      },
      // once run, the place is the query's turn, which the run frees when the query is over
      release: () => {
        if (!ran) place.release();
      },
    };
  }

  private async runIn(place: EngineQueueReservation, deadline: number, request: ReservedRequest): Promise<EngineResult> {
    const turn = await place.turn();
    try {
      if (this.closing) throw new StoreUnavailable('the query engine is shutting down');
      let process = await this.acquire();
      try {
        if (!process.alive) process = await EngineProcess.start(this.options);
        const timeoutMs = deadline - performance.now();
        if (timeoutMs <= 0) throw outOfTime();
        const result = await process.run({ ...request, timeoutMs });
        if (result.truncated) sandboxEngineTruncatedResultsTotal.inc();
        return result;
      } finally {
        // after a result the process resets its database before it takes another request
        const resetting = process.resetting;
        if (resetting === undefined) this.release(process);
        else {
          this.resetting.add(process);
          void resetting.then(() => {
            this.resetting.delete(process);
            this.release(process);
          });
        }
      }
    } finally {
      turn.release();
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(this.idle.splice(0).map((process) => process.stop()));
  }

  /** Process ids of the engine processes not running a request (for operators and tests). */
  get idleProcessIds(): number[] {
    return [...this.idle, ...this.resetting].map((process) => process.pid);
  }

  private acquire(): Promise<EngineProcess> {
    const process = this.idle.pop();
    if (process) return Promise.resolve(process);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(process: EngineProcess): void {
    if (this.closing) {
      void process.stop();
      return;
    }
    if (process.alive) this.handOn(process);
    else this.replace(process);
  }

  private handOn(process: EngineProcess): void {
    const next = this.waiting.shift();
    if (next) next(process);
    else this.idle.push(process);
  }

  /** Starts the replacement of a dead process now, so the next request does not wait for it. */
  private replace(dead: EngineProcess): void {
    EngineProcess.start(this.options).then(
      (process) => this.release(process),
      (error: unknown) => {
        this.options.logger.error({ err: error }, 'engine process could not be restarted');
        // Its next user tries again and reports the failure.
        this.handOn(dead);
      },
    );
  }
}

interface PendingRequest {
  id: number;
  resolve: (result: EngineResult) => void;
  reject: (error: Error) => void;
  timedOut: boolean;
  /** Result rows received so far, as their values. */
  rows: unknown[][];
}

/** One forked engine process and the request it is running. */
class EngineProcess {
  private nextRequestId = 1;
  private pending: PendingRequest | undefined;
  private exited = false;
  private resetDone: (() => void) | undefined;
  /** Set from a result until the process says it is idle again (or exits). */
  resetting: Promise<void> | undefined;

  private constructor(
    private readonly child: ChildProcess,
    private readonly options: Required<EngineOptions>,
  ) {
    child.on('message', (message: EngineMessage) => this.receive(message));
    child.on('exit', (code, signal) => this.exit(code, signal));
  }

  static start(options: Required<EngineOptions>): Promise<EngineProcess> {
    const limits: EngineLimits = { memoryLimit: options.memoryLimit, threads: options.threads };
    const child = fork(ENTRY, [JSON.stringify(limits)], {
      cwd: repositoryRoot,
      execArgv: [...loaderArgs],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'json',
    });
    // DuckDB writes what it dies of (e.g. "terminate called after throwing ...") to stderr.
    createInterface({ input: child.stderr! }).on('line', (line) => options.logger.warn({ enginePid: child.pid, stderr: line }, 'engine process stderr'));
    return new Promise((resolve, reject) => {
      const fail = (message: string): void => {
        clearTimeout(timer);
        child.kill('SIGKILL');
        reject(new StoreUnavailable(`the query engine could not start: ${message}`));
      };
      const timer = setTimeout(() => fail(`no answer within ${START_TIMEOUT_MS} ms`), START_TIMEOUT_MS);
      child.once('exit', (code, signal) => fail(`its process exited (${signal ?? `code ${code}`})`));
      child.once('message', (message: EngineMessage) => {
        if (message.type !== 'ready') {
          fail(message.type === 'start_failed' ? message.message : `unexpected first message ${message.type}`);
          return;
        }
        clearTimeout(timer);
        child.removeAllListeners('exit');
        options.logger.info({ enginePid: child.pid }, 'engine process ready');
        resolve(new EngineProcess(child, options));
      });
    });
  }

  get alive(): boolean {
    return !this.exited;
  }

  get pid(): number {
    return this.child.pid!;
  }

  run(request: EngineRequest): Promise<EngineResult> {
    const id = this.nextRequestId++;
    const result = new Promise<EngineResult>((resolve, reject) => {
      this.pending = { id, resolve, reject, timedOut: false, rows: [] };
    });
    const pending = this.pending!;
    const interruptTimer = setTimeout(() => {
      pending.timedOut = true;
      this.options.logger.warn({ enginePid: this.pid, requestId: id, timeoutMs: request.timeoutMs }, 'engine query timed out; interrupting');
      void this.send({ type: 'interrupt', requestId: id });
      graceTimer = setTimeout(() => {
        this.options.logger.error({ enginePid: this.pid, requestId: id }, 'engine query did not stop when interrupted; killing its process');
        this.child.kill('SIGKILL');
      }, this.options.interruptGraceMs);
    }, request.timeoutMs);
    let graceTimer: NodeJS.Timeout | undefined;
    void this.sendRequest(id, request, pending);
    return result.finally(() => {
      clearTimeout(interruptTimer);
      clearTimeout(graceTimer);
      this.pending = undefined;
    });
  }

  /** Graceful: closing the IPC channel ends the process; SIGKILL if it lingers. */
  stop(): Promise<void> {
    if (this.exited) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 2_000);
      this.child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      this.child.disconnect();
    });
  }

  private async sendRequest(id: number, request: EngineRequest, pending: PendingRequest): Promise<void> {
    try {
      await this.send({ type: 'begin', requestId: id, tables: request.tables.map((table) => table.schema) });
      for (const [table, { schema, rows }] of request.tables.entries()) {
        for (let first = 0; first < rows.length; first += ROWS_PER_MESSAGE) {
          // Stop feeding rows once the query is out of time or finished.
          if (pending.timedOut || this.pending !== pending) return;
          const rowCount = Math.min(ROWS_PER_MESSAGE, rows.length - first);
          await this.send({ type: 'rows', requestId: id, table, firstRowNumber: first, rowCount, columns: columnsOf(rows, schema.columns, first, rowCount) });
        }
      }
      await this.send({
        type: 'run',
        requestId: id,
        sql: request.sql,
        maxRows: request.maxRows ?? Number.MAX_SAFE_INTEGER,
        maxBytes: this.options.maxResultBytes,
      });
    } catch (error) {
      // A closed channel is answered by the exit handler; anything else (rows JSON cannot carry) here.
      if (this.exited) return;
      pending.reject(new InvalidQuery(`cannot hand the rows to the query engine: ${(error as Error).message}`));
    }
  }

  private send(message: ServiceMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.exited || !this.child.connected) {
        reject(new Error('the engine process is gone'));
        return;
      }
      this.child.send(message, (error) => (error ? reject(error) : resolve()));
    });
  }

  private receive(message: EngineMessage): void {
    if (message.type === 'idle') {
      this.idleAgain();
      return;
    }
    const pending = this.pending;
    if (pending === undefined || !('requestId' in message) || message.requestId !== pending.id) return;
    if (message.type === 'result_rows') {
      sandboxEngineResultRowsTotal.inc(message.rows.length);
      for (const row of message.rows) pending.rows.push(row);
      return;
    }
    if (message.type === 'result') {
      this.resetting = new Promise((resolve) => {
        this.resetDone = resolve;
      });
      pending.resolve({ columns: message.columns, rows: rowObjects(pending.rows, message.columns), truncated: message.truncated });
      return;
    }
    if (message.type !== 'failure') return;
    switch (message.reason) {
      case 'interrupted':
        pending.reject(new QueryTimeout(`the query ran longer than its time limit and was stopped`));
        break;
      case 'out_of_memory':
        // Only DuckDB's first line: the rest advises operators on settings a client cannot change.
        pending.reject(
          new QueryTooExpensive(`the query needs more memory than the engine's limit of ${this.options.memoryLimit}: ${message.message.split('\n')[0]}`),
        );
        break;
      case 'result_too_large':
        pending.reject(
          new QueryTooExpensive(
            `the query's result is larger than ${this.options.maxResultBytes} bytes (SANDBOX_MAX_RESULT_BYTES) of JSON; select fewer or shorter columns (substr), fewer rows (LIMIT), or aggregate`,
          ),
        );
        break;
      case 'value_too_large':
        pending.reject(new QueryTooExpensive(`${message.message}; use shorter values, fewer repetitions or a smaller range`));
        break;
      case 'invalid_query':
        pending.reject(new InvalidQuery(message.message));
        break;
      case 'internal':
        pending.reject(new Error(`query engine failure: ${message.message}`));
        break;
    }
  }

  private idleAgain(): void {
    this.resetDone?.();
    this.resetDone = undefined;
    this.resetting = undefined;
  }

  private exit(code: number | null, signal: NodeJS.Signals | null): void {
    this.exited = true;
    this.idleAgain();
    const pending = this.pending;
    if (pending === undefined) {
      this.options.logger.info({ enginePid: this.child.pid, code, signal }, 'engine process exited');
      return;
    }
    this.options.logger.warn({ enginePid: this.child.pid, code, signal, requestId: pending.id }, 'engine process exited while running a request');
    pending.reject(
      pending.timedOut
        ? new QueryTimeout('the query ran longer than its time limit and was stopped')
        : new StoreUnavailable(`the query engine stopped while running this query (${signal ?? `exit code ${code}`}); it is being restarted, retry the query`),
    );
  }
}
