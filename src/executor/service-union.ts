import type { ServiceUnionFinish, UnionBranch, UnionValue } from '../planner/plan.ts';
import type { SqlType, TableSchema } from '../sql/types.ts';
import { compileCondition, DECLINED, type Declined, type RowCondition } from './finish-conditions.ts';
import { byKeys, comparator, passesWhere, RowReader, tiedInAnswer, withinBounds } from './service-finish.ts';

export interface UnionInput {
  finish: ServiceUnionFinish;
  /** The scans' tables as the engine would load them: schema (record types inferred from the rows) and rows. */
  tables: readonly { schema: TableSchema; rows: readonly Record<string, unknown>[] }[];
  /** The residual query's output columns as the DuckDB printer names and types them. */
  columns: readonly { name: string; type: SqlType }[];
  /** The engine's bounds on the answer: its first rows, and their JSON bytes (SANDBOX_MAX_RESULT_BYTES). */
  maxRows: number;
  maxBytes: number;
}

/** Types of the union's columns answered here as the engine answers them. */
const ANSWERED = new Set<SqlType['kind']>(['string', 'int64', 'float64', 'bool', 'timestamp', 'unknown']);
/** Types of ORDER BY keys compared here as the engine compares them. */
const ORDERED = new Set<SqlType['kind']>(['string', 'int64', 'bool', 'timestamp']);
const STRING: SqlType = { kind: 'string' };
const UNKNOWN: SqlType = { kind: 'unknown' };

type Value = (row: Record<string, unknown>, elements: unknown[]) => unknown;

/**
 * The rows the engine would answer for a ServiceUnionFinish, computed here, or undefined whenever any
 * row holds something this does not compute exactly as the engine does: each branch's rows are every
 * combination of its unnests' elements (as the engine's unnests make them), those making its WHERE
 * TRUE, its values computed (CASE takes the first WHEN that is TRUE; CAST of an INT64 to STRING is its
 * decimal digits); then all branches' rows are sorted together. It declines a value of another kind
 * than its column's type, a union column whose branches differ in type, ORDER BY ties within the
 * answer or at its edges (the engine orders tied rows its own way), several rows without ORDER BY,
 * or an answer over the byte bound.
 */
export function unionInService(input: UnionInput): Record<string, unknown>[] | undefined {
  const { finish } = input;
  const branches = finish.branches.map((branch) => compileBranch(branch, input.tables));
  if (!branches.every((branch): branch is CompiledBranch => branch !== undefined)) return undefined;
  const types = unionTypes(branches);
  if (!types || !sameColumns(finish, types, input.columns)) return undefined;
  if (finish.order.some((item) => !ORDERED.has(types[item.position]!.kind))) return undefined;

  const rows: { values: unknown[]; keys: unknown[] }[] = [];
  for (const branch of branches) {
    for (const row of branch.rows) {
      // one element per unnest (the usual event) without building every combination
      const single = branch.reader.elements(row);
      const combinations = single === DECLINED ? branch.reader.allElements(row) : single === undefined ? [] : [single];
      if (combinations === DECLINED) return undefined;
      for (const elements of combinations) {
        const passes = passesWhere(branch.where, row, elements);
        if (passes === DECLINED) return undefined;
        if (!passes) continue;
        const values = branch.values.map((value) => value(row, elements));
        if (values.includes(DECLINED)) return undefined;
        rows.push({ values, keys: finish.order.map((item) => values[item.position]) });
      }
    }
  }
  if (finish.order.length === 0 && rows.length > 1) return undefined;
  const compare = byKeys(finish.order.map((item) => comparator(types[item.position]!, item)));
  rows.sort(compare);
  const end = finish.limit === undefined ? rows.length : finish.offset + finish.limit;
  const answer = rows.slice(finish.offset, end).map((row) => Object.fromEntries(finish.columns.map((column) => [column.name, row.values[column.position]])));
  if (tiedInAnswer(rows, compare, answer, finish.offset, end)) return undefined;
  return withinBounds(answer, input.maxRows, input.maxBytes);
}

