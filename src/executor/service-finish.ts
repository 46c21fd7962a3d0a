import type { ServiceFinish, ValuePath } from '../planner/plan.ts';
import type { SqlType, TableSchema } from '../sql/types.ts';
import { civilDateTime } from './civil-time.ts';
import { BoundedResult, ResultTooLarge } from './engine/bounded-result.ts';
import { compileCondition, DECLINED, type Declined, type RowCondition } from './finish-conditions.ts';

export interface FinishInput {
  finish: ServiceFinish;
  /** The table as the engine would load it: its schema (record types inferred from the rows) and rows. */
  schema: TableSchema;
  rows: readonly Record<string, unknown>[];
  /** The last rows of the table that came from its scan's superset part (EventScan.take.irregular). */
  supersetRows: number;
  /** The residual query's output columns as the DuckDB printer names and types them. */
  columns: readonly { name: string; type: SqlType }[];
  /** The engine's bounds on the answer: its first rows, and their JSON bytes (SANDBOX_MAX_RESULT_BYTES). */
  maxRows: number;
  maxBytes: number;
}

/**
 * The rows the engine would answer for a ServiceFinish, computed here, or undefined whenever any row
 * holds something this does not convert exactly as the engine does (result-values.ts over the
 * tables table-loader.ts loads): an array with more than one element to unnest, a value of another
 * kind than its column's type, a string DuckDB might store otherwise, a WHERE condition it cannot
 * evaluate exactly (finish-conditions.ts), ORDER BY ties (the engine
 * orders tied rows its own way), several rows without ORDER BY, an event matched only as a superset
 * that might reach the answer unless the conditions its scan left are checked here (supersetWhere), or
 * an answer over the byte bound (the engine gives its error).
 */
export function finishInService(input: FinishInput): Record<string, unknown>[] | undefined {
  const { finish } = input;
  const reader = RowReader.of(finish, input.schema);
  if (!reader) return undefined;
  const outputs = finish.columns.map((column) => reader.compile(column.value, column.cast === 'datetime' ? 'datetime' : 'answer'));
  const keys = finish.order.map((item) => reader.compile(item.value));
  if (!allCompiled(outputs) || !allCompiled(keys) || outputs.some((output) => !PLAIN.has(output.type.kind) && !isWhole(output.type))) return undefined;
  // an ORDER BY key no row holds is printed as a NULL literal, which DuckDB refuses to order by
  if (keys.some((key) => !PLAIN.has(key.type.kind) || key.type.kind === 'unknown')) return undefined;
  if (!sameColumns(finish, outputs, input.columns)) return undefined;
  const where = (finish.where ?? []).map((condition) => compileCondition(condition, (path) => reader.compile(path)));
  if (!where.every((condition): condition is RowCondition => condition !== undefined)) return undefined;

  const compare = byKeys(finish.order.map((item, position) => comparator(keys[position]!.type, item)));
  /** The rows passing WHERE, sorted: each row of `table` checked by `conditions`. */
  const sortedRows = (parts: readonly { table: readonly Record<string, unknown>[]; conditions: readonly RowCondition[] }[]): SortedRow[] | undefined => {
    const rows: SortedRow[] = [];
    for (const { table, conditions } of parts) {
      for (const row of table) {
        const elements = reader.elements(row);
        if (elements === DECLINED) return undefined;
        if (elements === undefined) continue;
        const passes = passesWhere(conditions, row, elements);
        if (passes === DECLINED) return undefined;
        if (!passes) continue;
        const values = outputs.map((output) => output.value(row, elements));
        const keyValues = sortKeys(keys, row, elements);
        if (values.includes(DECLINED) || keyValues === DECLINED) return undefined;
        rows.push({ values, keys: keyValues });
      }
    }
    return rows.sort(compare);
  };

  // the rows of events matched only as a superset are the last ones: they must not reach the answer, or pass the conditions the scan left
  const exactRows = input.rows.length - input.supersetRows;
  const exact = { table: input.rows.slice(0, exactRows), conditions: where };
  let rows = sortedRows([exact]);
  if (!rows) return undefined;
  if (finish.order.length === 0 && rows.length > 1) return undefined;
  const endOf = (sorted: readonly SortedRow[]) => (finish.limit === undefined ? sorted.length : finish.offset + finish.limit);
  if (exactRows < input.rows.length && !supersetRowsAfter(input.rows.slice(exactRows), rows[endOf(rows) - 1], finish, keys, compare)) {
    if (!finish.supersetWhere) return undefined;
    const supersetWhere = finish.supersetWhere.map((condition) => compileCondition(condition, (path) => reader.compile(path)));
    if (!supersetWhere.every((condition): condition is RowCondition => condition !== undefined)) return undefined;
    rows = sortedRows([exact, { table: input.rows.slice(exactRows), conditions: supersetWhere }]);
    if (!rows || (finish.order.length === 0 && rows.length > 1)) return undefined;
  }
  const end = endOf(rows);
  const answer = rows.slice(finish.offset, end).map((row) => answerRow(finish, row));
  if (tiedInAnswer(rows, compare, answer, finish.offset, end)) return undefined;
  return withinBounds(answer, input.maxRows, input.maxBytes);
}

