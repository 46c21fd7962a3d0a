import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { duckDbTypeName } from '../../src/executor/engine/duckdb-type.ts';
import type { TableSchema } from '../../src/sql/types.ts';

/**
 * An in-memory DuckDB in UTC holding the given tables, for tests that run translated SQL directly
 * (without the engine's child process). `rowsOf` gives each table's rows as SQL tuples `(…)`.
 */
export async function testDuckDb(tables: readonly TableSchema[], rowsOf: (table: TableSchema) => string[]): Promise<DuckDBConnection> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  await connection.run(`SET TimeZone='UTC'`);
  for (const table of tables) {
    await connection.run(`CREATE TABLE "${table.name}" (${table.columns.map((c) => `"${c.name}" ${duckDbTypeName(c.type)}`).join(', ')})`);
    const rows = rowsOf(table);
    if (rows.length > 0) await connection.run(`INSERT INTO "${table.name}" VALUES ${rows.join(', ')}`);
  }
  return connection;
}
