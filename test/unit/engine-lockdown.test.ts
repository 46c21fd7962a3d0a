import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidQuery } from '../../src/errors.ts';
import { EmbeddedEngine } from '../../src/executor/engine/embedded-engine.ts';
import { openLockedDatabase, type LockedDatabase } from '../../src/executor/engine/locked-database.ts';

const limits = { memoryLimit: '256MB', threads: 1 };
const scratch = (name: string): string => path.join(tmpdir(), `engine-lockdown-${process.pid}-${name}`);
const csv = scratch('out.csv');
const attached = scratch('attached.db');
const exported = scratch('exported');

/** Each is refused, by the engine's one-SELECT rule or by DuckDB's lock-down. */
const refused: [string, string][] = [
  ['read_csv', `select * from read_csv('/etc/passwd')`],
  ['read_csv_auto', `select * from read_csv_auto('/etc/passwd')`],
  ['read_json', `select * from read_json('/etc/hostname')`],
  ['read_json_auto', `select * from read_json_auto('/etc/hostname')`],
  ['read_parquet', `select * from read_parquet('/tmp/x.parquet')`],
  ['read_text', `select * from read_text('/etc/passwd')`],
  ['read_blob', `select * from read_blob('/etc/passwd')`],
  ['glob', `select * from glob('/*')`],
  ['a file path as a table', `select * from '/etc/passwd'`],
  ['http URL in a read function', `select * from read_csv('http://127.0.0.1:9/x.csv')`],
  ['https URL in a read function', `select * from read_json('https://example.com/x.json')`],
  ['COPY TO', `COPY (select 1) TO '${csv}'`],
  ['COPY in a multi-statement', `select 1; COPY (select 1) TO '${csv}'`],
  ['ATTACH', `ATTACH '${attached}'`],
  ['INSTALL', 'INSTALL httpfs'],
  ['LOAD', 'LOAD httpfs'],
  ['SET enable_external_access', 'SET enable_external_access = true'],
  ['SET lock_configuration', 'SET lock_configuration = false'],
  ['RESET', 'RESET enable_external_access'],
  ['PRAGMA', 'PRAGMA enable_profiling'],
  ['ATTACH of an in-memory database, which DuckDB itself allows', `ATTACH ':memory:' AS other`],
  ['CALL of a file-reading function', `CALL read_csv('/etc/passwd')`],
  ['CALL enable_logging', `CALL enable_logging()`],
  ['EXPORT DATABASE', `EXPORT DATABASE '${exported}'`],
  ['IMPORT DATABASE', `IMPORT DATABASE '${exported}'`],
  ['UPDATE duckdb_settings()', `UPDATE duckdb_settings() SET value = 'true' WHERE name = 'enable_external_access'`],
  ['CREATE TABLE', 'CREATE TABLE kept AS SELECT 1'],
];