/** Whether a row makes every condition TRUE; DECLINED when one is unsure (each is evaluated, as the engine may evaluate each). */
export function passesWhere(where: readonly RowCondition[], row: Record<string, unknown>, elements: unknown[]): boolean | Declined {
  let passes = true;
  for (const condition of where) {
    const truth = condition(row, elements);
    if (truth === DECLINED) return DECLINED;
    if (truth !== true) passes = false;
  }
  return passes;
}

/** Keys in the order of the columns, as the engine builds its rows (Object.fromEntries). */
function answerRow(finish: ServiceFinish, row: SortedRow): Record<string, unknown> {
  return Object.fromEntries(finish.columns.map((column, position) => [column.name, row.values[position]]));
}

interface SortedRow {
  values: unknown[];
  keys: unknown[];
}

function allCompiled(compiled: (Compiled | undefined)[]): compiled is Compiled[] {
  return compiled.every((one) => one !== undefined);
}

function sortKeys(keys: Compiled[], row: Record<string, unknown>, elements: unknown[]): unknown[] | Declined {
  const values = keys.map((key) => key.value(row, elements));
  return values.includes(DECLINED) ? DECLINED : values;
}

/**
 * Whether the rows of events matched only as a superset cannot reach the answer, whichever of their
 * rows pass WHERE: the answer is a full LIMIT, every key is a column of the event (the same in all
 * its rows), and each such event sorts strictly after the answer's last row.
 */
function supersetRowsAfter(
  superset: readonly Record<string, unknown>[],
  last: SortedRow | undefined,
  finish: ServiceFinish,
  keys: Compiled[],
  compare: (a: { keys: unknown[] }, b: { keys: unknown[] }) => number,
): boolean {
  if (!last || finish.limit === undefined) return false;
  if (!finish.order.every((item) => item.value.from === 'column' && item.value.fields.length === 0)) return false;
  return superset.every((row) => {
    const keyValues = sortKeys(keys, row, []);
    return keyValues !== DECLINED && compare({ keys: keyValues }, last) > 0;
  });
}

/** Types whose values are converted here exactly as the engine converts them. */
const PLAIN = new Set<SqlType['kind']>(['string', 'int64', 'float64', 'bool', 'timestamp', 'datetime', 'unknown']);

export interface Compiled {
  type: SqlType;
  value(row: Record<string, unknown>, elements: unknown[]): unknown;
}

/** The table's rows read through the finish's unnests, with the types the engine loads them with. */
export class RowReader {
  private constructor(
    private readonly schema: TableSchema,
    private readonly unnests: { array: Compiled; join: 'inner' | 'left' }[],
    private readonly elementTypes: SqlType[],
  ) {}

  static of(finish: Pick<ServiceFinish, 'unnests'>, schema: TableSchema): RowReader | undefined {
    const reader = new RowReader(schema, [], []);
    for (const unnest of finish.unnests) {
      const array = reader.compile(unnest.array, 'raw');
      // an array no row holds gives no row when unnested by an inner join; a LEFT JOIN of it is left to the engine
      const absent = array?.type.kind === 'unknown' && unnest.join === 'inner';
      if (!array || (array.type.kind !== 'array' && !absent)) return undefined;
      reader.unnests.push({ array, join: unnest.join });
      reader.elementTypes.push(array.type.kind === 'array' ? array.type.element : array.type);
    }
    return reader;
  }

  /**
   * The unnests' elements for one row: undefined when an inner unnest of an empty or NULL array drops
   * it, DECLINED when an array holds several elements (several rows, in the engine's order).
   */
  private columnType(name: string): SqlType | undefined {
    return this.schema.columns.find((column) => column.name === name)?.type;
  }

  elements(row: Record<string, unknown>): unknown[] | undefined | Declined {
    const elements: unknown[] = [];
    for (const unnest of this.unnests) {
      const array = unnest.array.value(row, elements);
      if (array === DECLINED) return DECLINED;
      if (array !== null && !Array.isArray(array)) return DECLINED;
      if (array === null || array.length === 0) {
        if (unnest.join === 'inner') return undefined;
        elements.push(null);
        continue;
      }
      if (array.length > 1) return DECLINED;
      elements.push(array[0] ?? null);
    }
    return elements;
  }

