import type { GroupAggregate, GroupKey, GroupOutput, ServiceFinish, ServiceGroupFinish } from '../planner/plan.ts';
import type { SqlType } from '../sql/types.ts';
import { compileCondition, DECLINED, jsonOperand, type Declined, type RowCondition } from './finish-conditions.ts';
import { byKeys, comparator, finishInService, passesWhere, RowReader, tiedInAnswer, withinBounds, type Compiled, type FinishInput } from './service-finish.ts';

/** A FinishInput whose finish groups. */
export interface GroupsInput extends Omit<FinishInput, 'finish'> {
  finish: ServiceGroupFinish;
}

/** The service's answer for a finish of either kind, or undefined when the engine must answer. */
export function serviceAnswer(input: Omit<FinishInput, 'finish'> & { finish: ServiceFinish | ServiceGroupFinish }): Record<string, unknown>[] | undefined {
  const { finish } = input;
  return 'groups' in finish ? groupsInService({ ...input, finish }) : finishInService({ ...input, finish });
}

/** Types whose values the engine answers as this does (numbers exact, TIMESTAMPs in microseconds). */
const ANSWERED = new Set<SqlType['kind']>(['string', 'int64', 'bool', 'timestamp']);
const INT64: SqlType = { kind: 'int64' };
const MICROS_PER = { minute: 60_000_000, hour: 3_600_000_000, day: 86_400_000_000 } as const;

/**
 * The rows the engine would answer for a ServiceGroupFinish, computed here, or undefined whenever this
 * is not sure of them (HAVING is evaluated as a WHERE is, over each group's columns): a value of another kind than its column's type, JSON_VALUE of text this does not
 * read as the engine does (json-value.ts), a WHERE condition it cannot evaluate exactly, a SUM past
 * 2^53 (the engine answers digits, or fails past 2^63), several groups without ORDER BY, groups the
 * ORDER BY does not tell apart within the answer or at its edges, events matched only as a superset,
 * or an answer over the byte bound.
 */
export function groupsInService(input: GroupsInput): Record<string, unknown>[] | undefined {
  const { finish } = input;
  if (input.supersetRows > 0) return undefined;
  const reader = RowReader.of(finish, input.schema);
  if (!reader) return undefined;
  const where = (finish.where ?? []).map((condition) => compileCondition(condition, (path) => reader.compile(path)));
  const keys = finish.groups.keys.map((key) => groupValue(key, reader));
  const aggregates = finish.groups.aggregates.map((aggregate) => aggregator(aggregate, reader));
  if (!where.every((condition): condition is RowCondition => condition !== undefined)) return undefined;
  if (!keys.every((key): key is Compiled => key !== undefined)) return undefined;
  if (!aggregates.every((aggregate): aggregate is Aggregator => aggregate !== undefined)) return undefined;
  const typeOf = (output: GroupOutput) => (output.from === 'key' ? keys[output.index]!.type : aggregates[output.index]!.type);
  if (!sameColumns(finish, typeOf, input.columns) || finish.order.some((item) => !ANSWERED.has(typeOf(item.value).kind))) return undefined;

  const groups = collect(input.rows, reader, where, keys, aggregates);
  if (groups === DECLINED) return undefined;
  if (keys.length === 0 && groups.size === 0) groups.set(undefined, { keys: [], states: aggregates.map((aggregate) => aggregate.start()) });
  if (finish.order.length === 0 && groups.size > 1) return undefined;

  const having = finish.having && havingCondition(finish, typeOf);
  if (finish.having && !having) return undefined;
  const rows: { values: unknown[]; keys: unknown[] }[] = [];
  for (const group of groups.values()) {
    const results = group.states.map((state) => state.result());
    if (results.includes(DECLINED)) return undefined;
    const valueOf = (output: GroupOutput) => (output.from === 'key' ? group.keys[output.index] : results[output.index]);
    const values = finish.columns.map((column) => valueOf(column.value));
    const kept = having ? having(answerRow(finish, values), []) : true;
    if (kept === DECLINED) return undefined;
    if (kept === true) rows.push({ values, keys: finish.order.map((item) => valueOf(item.value)) });
  }
  const compare = byKeys(finish.order.map((item) => comparator(typeOf(item.value), item)));
  rows.sort(compare);
  const end = finish.limit === undefined ? rows.length : finish.offset + finish.limit;
  const answer = rows.slice(finish.offset, end).map((row) => answerRow(finish, row.values));
  if (tiedInAnswer(rows, compare, answer, finish.offset, end)) return undefined;
  return withinBounds(answer, input.maxRows, input.maxBytes);
}

