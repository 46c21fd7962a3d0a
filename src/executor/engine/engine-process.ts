/**
 * The engine process: runs residual queries in DuckDB for the query service, which forks it so that
 * a native abort inside DuckDB ends this process and never the service. One request at a time, each
 * in a locked in-memory database that nothing a query creates or sets (tables, ATTACHed databases,
 * macros, logging) outlives: the database is kept for the next request only when, its tables dropped,
 * it reads back exactly as it was opened, and the request ended in an answer or the query's own error
 * (ReusableDatabase); otherwise it is closed with the request and a fresh one, which costs 12-20 ms,
 * is opened while the process waits for work.
 */
import { StatementType, type DuckDBConnection, type DuckDBPreparedStatement, type DuckDBType, type DuckDBValue } from '@duckdb/node-api';
import { valueTooLargeMessage } from '../duckdb-sql/value-size.ts';
import { BoundedResult, isStringTooLong, ResultTooLarge } from './bounded-result.ts';
import type { EngineMessage, FailureReason, ResultColumn, ServiceMessage } from './engine-protocol.ts';
import type { EngineLimits } from './locked-database.ts';
import { openReusableDatabase, type ReusableDatabase } from './reusable-database.ts';
import { apiValue } from './result-values.ts';
import { TableLoad } from './table-loader.ts';

interface Request {
  id: number;
  database: ReusableDatabase;
  loads: TableLoad[];
  interrupted: boolean;
  /** The first thing that went wrong while loading; reported when the query would run. */
  failure?: Failure;
}

class Failure extends Error {
  constructor(
    readonly reason: FailureReason,
    message: string,
  ) {
    super(message);
  }
}

const limits = JSON.parse(process.argv[2] ?? '{}') as EngineLimits;
/** Result rows travel in messages of about this many JSON bytes. */
const RESULT_BATCH_BYTES = 256 * 1024;
/** Failures after which the database is still fit to serve, once reset: the query's own, not DuckDB's. */
const REUSABLE_AFTER: ReadonlySet<FailureReason> = new Set(['invalid_query', 'result_too_large', 'value_too_large']);
let spareDatabase: Promise<ReusableDatabase> | undefined;
/** Poisoned databases, kept open until the process ends: closing one aborts it (docs/design/DESIGN.md 2). */
const setAside: ReusableDatabase[] = [];
let current: Request | undefined;
let work: Promise<void> = Promise.resolve();

function reply(message: EngineMessage): Promise<void> {
  return new Promise((resolve) => process.send!(message, () => resolve()));
}

function takeDatabase(): Promise<ReusableDatabase> {
  const database = spareDatabase ?? openReusableDatabase(limits);
  spareDatabase = undefined;
  return database;
}

function openSpareDatabase(): void {
  spareDatabase = openReusableDatabase(limits);
  // A failure is reported by the request that takes this database.
  spareDatabase.catch(() => undefined);
}

/** DuckDB names the kind of error first: "Binder Error: ...", "Out of Memory Error: ...". */
function failureOf(error: unknown, duringQuery: boolean): Failure {
  if (error instanceof Failure) return error;
  if (error instanceof ResultTooLarge) return new Failure('result_too_large', error.message);
  const message = error instanceof Error ? error.message : String(error);
  if (message.startsWith('Out of Memory Error')) return new Failure('out_of_memory', message);
  if (message.startsWith('INTERRUPT Error')) return new Failure('interrupted', message);
  const tooLarge = valueTooLargeMessage(message);
  if (tooLarge !== undefined) return new Failure('value_too_large', tooLarge);
  if (!duringQuery || /^(INTERNAL|FATAL) Error/.test(message)) return new Failure('internal', message);
  return new Failure('invalid_query', cleanQueryError(message));
}

/** Drops the "LINE n: ..." excerpt: it quotes the translated SQL, which the client never wrote. */
function cleanQueryError(message: string): string {
  return message.replace(/\n+LINE \d+:[\s\S]*$/, '').trim();
}

async function begin(message: Extract<ServiceMessage, { type: 'begin' }>): Promise<void> {
  const database = await takeDatabase().catch((error: unknown) => {
    throw new Failure('internal', `cannot open a locked DuckDB database: ${(error as Error).message}`);
  });
  const request: Request = { id: message.requestId, database, loads: [], interrupted: false };
  current = request;
  try {
    for (const [index, table] of message.tables.entries()) request.loads.push(await TableLoad.begin(database.connection, table, index));
  } catch (error) {
    request.failure = failureOf(error, false);
  }
}

function appendRows(message: Extract<ServiceMessage, { type: 'rows' }>): void {
  const request = current;
  if (request === undefined || request.id !== message.requestId || request.failure !== undefined) return;
  if (request.interrupted) {
    request.failure = new Failure('interrupted', 'interrupted while loading rows');
    return;
  }
  try {
    request.loads[message.table]!.appendColumns(message.columns, message.rowCount, message.firstRowNumber);
  } catch (error) {
    request.failure = failureOf(error, false);
  }
}