  /**
   * Every combination of the unnests' elements for one row, as the engine's unnests make its rows (in no
   * particular order); DECLINED when an array is of a kind the engine would convert otherwise.
   */
  allElements(row: Record<string, unknown>): unknown[][] | Declined {
    let combinations: unknown[][] = [[]];
    for (const unnest of this.unnests) {
      const next: unknown[][] = [];
      for (const elements of combinations) {
        const array = unnest.array.value(row, elements);
        if (array === DECLINED || (array !== null && !Array.isArray(array))) return DECLINED;
        if (array === null || array.length === 0) {
          if (unnest.join === 'left') next.push([...elements, null]);
          continue;
        }
        for (const element of array) next.push([...elements, element ?? null]);
      }
      combinations = next;
    }
    return combinations;
  }

  /**
   * A path as a reader of its value and its type, resolving fields as the printer does (accessField:
   * the first field of that name in any case; a field no row has is NULL). `raw` keeps arrays as they
   * are (for unnesting); `answer` converts a value to the answer's JSON, `datetime` a TIMESTAMP to the
   * DATETIME text it is cast to.
   */
  compile(path: ValuePath, form: 'raw' | 'answer' | 'datetime' = 'answer'): Compiled | undefined {
    let type = path.from === 'column' ? this.columnType(path.column) : this.elementTypes[path.unnest];
    if (type === undefined) return undefined;
    const steps: string[] = [];
    let missing = false;
    for (const name of path.fields) {
      if (type.kind === 'unknown') break;
      if (type.kind !== 'struct') return undefined;
      const field: { name: string; type: SqlType } | undefined = type.fields.find((candidate) => sameName(candidate.name, name));
      if (!field) {
        missing = true;
        type = { kind: 'unknown' };
        break;
      }
      steps.push(field.name);
      type = field.type;
    }
    if (form === 'datetime' && (type.kind !== 'timestamp' || steps.length > 0 || missing)) return undefined;
    const resolved = type;
    // a top-level column is appended as it is; anything inside a record or array is loaded from its JSON text
    const loadedFromJson = path.from === 'unnest' || steps.length > 0;
    const base = (row: Record<string, unknown>, elements: unknown[]) => (path.from === 'column' ? ownValue(row, path.column) : elements[path.unnest]);
    return {
      type: form === 'datetime' ? { kind: 'datetime' } : resolved,
      value: (row, elements) => {
        if (missing) return null;
        let value = base(row, elements);
        for (const step of steps) {
          if (value === null || value === undefined) return null;
          if (typeof value !== 'object' || Array.isArray(value)) return DECLINED;
          value = ownValue(value as Record<string, unknown>, step);
        }
        if (form === 'raw') return value ?? null;
        const answer = answerValue(value, resolved, loadedFromJson);
        if (form !== 'datetime' || answer === null || answer === DECLINED) return answer;
        return typeof answer === 'number' ? (civilDateTime(BigInt(answer)) ?? DECLINED) : DECLINED;
      },
    };
  }
}

/** A lone surrogate (with the u flag a pair is one code point, not matched) or a NUL character. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is the character looked for
const UNSTORED_CHARACTER = /[\p{Cs}\u0000]/u;

export function sameName(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

function ownValue(record: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(record, key) ? record[key] : null;
}

/**
 * A value as the engine answers it, or DECLINED when it is of another kind than its type (the engine
 * would convert it, or fail). Integers and timestamps (microseconds) are numbers, and exact.
 */
function answerValue(value: unknown, type: SqlType, loadedFromJson: boolean): unknown {
  if (value === null || value === undefined) return null;
  switch (type.kind) {
    case 'string':
      // DuckDB stores valid UTF-8; lone surrogates and NUL characters are left to it
      return typeof value === 'string' && !UNSTORED_CHARACTER.test(value) ? value : DECLINED;
    case 'int64':
    case 'timestamp':
      if (loadedFromJson && type.kind !== 'int64') return DECLINED;
      // past 2^53 the engine answers digits, and past 2^63 it fails: left to it
      return Number.isSafeInteger(value) ? value : DECLINED;
    case 'float64':
      return typeof value === 'number' && Number.isFinite(value) ? value : DECLINED;
    case 'bool':
      return typeof value === 'boolean' ? value : DECLINED;
    case 'struct':
    case 'array':
      return wholeValue(value, type, false);
    default:
      return DECLINED;
  }
}

function isWhole(type: SqlType): boolean {
  return type.kind === 'struct' || type.kind === 'array';
}

/**
 * A record or an array as the engine answers it after loading its JSON text by the inferred type
 * (json_transform, then result-values.ts): a record has every field of its type, in the type's order
 * (NULL where the value lacks it), and is a one-element array of itself except as an array's element.
 * Its scalars convert as a record field's do; a field of type json, or a key the type does not have,
 * is left to the engine.
 */
