import { openLockedDatabase, type EngineLimits, type LockedDatabase } from './locked-database.ts';

/** A locked database that may serve one request after another (see `openReusableDatabase`). */
export interface ReusableDatabase extends LockedDatabase {
  /** Drops the tables the last request loaded (quoted SQL names, qualified where not in the main schema) if the database may serve another request. */
  reset(tables: readonly string[]): Promise<ResetOutcome>;
}

/**
 * `reusable`: it may serve the next request; `changed`: a setting differs, close it; `poisoned`: it
 * fails every statement and would abort the process if closed, so it must be set aside, never closed.
 */
export type ResetOutcome = 'reusable' | 'changed' | 'poisoned';

/**
 * The settings a SELECT could change through a table function even on a locked database
 * (enable_logging turns logging on), and those the lock-down rests on. Read with current_setting:
 * scanning duckdb_settings() or the catalogs costs more than opening a fresh database saves.
 */
const WATCHED_SETTINGS = [
  'enable_logging',
  'logging_storage',
  'logging_level',
  'logging_mode',
  'enabled_log_types',
  'disabled_log_types',
  'enable_http_logging',
  'http_logging_output',
  'log_query_path',
  'enable_profiling',
  'profiling_mode',
  'profile_output',
  'enable_external_access',
  'lock_configuration',
  'temp_directory',
  'autoinstall_known_extensions',
  'autoload_known_extensions',
  'allow_community_extensions',
  'allow_unsigned_extensions',
  'memory_limit',
  'threads',
  'TimeZone',
];
const STATE_SQL = `SELECT ${WATCHED_SETTINGS.map((name, index) => `CAST(current_setting('${name}') AS VARCHAR) AS s${index}`).join(', ')}`;

async function stateOf(database: LockedDatabase): Promise<string> {
  return stateAfter(database, []);
}

/** Drops `tables`, then reads the watched settings. */
async function stateAfter(database: LockedDatabase, tables: readonly string[]): Promise<string> {
  const drops = tables.map((table) => `DROP TABLE IF EXISTS ${table}; `);
  return JSON.stringify((await database.connection.runAndReadAll(`${drops.join('')}${STATE_SQL}`)).getRows());
}

/**
 * A locked database kept from one request to the next by the engine process: opening one costs
 * 12-20 ms, more than loading and querying a typical residual's rows (bench/engine-steps.ts). After
 * each request its tables are dropped, and it serves again only if its watched settings then read back
 * as they were when it was opened; otherwise the caller closes it with its request.
 */
export async function openReusableDatabase(limits: EngineLimits): Promise<ReusableDatabase> {
  const database = await openLockedDatabase(limits);
  let opened: string;
  try {
    opened = await stateOf(database);
  } catch (error) {
    database.close();
    throw error;
  }
  // a SELECT creates no table, so the request's own are all there is to drop; the drops and the check
  // go in one call (each call is a trip through DuckDB's worker thread), the check read from its last statement
  const reset = async (tables: readonly string[]): Promise<ResetOutcome> => {
    let state: string;
    try {
      state = await stateAfter(database, tables);
    } catch {
      try {
        await stateOf(database);
      } catch {
        // enable_logging to a file makes every later statement fail, and closing the database then aborts
        return 'poisoned';
      }
      return 'changed';
    }
    return state === opened ? 'reusable' : 'changed';
  };
  return { ...database, reset };
}