async function run(message: Extract<ServiceMessage, { type: 'run' }>): Promise<void> {
  const request = current;
  if (request === undefined || request.id !== message.requestId) {
    await reply({ type: 'failure', requestId: message.requestId, reason: 'internal', message: 'the engine has no tables for this request' });
    return;
  }
  let answer: EngineMessage;
  try {
    if (request.failure) throw request.failure;
    for (const load of request.loads) await load.finish().catch((error: unknown) => Promise.reject(failureOf(error, false)));
    answer = { type: 'result', requestId: request.id, ...(await query(request, message)) };
  } catch (error) {
    const failure = failureOf(error, true);
    answer = { type: 'failure', requestId: request.id, reason: request.interrupted ? 'interrupted' : failure.reason, message: failure.message };
  }
  current = undefined;
  const reusable = !request.interrupted && (answer.type === 'result' || (answer.type === 'failure' && REUSABLE_AFTER.has(answer.reason)));
  // A result goes out before the reset, which the caller need not wait for; the process says `idle` once
  // it is done, and the service sends it nothing before that, so a close that aborts fails no request.
  // A failure is answered after the reset, as the service takes the process back with it.
  if (answer.type === 'result') await reply(answer);
  const outcome = reusable ? await request.database.reset(request.loads.flatMap((load) => load.createdTables)) : 'changed';
  if (outcome === 'reusable') spareDatabase = Promise.resolve(request.database);
  else if (outcome === 'poisoned') setAside.push(request.database);
  else request.database.close();
  await reply(answer.type === 'result' ? { type: 'idle', requestId: request.id } : answer);
  if (outcome !== 'reusable') openSpareDatabase();
}

/**
 * Runs the query as a stream and reads it one row at a time: rows past `maxRows` are never read, and
 * each row's JSON counts against `maxBytes` before it is kept. Rows go out in batches as they are read.
 */
async function query(request: Request, message: Extract<ServiceMessage, { type: 'run' }>): Promise<{ columns: ResultColumn[]; truncated: boolean }> {
  const prepared = await prepareOne(request.database.connection, message.sql);
  if (prepared.statementType !== StatementType.SELECT) {
    throw new Failure('invalid_query', `the engine runs only SELECT statements; got ${StatementType[prepared.statementType]}`);
  }
  const result = await prepared.stream();
  const names = result.columnNames();
  const types = result.columnTypes();
  const duplicate = names.find((name, index) => names.indexOf(name) !== index);
  if (duplicate !== undefined)
    throw new Failure('invalid_query', `the result has two columns named ${JSON.stringify(duplicate)}; give each column its own alias`);
  // a row travels as its values; the caller's row object also holds `"name":` for each column
  const keyBytes = names.reduce((sum, name) => sum + Buffer.byteLength(JSON.stringify(name)) + 1, 0);
  const rows = new BoundedResult<unknown[]>({ maxRows: message.maxRows, maxBytes: message.maxBytes, batchBytes: RESULT_BATCH_BYTES }, keyBytes);
  const send = (batch: unknown[][]) => reply({ type: 'result_rows', requestId: request.id, rows: batch });
  let truncated = false;
  reading: for (;;) {
    if (request.interrupted) throw new Failure('interrupted', 'interrupted while reading the result');
    const chunk = await result.fetchChunk();
    if (chunk === null || chunk.rowCount === 0) break;
    for (let index = 0; index < chunk.rowCount; index += 1) {
      if (rows.full) {
        truncated = true;
        break reading;
      }
      const batch = rows.add(resultRow(() => chunk.getRowValues(index), types, message.maxBytes, rows.rowCount));
      if (batch) await send(batch);
    }
  }
  const rest = rows.take();
  if (rest.length > 0) await send(rest);
  return { columns: names.map((name, index) => ({ name, duckDbType: types[index]!.alias ?? types[index]!.toString() })), truncated };
}

/**
 * DuckDB prepares exactly one statement and runs none when it refuses: the statements are counted,
 * for the error, only then (counting first would cost every query a trip through DuckDB's worker thread).
 */
async function prepareOne(connection: DuckDBConnection, sql: string): Promise<DuckDBPreparedStatement> {
  try {
    return await connection.prepare(sql);
  } catch (error) {
    if (!/^Invalid Input Error: (Cannot prepare multiple statements at once|No statement to prepare)!/.test((error as Error).message)) throw error;
    const statements = await connection.extractStatements(sql);
    if (statements.count !== 1) throw new Failure('invalid_query', `the engine runs exactly one SELECT statement; got ${statements.count}`);
    throw error;
  }
}

/** One result row's values in the API's form; a value longer than a JavaScript string can be is too large for any byte cap. */
function resultRow(read: () => DuckDBValue[], types: DuckDBType[], maxBytes: number, rowsBefore: number): unknown[] {
  try {
    return read().map((value, column) => apiValue(value, types[column]!));
  } catch (error) {
    if (isStringTooLong(error)) throw new ResultTooLarge(maxBytes, rowsBefore + 1);
    throw error;
  }
}

function interrupt(message: Extract<ServiceMessage, { type: 'interrupt' }>): void {
  if (current === undefined || current.id !== message.requestId) return;
  current.interrupted = true;
  current.database.connection.interrupt();
}

process.on('message', (message: ServiceMessage) => {
  if (message.type === 'interrupt') {
    interrupt(message);
    return;
  }
  work = work.then(async () => {
    try {
      if (message.type === 'begin') await begin(message);
      else if (message.type === 'rows') appendRows(message);
      else await run(message);
    } catch (error) {
      const failure = failureOf(error, false);
      await reply({ type: 'failure', requestId: message.requestId, reason: failure.reason, message: failure.message });
    }
  });
});

// The service went away: nothing is left to answer.
process.on('disconnect', () => process.exit(0));

try {
  spareDatabase = Promise.resolve(await openReusableDatabase(limits));
  await reply({ type: 'ready' });
} catch (error) {
  await reply({ type: 'start_failed', message: (error as Error).message });
  process.exit(1);
}
