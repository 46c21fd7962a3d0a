import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';

export interface EngineLimits {
  /** DuckDB's memory_limit, e.g. '512MB'. */
  memoryLimit: string;
  threads: number;
}

/** An in-memory DuckDB database that cannot reach files, the network or extensions, with its one connection. */
export interface LockedDatabase {
  connection: DuckDBConnection;
  close(): void;
}

/**
 * Opening options in the order docs/design/DESIGN.md 2 requires: `temp_directory` must be the first key, or
 * DuckDB may create a spill directory before external access is switched off.
 */
function openingOptions(limits: EngineLimits): Record<string, string> {
  return {
    temp_directory: '',
    enable_external_access: 'false',
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
    allow_community_extensions: 'false',
    memory_limit: limits.memoryLimit,
    threads: String(limits.threads),
  };
}

/** What duckdb_settings() must read back before the database serves a query. */
function expectedSettings(limits: EngineLimits): Record<string, (value: string) => boolean> {
  return {
    temp_directory: (value) => value === '',
    enable_external_access: (value) => value === 'false',
    autoinstall_known_extensions: (value) => value === 'false',
    autoload_known_extensions: (value) => value === 'false',
    allow_community_extensions: (value) => value === 'false',
    // DuckDB prints the limit in its own units (512MB reads back as 488.2 MiB): any finite limit will do.
    memory_limit: (value) => /^\d+(\.\d+)? [KMGT]i?B$/.test(value),
    threads: (value) => value === String(limits.threads),
    TimeZone: (value) => value === 'UTC',
    lock_configuration: (value) => value === 'true',
  };
}

export class LockDownFailed extends Error {}

export async function openLockedDatabase(limits: EngineLimits): Promise<LockedDatabase> {
  const instance = await DuckDBInstance.create(':memory:', openingOptions(limits));
  const connection = await instance.connect();
  const close = (): void => {
    connection.closeSync();
    instance.closeSync();
  };
  try {
    await connection.run(`SET TimeZone = 'UTC'`);
    await connection.run('SET lock_configuration = true');
    await verifySettings(connection, limits);
  } catch (error) {
    close();
    throw error;
  }
  return { connection, close };
}

async function verifySettings(connection: DuckDBConnection, limits: EngineLimits): Promise<void> {
  const expected = expectedSettings(limits);
  const reader = await connection.runAndReadAll(
    `SELECT name, value FROM duckdb_settings() WHERE name IN (${Object.keys(expected)
      .map((name) => `'${name}'`)
      .join(', ')})`,
  );
  const actual = new Map(reader.getRowObjectsJS().map((row) => [String(row.name), String(row.value)]));
  const wrong = Object.entries(expected)
    .filter(([name, accepts]) => !actual.has(name) || !accepts(actual.get(name)!))
    .map(([name]) => `${name}=${actual.get(name) ?? '(missing)'}`);
  if (wrong.length > 0) throw new LockDownFailed(`DuckDB lock-down not in force: ${wrong.join(', ')}`);
}