interface CompiledBranch {
  rows: readonly Record<string, unknown>[];
  reader: RowReader;
  where: RowCondition[];
  values: Value[];
  types: SqlType[];
}

function compileBranch(branch: UnionBranch, tables: UnionInput['tables']): CompiledBranch | undefined {
  const table = tables.find((candidate) => candidate.schema.name === branch.table);
  const reader = table && RowReader.of(branch, table.schema);
  if (!reader) return undefined;
  const where = (branch.where ?? []).map((condition) => compileCondition(condition, (path) => reader.compile(path)));
  if (!where.every((condition): condition is RowCondition => condition !== undefined)) return undefined;
  const values: Value[] = [];
  const types: SqlType[] = [];
  for (const value of branch.values) {
    const compiled = compileValue(value, reader);
    if (!compiled) return undefined;
    values.push(compiled.value);
    types.push(compiled.type);
  }
  return { rows: table.rows, reader, where, values, types };
}

function compileValue(value: UnionValue, reader: RowReader): { type: SqlType; value: Value } | undefined {
  switch (value.kind) {
    case 'path': {
      const path = reader.compile(value.value);
      return path && ANSWERED.has(path.type.kind) ? { type: path.type, value: (row, elements) => path.value(row, elements) } : undefined;
    }
    case 'literal':
      return { type: value.text === null ? UNKNOWN : STRING, value: () => value.text };
    case 'string_cast': {
      const path = reader.compile(value.value);
      if (!path || !['string', 'int64', 'unknown'].includes(path.type.kind)) return undefined;
      return { type: STRING, value: (row, elements) => asString(path.value(row, elements)) };
    }
    case 'case': {
      const whens = value.whens.map(({ condition, text }) => ({ test: compileCondition(condition, (path) => reader.compile(path)), text }));
      if (!whens.every((when): when is { test: RowCondition; text: string | null } => when.test !== undefined)) return undefined;
      const typed = [...whens.map((when) => when.text), value.otherwise].some((text) => text !== null);
      return { type: typed ? STRING : UNKNOWN, value: (row, elements) => caseValue(whens, value.otherwise, row, elements) };
    }
  }
}

/** CAST(x AS STRING) of a value as the engine answers it: text as it is, an integer (within 2^53) as its decimal digits. */
function asString(value: unknown): unknown {
  if (value === null || value === DECLINED || typeof value === 'string') return value;
  return Number.isSafeInteger(value) ? String(value) : DECLINED;
}

/** The first WHEN that is TRUE gives its text, NULL and FALSE pass on; every test before it is evaluated, as the engine may. */
function caseValue(
  whens: readonly { test: RowCondition; text: string | null }[],
  otherwise: string | null,
  row: Record<string, unknown>,
  elements: unknown[],
): string | null | Declined {
  for (const when of whens) {
    const truth = when.test(row, elements);
    if (truth === DECLINED) return DECLINED;
    if (truth === true) return when.text;
  }
  return otherwise;
}

/** Each union column's type: the one type its branches' non-NULL values have, or undefined when two branches differ (the engine converts). */
function unionTypes(branches: readonly CompiledBranch[]): SqlType[] | undefined {
  const types: SqlType[] = [];
  for (const [position, type] of branches[0]!.types.entries()) {
    let common = type;
    for (const branch of branches.slice(1)) {
      const other = branch.types[position]!;
      if (other.kind === 'unknown') continue;
      if (common.kind !== 'unknown' && common.kind !== other.kind) return undefined;
      common = other;
    }
    types.push(common);
  }
  return types;
}

function sameColumns(finish: ServiceUnionFinish, types: readonly SqlType[], printed: UnionInput['columns']): boolean {
  if (printed.length !== finish.columns.length) return false;
  return finish.columns.every((column, i) => printed[i]!.name === column.name && printed[i]!.type.kind === types[column.position]!.kind);
}
