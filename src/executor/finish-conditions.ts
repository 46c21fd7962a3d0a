import type { FinishCondition, FinishLiteral, FinishOperand, ValuePath } from '../planner/plan.ts';
import type { SqlType } from '../sql/types.ts';
import { jsonValueReader } from './json-value.ts';

/** The service cannot promise the engine's answer for these rows: the engine runs the query. */
export const DECLINED = Symbol('declined');
export type Declined = typeof DECLINED;

/** A value of a row as the engine answers it (DECLINED where it would convert it otherwise), with its column type. */
export interface ValueReader {
  type: SqlType;
  value(row: Record<string, unknown>, elements: unknown[]): unknown;
}

/** A condition over one row (the table's row and its unnests' elements): TRUE, FALSE, NULL, or DECLINED. */
export type RowCondition = (row: Record<string, unknown>, elements: unknown[]) => boolean | null | Declined;

type Operand = (row: Record<string, unknown>, elements: unknown[]) => unknown;

/** An INT64 the engine's CAST reads from text exactly as Number does: decimal digits (with a sign, leading zeros), within 2^53. */
const PLAIN_INTEGER = /^[+-]?\d{1,15}$/;

/**
 * A finish condition as a test of rows, evaluated as the engine's printed SQL evaluates it (three-valued
 * logic; text compared by its UTF-8 bytes; numbers by value), or undefined when its values' types
 * (known from the rows) are not ones it compares exactly. Every part is evaluated on every row, so a
 * value the engine might fail on (a CAST of text BigQuery refuses) declines the rows even where the
 * engine would not have needed it.
 */
export function compileCondition(condition: FinishCondition, read: (path: ValuePath) => ValueReader | undefined): RowCondition | undefined {
  switch (condition.kind) {
    case 'and':
    case 'or': {
      const parts = condition.operands.map((operand) => compileCondition(operand, read));
      if (!parts.every((part) => part !== undefined)) return undefined;
      const decisive = condition.kind === 'or';
      return (row, elements) => {
        let result: boolean | null = !decisive;
        for (const part of parts) {
          const truth = part(row, elements);
          if (truth === DECLINED) return DECLINED;
          if (truth === decisive) result = decisive;
          else if (truth === null && result !== decisive) result = null;
        }
        return result;
      };
    }
    case 'not': {
      const inner = compileCondition(condition.operand, read);
      return (
        inner &&
        ((row, elements) => {
          const truth = inner(row, elements);
          return truth === null || truth === DECLINED ? truth : !truth;
        })
      );
    }
    case 'is_null': {
      const operand = operandOf(condition.operand, read, undefined);
      return (
        operand &&
        ((row, elements) => {
          const value = operand(row, elements);
          return value === DECLINED ? DECLINED : value === null;
        })
      );
    }
    case 'compare':
      return comparison(condition, read);
    case 'contains':
    case 'like': {
      const operand = operandOf(condition.operand, read, 'string');
      if (!operand) return undefined;
      const matches = condition.kind === 'contains' ? (text: string) => text.includes(condition.text) : likeMatcher(condition.pieces);
      return (row, elements) => {
        const value = operand(row, elements);
        return value === DECLINED || value === null ? value : matches(value as string);
      };
    }
  }
}

function comparison(condition: Extract<FinishCondition, { kind: 'compare' }>, read: (path: ValuePath) => ValueReader | undefined): RowCondition | undefined {
  const kind = literalKind(condition.right);
  const operand = operandOf(condition.left, read, kind);
  if (!operand) return undefined;
  const literal = condition.right;
  const order = kind === 'string' ? textOrder : kind === 'bool' ? (a: unknown, b: unknown) => Number(a) - Number(b) : numberOrder;
  const test = TESTS[condition.operator];
  return (row, elements) => {
    const value = operand(row, elements);
    if (value === DECLINED || value === null) return value;
    return test(order(value, literal));
  };
}

