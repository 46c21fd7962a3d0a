import type { ParameterValue, SqlType } from '../../shared/sql-type.ts';

export type { ParameterValue, SqlType };

export interface TableColumn {
  name: string;
  type: SqlType;
}

export interface TableSchema {
  /** The name the residual query reads the table by. */
  name: string;
  columns: TableColumn[];
}