function wholeValue(value: unknown, type: SqlType, arrayElement: boolean): unknown {
  if (value === null || value === undefined) return null;
  if (type.kind === 'array') {
    if (!Array.isArray(value)) return DECLINED;
    const elements = value.map((element: unknown) => wholeValue(element, type.element, true));
    return elements.includes(DECLINED) ? DECLINED : elements;
  }
  if (type.kind !== 'struct') return type.kind === 'unknown' ? DECLINED : answerValue(value, type, true);
  if (typeof value !== 'object' || Array.isArray(value)) return DECLINED;
  const record = value as Record<string, unknown>;
  if (Object.keys(record).some((key) => key === '__proto__' || UNSTORED_CHARACTER.test(key) || !type.fields.some((field) => field.name === key)))
    return DECLINED;
  const fields = type.fields.map((field) => [field.name, wholeValue(ownValue(record, field.name), field.type, false)] as const);
  if (fields.some(([, field]) => field === DECLINED)) return DECLINED;
  const converted = Object.fromEntries(fields);
  return arrayElement ? converted : [converted];
}

function sameColumns(finish: ServiceFinish, outputs: Compiled[], printed: FinishInput['columns']): boolean {
  const same = (column: FinishInput['columns'][number], position: number) =>
    column.name === finish.columns[position]!.name && column.type.kind === outputs[position]!.type.kind;
  return printed.length === outputs.length && printed.every(same);
}

/** Rows ordered by their sort keys: each key's comparator in turn, the first that tells them apart decides. */
export function byKeys(comparators: ((a: unknown, b: unknown) => number)[]): (a: { keys: unknown[] }, b: { keys: unknown[] }) => number {
  return (a, b) => {
    for (const [position, byKey] of comparators.entries()) {
      const order = byKey(a.keys[position], b.keys[position]);
      if (order !== 0) return order;
    }
    return 0;
  };
}

/**
 * BigQuery's order as the printer asks DuckDB for it (NULLS FIRST ascending, LAST descending unless
 * written): numbers by value, strings by their UTF-8 bytes (DuckDB's binary collation), FALSE before
 * TRUE.
 */
export function comparator(type: SqlType, item: Pick<ServiceFinish['order'][number], 'descending' | 'nulls'>): (a: unknown, b: unknown) => number {
  const direction = item.descending ? -1 : 1;
  const nullsFirst = item.nulls === 'first';
  const values = valueOrder(type);
  return (a, b) => {
    if (a === null || b === null) return a === b ? 0 : (a === null) === nullsFirst ? -1 : 1;
    return direction * values(a, b);
  };
}

function valueOrder(type: SqlType): (a: unknown, b: unknown) => number {
  switch (type.kind) {
    case 'string':
      return (a, b) => Buffer.compare(Buffer.from(a as string), Buffer.from(b as string));
    case 'bool':
      return (a, b) => Number(a) - Number(b);
    default:
      // numbers (int64, float64, timestamp microseconds); an `unknown` key is NULL in every row
      return (a, b) => ((a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0);
  }
}

/**
 * Whether two rows the sort cannot tell apart, but that may answer differently, meet within the
 * answer or at its edges (the engine may order them either way).
 */
export function tiedInAnswer(
  rows: SortedRow[],
  compare: (a: SortedRow, b: SortedRow) => number,
  answer: Record<string, unknown>[],
  offset: number,
  end: number,
): boolean {
  const inside = (at: number) => at >= offset && at < end;
  const alike = (at: number) => JSON.stringify(answer[at - offset]) === JSON.stringify(answer[at + 1 - offset]);
  for (let position = Math.max(0, offset - 1); position < Math.min(end, rows.length - 1); position += 1) {
    if (compare(rows[position]!, rows[position + 1]!) !== 0) continue;
    // within the answer, two tied rows that answer alike may come in either order
    if (!inside(position) || !inside(position + 1) || !alike(position)) return true;
  }
  return false;
}

/** The engine's row cap and byte bound applied as it applies them; undefined past the bytes (the engine answers with its error). */
export function withinBounds(answer: Record<string, unknown>[], maxRows: number, maxBytes: number): Record<string, unknown>[] | undefined {
  const bounded = new BoundedResult({ maxRows, maxBytes, batchBytes: Number.POSITIVE_INFINITY });
  try {
    for (const row of answer) {
      if (bounded.full) break;
      bounded.add(row);
    }
  } catch (error) {
    if (error instanceof ResultTooLarge) return undefined;
    throw error;
  }
  return answer.slice(0, bounded.rowCount);
}