/** Keys in the order of the columns, as the engine builds its rows. */
function answerRow(finish: ServiceGroupFinish, values: unknown[]): Record<string, unknown> {
  return Object.fromEntries(finish.columns.map((column, position) => [column.name, values[position]]));
}

/** HAVING as a test of a group's answer row, its paths reading the columns by name. */
function havingCondition(finish: ServiceGroupFinish, typeOf: (output: GroupOutput) => SqlType): RowCondition | undefined {
  return compileCondition(finish.having!, (path) => {
    const column = path.from === 'column' && path.fields.length === 0 ? finish.columns.find((candidate) => candidate.name === path.column) : undefined;
    return column && { type: typeOf(column.value), value: (row) => row[column.name] ?? null };
  });
}

interface Group {
  keys: unknown[];
  states: AggregateState[];
}

/** The groups of the rows (every combination of their unnests' elements) that pass WHERE; DECLINED where any value is unsure. */
function collect(
  rows: readonly Record<string, unknown>[],
  reader: RowReader,
  where: RowCondition[],
  keys: Compiled[],
  aggregates: Aggregator[],
): Map<unknown, Group> | Declined {
  const groups = new Map<unknown, Group>();
  for (const row of rows) {
    const combinations = reader.allElements(row);
    if (combinations === DECLINED) return DECLINED;
    for (const elements of combinations) {
      const passes = passesWhere(where, row, elements);
      if (passes === DECLINED) return DECLINED;
      if (!passes) continue;
      const values = keys.map((key) => key.value(row, elements));
      if (values.includes(DECLINED)) return DECLINED;
      // one key is its own map key (null, numbers and strings stay apart); several are joined as JSON
      const id = values.length === 1 ? values[0] : JSON.stringify(values);
      let group = groups.get(id);
      if (!group) groups.set(id, (group = { keys: values, states: aggregates.map((aggregate) => aggregate.start()) }));
      for (const state of group.states) if (state.add(row, elements) === DECLINED) return DECLINED;
    }
  }
  return groups;
}

/**
 * A key's or an aggregate argument's value per row, as the engine computes it: a path's value,
 * JSON_VALUE of a STRING, or a TIMESTAMP (microseconds) truncated to the start of its UTC minute,
 * hour or day (the engine's time zone is UTC).
 */
function groupValue(key: GroupKey, reader: RowReader): Compiled | undefined {
  const { operand } = key;
  const path = reader.compile(operand.value);
  if (!path || operand.cast) return undefined;
  if (operand.json) {
    const json = jsonOperand(path, operand.json);
    return json && { type: { kind: 'string' }, value: json };
  }
  if (!key.trunc) return path;
  if (path.type.kind !== 'timestamp') return undefined;
  const unit = MICROS_PER[key.trunc];
  return {
    type: path.type,
    value: (row, elements) => {
      const micros = path.value(row, elements);
      if (micros === null || micros === DECLINED) return micros;
      const time = micros as number;
      return time - (((time % unit) + unit) % unit);
    },
  };
}

interface AggregateState {
  add(row: Record<string, unknown>, elements: unknown[]): void | Declined;
  /** The group's value as the engine answers it, or DECLINED. */
  result(): unknown;
}

interface Aggregator {
  type: SqlType;
  start(): AggregateState;
}

