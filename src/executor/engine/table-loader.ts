import { DuckDBTimestampValue, type DuckDBAppender, type DuckDBConnection } from '@duckdb/node-api';
import type { SqlType, TableSchema } from '../../sql/types.ts';
import { duckDbTypeName, quoteIdentifier } from './duckdb-type.ts';
import { columnsOf, type ColumnValues } from './engine-protocol.ts';

/**
 * Fills one table of the residual query. Rows go through the appender into a staging table whose
 * columns the appender can write directly (scalars as themselves, the rest as text), then one
 * INSERT ... SELECT converts them: `json_transform` for records and arrays, a cast for the civil
 * types. Measured on 100,000 edge rows: the appender with JSON text and one json_transform takes
 * about 1.8 s where appending DuckDB struct and list values one by one takes 79 s; json_transform
 * is used rather than a cast from JSON because it reads a missing key as NULL where the cast fails.
 * A table of scalars only is appended to directly: a staging table and its copy would cost more than its rows.
 */
export class TableLoad {
  private constructor(
    private readonly connection: DuckDBConnection,
    private readonly schema: TableSchema,
    /** The staging table, or undefined when the rows were appended to the table itself. */
    private readonly staging: string | undefined,
    private readonly appender: DuckDBAppender,
    private readonly columns: ColumnLoad[],
  ) {}

  static async begin(connection: DuckDBConnection, schema: TableSchema, index: number): Promise<TableLoad> {
    const columns = schema.columns.map((column) => columnLoad(column.type));
    const create = `CREATE TABLE ${quoteIdentifier(schema.name)} (${tableDefinitions(schema).join(', ')})`;
    if (columns.every((column) => column.conversion === asIs)) {
      // scalars only (a pushed-down aggregation's groups): no conversion, so no staging table and no copy
      await connection.run(create);
      return new TableLoad(connection, schema, undefined, await connection.createAppender(schema.name), columns);
    }
    const staging = `staging_${index}`;
    const definitions = schema.columns.map((column, position) => `${quoteIdentifier(column.name)} ${columns[position]!.stagingType}`);
    // one call for the statements: each call is a trip through DuckDB's worker thread. A staging table
    // is dropped with the request's reset, after its answer; one left over by a failed request is replaced.
    const schemaFirst = withStagingSchema.has(connection) ? '' : `CREATE SCHEMA IF NOT EXISTS ${STAGING_SCHEMA}; `;
    await connection.run(`${schemaFirst}CREATE OR REPLACE TABLE ${STAGING_SCHEMA}.${staging} (${definitions.join(', ')}); ${create}`);
    withStagingSchema.add(connection);
    const appender = await connection.createAppender(staging, STAGING_SCHEMA);
    return new TableLoad(connection, schema, staging, appender, columns);
  }

  /** Rows as objects keyed by column name; see appendColumns. */
  append(rows: readonly Record<string, unknown>[], firstRowNumber: number): void {
    this.appendColumns(columnsOf(rows, this.schema.columns, 0, rows.length), rows.length, firstRowNumber);
  }

  /** The tables this load created, as quoted SQL names, for the request's reset to drop. */
  get createdTables(): string[] {
    const table = quoteIdentifier(this.schema.name);
    return this.staging === undefined ? [table] : [table, `${STAGING_SCHEMA}.${this.staging}`];
  }

  /** Synchronous, so a chunk is appended whole between two messages. `columns` in the schema's order. */
  appendColumns(columns: readonly ColumnValues[], rowCount: number, firstRowNumber: number): void {
    const loads = this.columns;
    for (let row = 0; row < rowCount; row += 1) {
      for (let position = 0; position < loads.length; position += 1) {
        const value = columns[position]![row];
        if (value === null || value === undefined) {
          this.appender.appendNull();
          continue;
        }
        try {
          loads[position]!.append(this.appender, value);
        } catch (error) {
          const column = this.schema.columns[position]!.name;
          throw new Error(`table ${this.schema.name}, row ${firstRowNumber + row}, column ${column}: ${(error as Error).message}`, { cause: error });
        }
      }
      this.appender.endRow();
    }
  }

  async finish(): Promise<void> {
    this.appender.flushSync();
    this.appender.closeSync();
    if (this.staging === undefined) return;
    const conversions = this.schema.columns.map((column, position) => this.columns[position]!.conversion(quoteIdentifier(column.name)));
    await this.connection.run(`INSERT INTO ${quoteIdentifier(this.schema.name)} SELECT ${conversions.join(', ')} FROM ${STAGING_SCHEMA}.${this.staging}`);
  }
}