const TESTS: Record<Extract<FinishCondition, { kind: 'compare' }>['operator'], (order: number) => boolean> = {
  '=': (order) => order === 0,
  '!=': (order) => order !== 0,
  '<': (order) => order < 0,
  '<=': (order) => order <= 0,
  '>': (order) => order > 0,
  '>=': (order) => order >= 0,
};

type LiteralKind = 'string' | 'number' | 'bool';

function literalKind(literal: FinishLiteral): LiteralKind {
  return typeof literal === 'string' ? 'string' : typeof literal === 'number' ? 'number' : 'bool';
}

/** Column types whose values compare with a literal of each kind as the engine compares them. */
const COMPARABLE: Record<LiteralKind, ReadonlySet<SqlType['kind']>> = {
  string: new Set(['string']),
  number: new Set(['int64', 'float64']),
  bool: new Set(['bool']),
};

/** Column types IS NULL is evaluated on here. */
const NULL_TESTED: ReadonlySet<SqlType['kind']> = new Set(['string', 'int64', 'float64', 'bool', 'timestamp', 'unknown']);

/**
 * An operand's value per row (null for NULL, DECLINED where unsure), or undefined when its type is
 * not one a literal of `kind` compares with (nor, for IS NULL, a plain one). A column no row holds is NULL.
 */
function operandOf(operand: FinishOperand, read: (path: ValuePath) => ValueReader | undefined, kind: LiteralKind | undefined): Operand | undefined {
  const reader = read(operand.value);
  if (!reader) return undefined;
  const type = reader.type.kind;
  if (operand.json) return kind === undefined || kind === 'string' ? jsonOperand(reader, operand.json) : undefined;
  if (operand.cast === 'int64') {
    if (kind !== undefined && kind !== 'number') return undefined;
    if (type === 'int64' || type === 'unknown') return reader.value;
    return type === 'string' ? (row, elements) => integerOf(reader.value(row, elements)) : undefined;
  }
  // a whole record or array is the engine's to test for NULL (its JSON may load otherwise)
  if (kind === undefined ? !NULL_TESTED.has(type) : type !== 'unknown' && !COMPARABLE[kind].has(type)) return undefined;
  return reader.value;
}

/** JSON_VALUE of a STRING (json-value.ts); a value no row holds is NULL, and so is its JSON_VALUE. */
export function jsonOperand(reader: ValueReader, steps: readonly string[]): Operand | undefined {
  if (reader.type.kind === 'unknown') return reader.value;
  if (reader.type.kind !== 'string') return undefined;
  const json = jsonValueReader(steps);
  return (row, elements) => {
    const text = reader.value(row, elements);
    if (text === null || text === DECLINED) return text;
    const value = json(text as string);
    return value === undefined ? DECLINED : value;
  };
}

/** CAST(text AS INT64) where its value is certain; other text (which BigQuery refuses, or hexadecimal) is the engine's to judge. */
function integerOf(value: unknown): unknown {
  if (value === null || value === DECLINED) return value;
  return typeof value === 'string' && PLAIN_INTEGER.test(value) ? Number(value) : DECLINED;
}

/** DuckDB's binary collation: text by its UTF-8 bytes. */
function textOrder(a: unknown, b: unknown): number {
  return Buffer.compare(Buffer.from(a as string), Buffer.from(b as string));
}

function numberOrder(a: unknown, b: unknown): number {
  return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
}

/** LIKE with % as its only wildcard: the text starts with the first piece, ends with the last, and holds the others between, in order. */
function likeMatcher(pieces: readonly string[]): (text: string) => boolean {
  if (pieces.length === 1) return (text) => text === pieces[0];
  const first = pieces[0]!;
  const last = pieces[pieces.length - 1]!;
  const middle = pieces.slice(1, -1);
  return (text) => {
    if (!text.startsWith(first)) return false;
    let from = first.length;
    for (const piece of middle) {
      const at = text.indexOf(piece, from);
      if (at < 0) return false;
      from = at + piece.length;
    }
    return text.length - last.length >= from && text.endsWith(last);
  };
}