/**
 * An aggregate as the engine computes it over a group's rows: COUNT(*) its rows, COUNT(x) its non-NULL
 * values, COUNT(DISTINCT x) its distinct non-NULL values (text equal when its code points are), COUNTIF
 * its rows the condition makes TRUE, SUM of INT64 (NULL over no value), MIN and MAX (NULL over no
 * value; text by its UTF-8 bytes). Arguments of a type the engine would compare otherwise are undefined.
 */
function aggregator(aggregate: GroupAggregate, reader: RowReader): Aggregator | undefined {
  if (aggregate.fn === 'countif') {
    const condition = compileCondition(aggregate.condition, (path) => reader.compile(path));
    if (!condition) return undefined;
    return counting((row, elements) => {
      const truth = condition(row, elements);
      return truth === DECLINED ? DECLINED : truth === true;
    });
  }
  if (aggregate.fn === 'count' && !aggregate.operand) return counting(() => true);
  const argument = groupValue(aggregate.operand!, reader);
  if (!argument) return undefined;
  const value = (row: Record<string, unknown>, elements: unknown[]) => argument.value(row, elements);
  const kind = argument.type.kind;
  switch (aggregate.fn) {
    case 'count':
      if (aggregate.distinct) return kind === 'float64' ? undefined : distinctCount(value);
      return counting((row, elements) => {
        const one = value(row, elements);
        return one === DECLINED ? DECLINED : one !== null;
      });
    case 'sum':
      return kind === 'int64' || kind === 'unknown' ? summing(value) : undefined;
    case 'min':
    case 'max':
      return kind === 'float64' ? undefined : extreme(argument.type, aggregate.fn, value);
  }
}

type RowValue = (row: Record<string, unknown>, elements: unknown[]) => unknown;

function counting(counts: (row: Record<string, unknown>, elements: unknown[]) => boolean | Declined): Aggregator {
  return {
    type: INT64,
    start: () => {
      let count = 0;
      return {
        add: (row, elements) => {
          const counted = counts(row, elements);
          if (counted === DECLINED) return DECLINED;
          if (counted) count += 1;
        },
        result: () => count,
      };
    },
  };
}

function distinctCount(value: RowValue): Aggregator {
  return {
    type: INT64,
    start: () => {
      const seen = new Set<unknown>();
      return {
        add: (row, elements) => {
          const one = value(row, elements);
          if (one === DECLINED) return DECLINED;
          if (one !== null) seen.add(one);
        },
        result: () => seen.size,
      };
    },
  };
}

function summing(value: RowValue): Aggregator {
  return {
    type: INT64,
    start: () => {
      let sum: number | null = null;
      return {
        add: (row, elements) => {
          const one = value(row, elements);
          if (one === DECLINED) return DECLINED;
          if (one !== null) sum = (sum ?? 0) + (one as number);
        },
        // each value is exact, so a sum within 2^53 is too; past it the engine answers digits or fails
        result: () => (sum === null || Number.isSafeInteger(sum) ? sum : DECLINED),
      };
    },
  };
}

function extreme(type: SqlType, fn: 'min' | 'max', value: RowValue): Aggregator {
  const order = comparator(type, { descending: fn === 'max', nulls: 'last' });
  return {
    type,
    start: () => {
      let best: unknown = null;
      return {
        add: (row, elements) => {
          const one = value(row, elements);
          if (one === DECLINED) return DECLINED;
          if (one !== null && (best === null || order(one, best) < 0)) best = one;
        },
        result: () => best,
      };
    },
  };
}

function sameColumns(finish: ServiceGroupFinish, typeOf: (output: GroupOutput) => SqlType, printed: FinishInput['columns']): boolean {
  return (
    printed.length === finish.columns.length &&
    printed.every((column, position) => {
      const own = finish.columns[position]!;
      const type = typeOf(own.value);
      return column.name === own.name && column.type.kind === type.kind && ANSWERED.has(type.kind);
    })
  );
}
