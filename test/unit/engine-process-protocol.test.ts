import { fork, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loaderArgs, modulePath, repositoryRoot } from '../../shared/module-runtime.ts';
import type { EngineMessage, ServiceMessage } from '../../src/executor/engine/engine-protocol.ts';

/**
 * The engine process's side of the protocol, spoken to directly: the order of its messages is what lets
 * the service hand a result to its caller before the database is reset, and take the process back only
 * once it is.
 */
let child: ChildProcess;
const received: EngineMessage[] = [];
let arrived: (() => void) | undefined;

beforeAll(async () => {
  child = fork(modulePath('src/executor/engine/engine-process'), [JSON.stringify({ memoryLimit: '256MB', threads: 1 })], {
    cwd: repositoryRoot,
    execArgv: [...loaderArgs],
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    serialization: 'json',
  });
  child.on('message', (message: EngineMessage) => {
    received.push(message);
    arrived?.();
  });
  await until((messages) => messages.some((message) => message.type === 'ready'));
});
afterAll(() => {
  child?.kill('SIGKILL');
});

async function until(done: (messages: EngineMessage[]) => boolean): Promise<void> {
  while (!done(received)) await new Promise<void>((resolve) => (arrived = resolve));
}

const send = (message: ServiceMessage) => new Promise<void>((resolve, reject) => child.send(message, (error) => (error ? reject(error) : resolve())));

async function request(requestId: number, sql: string): Promise<string[]> {
  received.length = 0;
  const table = { name: 'numbers', columns: [{ name: 'n', type: { kind: 'int64' as const } }] };
  await send({ type: 'begin', requestId, tables: [table] });
  await send({ type: 'rows', requestId, table: 0, firstRowNumber: 0, rowCount: 2, columns: [[1, 2]] });
  await send({ type: 'run', requestId, sql, maxRows: 100, maxBytes: 1_000_000 });
  await until((messages) => messages.some((message) => message.type === 'idle' || message.type === 'failure'));
  // anything sent after the last expected message would arrive before this second request's answer
  return received.map((message) => message.type);
}

describe('the engine process', () => {
  it('sends a result before it resets its database, then says idle', async () => {
    expect(await request(1, 'select sum(n) as total from numbers')).toEqual(['result_rows', 'result', 'idle']);
    expect(received[0]).toEqual({ type: 'result_rows', requestId: 1, rows: [[3]] });
    expect(received[1]).toMatchObject({ type: 'result', columns: [{ name: 'total' }] });
    expect(received[2]).toEqual({ type: 'idle', requestId: 1 });
  });

  it("answers a query's own failure after its reset, with no idle message", async () => {
    expect(await request(2, 'select missing_column from numbers')).toEqual(['failure']);
  });

  it('runs the next request in a reset database: the last one left no table behind', async () => {
    expect(await request(3, 'select count(*) as tables from duckdb_tables()')).toEqual(['result_rows', 'result', 'idle']);
    // the request's own table only: neither earlier request's `numbers` was kept
    expect(received[0]).toEqual({ type: 'result_rows', requestId: 3, rows: [[1]] });
  });
});