function tableDefinitions(schema: TableSchema): string[] {
  return schema.columns.map((column) => `${quoteIdentifier(column.name)} ${duckDbTypeName(column.type)}`);
}

/** Apart from the main schema, so no CTE name can collide with a staging table. */
const STAGING_SCHEMA = 'engine_staging';
/** Connections whose database has the staging schema: nothing drops it (a query is one SELECT), so it is created once. */
const withStagingSchema = new WeakSet<DuckDBConnection>();

interface ColumnLoad {
  stagingType: string;
  append(appender: DuckDBAppender, value: unknown): void;
  /** The SELECT expression turning the staged column into the table's type. */
  conversion(staged: string): string;
}

const asIs = (staged: string): string => staged;

function columnLoad(type: SqlType): ColumnLoad {
  switch (type.kind) {
    case 'string':
      return { stagingType: 'VARCHAR', append: (appender, value) => appender.appendVarchar(text(value)), conversion: asIs };
    case 'int64':
      return { stagingType: 'BIGINT', append: (appender, value) => appender.appendBigInt(integer(value)), conversion: asIs };
    case 'float64':
      return { stagingType: 'DOUBLE', append: (appender, value) => appender.appendDouble(float(value)), conversion: asIs };
    case 'bool':
      return { stagingType: 'BOOLEAN', append: (appender, value) => appender.appendBoolean(boolean(value)), conversion: asIs };
    case 'timestamp':
      // Rows carry timestamps as integer microseconds since the epoch (docs/design/DESIGN.md 1). Appended as
      // TIMESTAMP, which DuckDB stores in a TIMESTAMPTZ column as the same microseconds whatever the time zone:
      // its appender has no direct TIMESTAMPTZ path and builds a value object per row (3.4x the time on 5,000 rows).
      return {
        stagingType: 'TIMESTAMPTZ',
        append: (appender, value) => appender.appendTimestamp(new DuckDBTimestampValue(integer(value))),
        conversion: asIs,
      };
    case 'bytes':
      return { stagingType: 'BLOB', append: (appender, value) => appender.appendBlob(bytes(value)), conversion: asIs };
    case 'datetime':
    case 'date':
    case 'time':
    case 'numeric':
    case 'json': {
      const target = duckDbTypeName(type);
      const append =
        type.kind === 'json'
          ? (appender: DuckDBAppender, value: unknown) => appender.appendVarchar(JSON.stringify(value))
          : (appender: DuckDBAppender, value: unknown) => appender.appendVarchar(text(value));
      return { stagingType: 'VARCHAR', append, conversion: (staged) => `CAST(${staged} AS ${target})` };
    }
    case 'struct':
    case 'array': {
      const structure = JSON.stringify(jsonStructure(type)).replaceAll("'", "''");
      return {
        stagingType: 'VARCHAR',
        append: (appender, value) => appender.appendVarchar(JSON.stringify(value)),
        conversion: (staged) => `json_transform(${staged}, '${structure}')`,
      };
    }
    case 'unknown':
      return {
        stagingType: '"NULL"',
        append: () => {
          throw new Error('a column of unknown type holds only NULLs');
        },
        conversion: asIs,
      };
  }
}

/** The structure argument of json_transform: records as objects, arrays as one-element arrays, the rest as type names. */
function jsonStructure(type: SqlType): unknown {
  switch (type.kind) {
    case 'struct':
      return Object.fromEntries(type.fields.map((field) => [field.name, jsonStructure(field.type)]));
    case 'array':
      return [jsonStructure(type.element)];
    case 'unknown':
      return 'NULL';
    default:
      return duckDbTypeName(type);
  }
}

function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

function integer(value: unknown): bigint {
  if ((typeof value === 'number' && Number.isInteger(value)) || (typeof value === 'string' && /^-?\d+$/.test(value))) return BigInt(value);
  throw new Error(`expected an integer, got ${JSON.stringify(value)}`);
}

function float(value: unknown): number {
  if (typeof value === 'number') return value;
  throw new Error(`expected a number, got ${JSON.stringify(value)}`);
}

function boolean(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  throw new Error(`expected a boolean, got ${JSON.stringify(value)}`);
}

function bytes(value: unknown): Uint8Array {
  if (typeof value === 'string') return Buffer.from(value, 'base64');
  throw new Error(`expected base64 text, got ${JSON.stringify(value)}`);
}