describe('the embedded engine refuses everything that reaches outside the query', () => {
  let engine: EmbeddedEngine;
  beforeAll(async () => {
    engine = await EmbeddedEngine.start({ ...limits, logger: pino({ level: 'silent' }) });
  });
  afterAll(async () => {
    await engine?.close();
  });

  it.each(refused)('%s', async (_, sql) => {
    await expect(engine.run({ tables: [], sql, timeoutMs: 10_000 })).rejects.toThrow(InvalidQuery);
    const next = await engine.run({ tables: [], sql: 'select 42 as answer', timeoutMs: 10_000 });
    expect(next.rows).toEqual([{ answer: 42 }]);
  });

  it('created no file', () => {
    for (const file of [csv, attached, exported]) expect(existsSync(file), file).toBe(false);
  });

  it('still reports the lock-down settings after all of the above', async () => {
    const result = await engine.run({
      tables: [],
      sql: `select name, value from duckdb_settings() where name in ('enable_external_access', 'lock_configuration', 'autoload_known_extensions') order by name`,
      timeoutMs: 10_000,
    });
    expect(result.rows).toEqual([
      { name: 'autoload_known_extensions', value: 'false' },
      { name: 'enable_external_access', value: 'false' },
      { name: 'lock_configuration', value: 'true' },
    ]);
  });

  it('names the refused statement kind', async () => {
    await expect(engine.run({ tables: [], sql: `ATTACH ':memory:' AS other`, timeoutMs: 10_000 })).rejects.toThrow(/only SELECT statements; got ATTACH/);
    await expect(engine.run({ tables: [], sql: 'PRAGMA enable_profiling', timeoutMs: 10_000 })).rejects.toThrow(/only SELECT statements; got PRAGMA/);
    await expect(engine.run({ tables: [], sql: 'select 1; select 2', timeoutMs: 10_000 })).rejects.toThrow(/exactly one SELECT statement; got 2/);
  });

  it('does not keep tables from one request to the next', async () => {
    const table = { schema: { name: 'private_rows', columns: [{ name: 'secret', type: { kind: 'string' as const } }] }, rows: [{ secret: 's' }] };
    expect((await engine.run({ tables: [table], sql: 'select secret from private_rows', timeoutMs: 10_000 })).rows).toEqual([{ secret: 's' }]);
    await expect(engine.run({ tables: [], sql: 'select * from private_rows', timeoutMs: 10_000 })).rejects.toThrow(/private_rows does not exist/);
  });

  // enable_logging is a table function a SELECT can call even on a locked database. With file
  // storage it makes every later query of that database fail and DuckDB abort when it closes (see
  // the next block): the SQL allow-list must keep it out. Below it, the engine gives every request a
  // fresh database, so the poisoned one is dropped with its request; and a process that aborts
  // anyway is replaced (engine-execution.test.ts).
  it('lets enable_logging run but drops its database with the request: the next query is unaffected', async () => {
    const logs = scratch('logs');
    const call = await engine.run({ tables: [], sql: `select * from enable_logging(storage = 'file', storage_path = '${logs}')`, timeoutMs: 10_000 });
    expect(call.columns.map((column) => column.name)).toEqual(['Success']);
    const next = await engine.run({ tables: [], sql: 'select 42 as answer, (select count(*) from duckdb_logs) as logged', timeoutMs: 10_000 });
    expect(next.rows).toEqual([{ answer: 42, logged: 0 }]);
    expect(existsSync(logs)).toBe(false);
  });

  // the engine process keeps its database from one request to the next (ReusableDatabase)
  it('turns logging on for one request only: the next runs in a database with logging off', async () => {
    await engine.run({ tables: [], sql: 'select * from enable_logging()', timeoutMs: 10_000 });
    const next = await engine.run({ tables: [], sql: `select current_setting('enable_logging') as logging`, timeoutMs: 10_000 });
    expect(next.rows).toEqual([{ logging: 0 }]);
  });

  it('serves request after request once a query has failed on its own', async () => {
    const table = { schema: { name: 'numbers', columns: [{ name: 'n', type: { kind: 'int64' as const } }] }, rows: [{ n: 1 }, { n: 2 }] };
    await expect(engine.run({ tables: [table], sql: 'select no_such_column from numbers', timeoutMs: 10_000 })).rejects.toThrow(/no_such_column/);
    for (let request = 0; request < 3; request += 1) {
      expect((await engine.run({ tables: [table], sql: 'select sum(n) as total from numbers', timeoutMs: 10_000 })).rows).toEqual([{ total: 3 }]);
    }
  });
});

describe('a locked database refuses on its own, below the engine', () => {
  let database: LockedDatabase;
  beforeAll(async () => {
    database = await openLockedDatabase(limits);
  });
  afterAll(() => database?.close());

  it('reads every lock-down setting back as set', async () => {
    const rows = (
      await database.connection.runAndReadAll(
        `select name, value from duckdb_settings() where name in ('temp_directory', 'enable_external_access', 'allow_community_extensions', 'TimeZone', 'lock_configuration') order by name`,
      )
    ).getRowObjectsJS();
    expect(rows).toEqual([
      { name: 'TimeZone', value: 'UTC' },
      { name: 'allow_community_extensions', value: 'false' },
      { name: 'enable_external_access', value: 'false' },
      { name: 'lock_configuration', value: 'true' },
      { name: 'temp_directory', value: '' },
    ]);
  });

  it.each([
    [`select * from read_csv('/etc/passwd')`, /Permission Error/],
    [`select * from read_text('/etc/passwd')`, /Permission Error/],
    [`select * from glob('/*')`, /Permission Error/],
    [`COPY (select 1) TO '${csv}'`, /Permission Error/],
    [`ATTACH '${attached}'`, /Permission Error/],
    ['SET enable_external_access = true', /configuration has been locked/],
    ['SET lock_configuration = false', /configuration has been locked/],
    ["SET temp_directory = '/tmp'", /configuration has been locked/],
    ['LOAD httpfs', /./],
  ])('%s', async (sql, message) => {
    await expect(database.connection.run(sql)).rejects.toThrow(message);
    expect((await database.connection.runAndReadAll('select 1 as one')).getRowObjectsJS()).toEqual([{ one: 1 }]);
  });
});

describe('enable_logging on a locked database, in a process of its own', () => {
  it('makes the next query fail and DuckDB abort the process when the database closes', async () => {
    const { spawnSync } = await import('node:child_process');
    const logs = scratch('poisoned-logs');
    const script = `
      import { openLockedDatabase } from './src/executor/engine/locked-database.ts';
      const database = await openLockedDatabase({ memoryLimit: '256MB', threads: 1 });
      await database.connection.run("select * from enable_logging(storage = 'file', storage_path = '${logs}')");
      await database.connection.run('select 1').catch((error) => console.log('next query:', error.message));
      database.close();
      console.log('closed cleanly');
    `;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script], {
      encoding: 'utf8',
      cwd: path.resolve(import.meta.dirname, '../..'),
    });
    expect(child.stdout).toMatch(/next query: Permission Error/);
    expect(child.stdout).not.toMatch(/closed cleanly/);
    expect(child.signal).toBe('SIGABRT');
  });
});
