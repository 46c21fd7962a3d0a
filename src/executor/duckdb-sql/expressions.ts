/**
 * Expressions: each is resolved and typed with BigQuery's rules, then printed as DuckDB text that
 * computes the same value (or fails where BigQuery fails).
 */
import { InvalidQuery, SandboxViolation, type QueryPosition } from '../../errors.ts';
import { implicitName } from '../../sql/bindings.ts';
import type { CastType, Expr, OrderItem, WindowSpec } from '../../sql/syntax.ts';
import type { ParameterValue, SqlType } from '../../sql/types.ts';
import { bindOnce } from './bind.ts';
import { civilText } from './civil-text.ts';
import type { SqlBudget } from './budget.ts';
import type { ExprContext, QueryResult, SelectColumn } from './expression-context.ts';
import { translateCall, type ExpressionPrinter } from './functions.ts';
import { dateLiteral, datetimeLiteral, float64Literal, int64Literal, parseTimestampText, quoteIdentifier, quoteString, timestampLiteral } from './literals.ts';
import { accessField, itemsNamed, sameName } from './scope.ts';
import {
  BOOL,
  DATE,
  DATETIME,
  FLOAT64,
  INT64,
  STRING,
  TIMESTAMP,
  UNKNOWN,
  commonType,
  expect,
  isNumeric,
  isOrderable,
  typeName,
  unifyTypes,
  type Typed,
} from './types.ts';
import { UTC, civilIn, timeZone } from './time-zone.ts';
import { concatenation } from './value-size.ts';
import { weekOfYear, weekStart } from './weeks.ts';

export function translateExpr(expr: Expr, ctx: ExprContext): Typed {
  const value = translateNode(expr, ctx);
  ctx.budget.check(value.sql.length, expr.position);
  return value;
}

function translateNode(expr: Expr, ctx: ExprContext): Typed {
  switch (expr.kind) {
    case 'identifier': {
      const binding = ctx.bindings.names.get(expr);
      if (!binding) throw new Error(`the name ${expr.path.join('.')} was not bound`);
      if (binding.kind !== 'alias') return ctx.scope.value(binding, expr.position);
      const alias = ctx.aliases && selectColumn(ctx.aliases, binding.name);
      if (!alias) throw new Error(`the alias ${binding.name} is not in the select list`);
      return { sql: alias.sql, type: alias.type };
    }
    case 'string':
      return { sql: quoteString(expr.value, expr.position), type: STRING, stringLiteral: expr.value };
    case 'number': {
      const int = int64Literal(expr.text, expr.position);
      return int ? { sql: int, type: INT64 } : { sql: float64Literal(expr.text, expr.position), type: FLOAT64 };
    }
    case 'boolean':
      return { sql: expr.value ? 'TRUE' : 'FALSE', type: BOOL };
    case 'null':
      return { sql: 'NULL', type: UNKNOWN };
    case 'typed_literal':
      return typedLiteral(expr.type, expr.value, expr.position);
    case 'parameter':
      return parameterValue(parameterNamed(ctx.parameters, expr.name, expr.position), expr.position);
    case 'interval':
      throw new InvalidQuery(
        `an INTERVAL may only be an argument of TIMESTAMP_ADD, TIMESTAMP_SUB, DATE_ADD or DATE_SUB, or added to a timestamp`,
        expr.position,
      );
    case 'date_part':
      throw new InvalidQuery(`date part ${expr.part.toUpperCase()} may only be an argument of a date function`, expr.position);
    case 'unary':
      return unary(expr, ctx);
    case 'binary':
      return binary(expr, ctx);
    case 'like': {
      const value = expect(translateExpr(expr.expr, ctx), ['string'], 'LIKE', expr.position);
      const pattern = expect(translateExpr(expr.pattern, ctx), ['string'], 'LIKE', expr.position);
      // BigQuery escapes % and _ with a backslash; DuckDB's LIKE has no escape character unless told
      return { sql: `(${value.sql} ${expr.negated ? 'NOT LIKE' : 'LIKE'} ${pattern.sql} ESCAPE '\\')`, type: BOOL };
    }
    case 'between': {
      const value = translateExpr(expr.expr, ctx);
      const low = comparable(value, translateExpr(expr.low, ctx), 'BETWEEN', expr.position);
      const high = comparable(value, translateExpr(expr.high, ctx), 'BETWEEN', expr.position);
      return { sql: `(${value.sql} ${expr.negated ? 'NOT BETWEEN' : 'BETWEEN'} ${low.sql} AND ${high.sql})`, type: BOOL };
    }
    case 'in_list': {
      const value = translateExpr(expr.expr, ctx);
      const list = expr.list.map((item) => comparable(value, translateExpr(item, ctx), 'IN', expr.position).sql);
      return { sql: `(${value.sql} ${expr.negated ? 'NOT IN' : 'IN'} (${ctx.budget.join(list, ', ', expr.position)}))`, type: BOOL };
    }
    case 'in_subquery': {
      const value = translateExpr(expr.expr, ctx);
      const sub = singleColumn(ctx.subquery(expr.query, ctx.scope), 'IN subquery', expr.position);
      comparable(value, { sql: '', type: sub.type }, 'IN', expr.position);
      return { sql: `(${value.sql} ${expr.negated ? 'NOT IN' : 'IN'} (${sub.sql}))`, type: BOOL };
    }
    case 'in_unnest': {
      const value = translateExpr(expr.expr, ctx);
      const array = translateExpr(expr.array, ctx);
      if (array.type.kind !== 'array') throw new InvalidQuery(`IN UNNEST needs an array, got ${typeName(array.type)}`, expr.position);
      comparable(value, { sql: '', type: array.type.element }, 'IN UNNEST', expr.position);
      // a subquery keeps SQL's three-valued IN (NULL when not found and the array holds a NULL)
      return { sql: `(${value.sql} ${expr.negated ? 'NOT IN' : 'IN'} (SELECT unnest(${array.sql})))`, type: BOOL };
    }
    case 'is': {
      const value = translateExpr(expr.expr, ctx);
      if (expr.test !== 'null') expect(value, ['bool'], `IS ${expr.test.toUpperCase()}`, expr.position);
      return { sql: `(${value.sql} IS ${expr.negated ? 'NOT ' : ''}${expr.test.toUpperCase()})`, type: BOOL };
    }
    case 'call':
      return translateCall(expr, ctx, PRINTER);
    case 'cast':
      return castValue(translateExpr(expr.expr, ctx), expr.type, expr.safe, ctx.budget, expr.position);
    case 'case':
      return caseExpr(expr, ctx);
    case 'extract':
      return extract(expr.part, translateExpr(expr.expr, ctx), expr.timeZone, expr.position);
    case 'subscript':
      return subscript(expr, ctx);
    case 'field':
      return accessField(translateExpr(expr.expr, ctx), expr.field, expr.position);
    case 'struct': {
      const fields = expr.fields.map((field) => {
        const name = field.name ?? implicitName(field.expr);
        if (name === undefined) throw new InvalidQuery(`STRUCT fields need names here: write \`expr AS name\``, expr.position);
        return { name, value: translateExpr(field.expr, ctx) };
      });
      if (fields.length === 0) throw new InvalidQuery(`an empty STRUCT() is not supported`, expr.position);
      return {
        sql: `struct_pack(${ctx.budget.join(
          fields.map((f) => `${quoteIdentifier(f.name)} := ${f.value.sql}`),
          ', ',
          expr.position,
        )})`,
        type: { kind: 'struct', fields: fields.map((f) => ({ name: f.name, type: f.value.type })) },
      };
    }
    case 'array': {
      const elements = expr.elements.map((e) => translateExpr(e, ctx));
      const element = elements.reduce<SqlType | undefined>((type, e) => type && commonType(type, e.type), UNKNOWN);
      if (!element) throw new InvalidQuery(`array elements have no common type`, expr.position);
      if (element.kind === 'array') throw new InvalidQuery(`BigQuery has no arrays of arrays`, expr.position);
      return {
        sql: `[${ctx.budget.join(
          elements.map((e) => e.sql),
          ', ',
          expr.position,
        )}]`,
        type: { kind: 'array', element },
      };
    }
    case 'array_subquery': {
      const sub = singleColumn(ctx.subquery(expr.query, ctx.scope), 'ARRAY subquery', expr.position);
      return { sql: `ARRAY(${sub.sql})`, type: { kind: 'array', element: sub.type } };
    }
    case 'subquery': {
      const sub = singleColumn(ctx.subquery(expr.query, ctx.scope), 'scalar subquery', expr.position);
      return { sql: `(${sub.sql})`, type: sub.type };
    }
    case 'exists': {
      const sub = ctx.subquery(expr.query, ctx.scope);
      return { sql: `(${expr.negated ? 'NOT ' : ''}EXISTS (${sub.sql}))`, type: BOOL };
    }
  }
}

/** The value of `@name` (names match as BigQuery's do, without regard to case). */
export function parameterNamed(parameters: ExprContext['parameters'], name: string, position?: QueryPosition): ParameterValue {
  const value = Object.entries(parameters).find(([candidate]) => sameName(candidate, name))?.[1];
  if (value === undefined) throw new InvalidQuery(`query parameter @${name} has no value; send it with the request`, position);
  return value;
}

/** A parameter as a value: text coerces like a string literal; a typed one is a literal of its type. */
function parameterValue(value: ParameterValue, position?: QueryPosition): Typed {
  if (typeof value === 'string') return { sql: quoteString(value, position), type: STRING, stringLiteral: value };
  switch (value.type) {
    case 'int64': {
      const magnitude = int64Literal(value.text.replace(/^[+-]/, ''), position);
      if (!magnitude) throw new InvalidQuery(`query parameter value ${JSON.stringify(value.text)} is not an INT64`, position);
      return { sql: value.text.startsWith('-') ? `(- ${magnitude})` : magnitude, type: INT64 };
    }
    case 'float64': {
      const magnitude = float64Literal(value.text.replace(/^[+-]/, ''), position);
      return { sql: value.text.startsWith('-') ? `(- ${magnitude})` : magnitude, type: FLOAT64 };
    }
    case 'bool':
      return { sql: value.text === 'true' ? 'TRUE' : 'FALSE', type: BOOL };
    case 'timestamp':
      // a declared timestamp may carry nanoseconds (the store keeps them); BigQuery's TIMESTAMP holds microseconds
      return coerceLiteral(value.text.replace(/(\.\d{6})\d+/, '$1'), TIMESTAMP, position)!;
  }
}

/** The select column an alias binding names (the binder checked it is one value). */
export function selectColumn(columns: SelectColumn[], name: string): SelectColumn | undefined {
  return itemsNamed(columns, name).find((column) => !column.anonymous);
}

function singleColumn(result: QueryResult, what: string, position?: QueryPosition): Typed {
  if (result.columns.length !== 1) throw new InvalidQuery(`a ${what} must return exactly one column, this one returns ${result.columns.length}`, position);
  return { sql: result.sql, type: result.columns[0]!.type };
}

/**
 * `other` made comparable with `value`: a string literal or parameter compared with a timestamp,
 * datetime or date is read as one (BigQuery's literal coercion); other type mismatches are errors.
 */
export function comparable(value: Typed, other: Typed, operator: string, position?: QueryPosition): Typed {
  const literal = other.stringLiteral !== undefined ? coerceLiteral(other.stringLiteral, value.type, position) : undefined;
  if (literal) return literal;
  if (value.stringLiteral !== undefined && coerceLiteral(value.stringLiteral, other.type, position)) return other;
  if (!commonType(value.type, other.type) || !isOrderable(value.type)) {
    throw new InvalidQuery(`No matching signature for operator ${operator} for argument types ${typeName(value.type)}, ${typeName(other.type)}`, position);
  }
  return other;
}

/** Both sides of a comparison, each coerced to the other's type when it is a literal. */
function comparePair(left: Typed, right: Typed, operator: string, position?: QueryPosition): [Typed, Typed] {
  if (left.stringLiteral !== undefined && right.stringLiteral === undefined) {
    return [comparable(right, left, operator, position), right];
  }
  return [left, comparable(left, right, operator, position)];
}

function coerceLiteral(text: string, type: SqlType, position?: QueryPosition): Typed | undefined {
  if (type.kind === 'timestamp') {
    const micros = parseTimestampText(text);
    if (micros === undefined) throw new InvalidQuery(`Could not cast literal ${JSON.stringify(text)} to type TIMESTAMP`, position);
    return { sql: timestampLiteral(micros), type: TIMESTAMP };
  }
  if (type.kind === 'datetime') return { sql: datetimeLiteral(text, position), type: DATETIME };
  if (type.kind === 'date') return { sql: dateLiteral(text, position), type: DATE };
  return undefined;
}

function typedLiteral(type: Extract<Expr, { kind: 'typed_literal' }>['type'], value: string, position?: QueryPosition): Typed {
  switch (type) {
    case 'TIMESTAMP':
      return coerceLiteral(value, TIMESTAMP, position)!;
    case 'DATETIME':
      return { sql: datetimeLiteral(value, position), type: DATETIME };
    case 'DATE':
      return { sql: dateLiteral(value, position), type: DATE };
    case 'NUMERIC':
      if (!/^\s*[+-]?(\d+(\.\d*)?|\.\d+)\s*$/.test(value)) throw new InvalidQuery(`invalid NUMERIC literal ${JSON.stringify(value)}`, position);
      return { sql: `CAST(${quoteString(value.trim())} AS DECIMAL(38,9))`, type: { kind: 'numeric' } };
    case 'JSON':
      try {
        JSON.parse(value);
      } catch {
        throw new InvalidQuery(`invalid JSON literal ${JSON.stringify(value)}`, position);
      }
      return { sql: `CAST(${quoteString(value)} AS JSON)`, type: { kind: 'json' } };
    case 'BYTES':
      return { sql: `unhex(${quoteString(value)})`, type: { kind: 'bytes' } };
    case 'TIME':
      if (!/^\s*\d{1,2}:\d{1,2}:\d{1,2}(\.\d{1,6})?\s*$/.test(value)) {
        throw new InvalidQuery(`invalid TIME literal ${JSON.stringify(value)}`, position);
      }
      return { sql: `CAST(${quoteString(value.trim())} AS TIME)`, type: { kind: 'time' } };
  }
}

function unary(expr: Extract<Expr, { kind: 'unary' }>, ctx: ExprContext): Typed {
  const operand = translateExpr(expr.operand, ctx);
  switch (expr.operator) {
    case 'not':
      return { sql: `(NOT ${expect(operand, ['bool'], 'NOT', expr.position).sql})`, type: BOOL };
    case '-':
      if (!isNumeric(operand.type)) expect(operand, ['int64', 'float64', 'numeric'], 'unary -', expr.position);
      return { sql: `(- ${operand.sql})`, type: operand.type };
    case '+':
      if (!isNumeric(operand.type)) expect(operand, ['int64', 'float64', 'numeric'], 'unary +', expr.position);
      return operand;
    case '~':
      return { sql: `(~ ${expect(operand, ['int64'], '~', expr.position).sql})`, type: INT64 };
  }
}

const COMPARISONS = {
  '=': '=',
  '!=': '<>',
  '<': '<',
  '<=': '<=',
  '>': '>',
  '>=': '>=',
  'is distinct from': 'IS DISTINCT FROM',
  'is not distinct from': 'IS NOT DISTINCT FROM',
} as const;
const BITWISE = { '&': '&', '|': '|', '<<': '<<', '>>': '>>' } as const;

function binary(expr: Extract<Expr, { kind: 'binary' }>, ctx: ExprContext): Typed {
  const { operator, position } = expr;
  if ((operator === '+' || operator === '-') && (expr.right.kind === 'interval' || expr.left.kind === 'interval')) {
    const [timestamp, interval] = expr.right.kind === 'interval' ? [expr.left, expr.right] : [expr.right, expr.left];
    if (interval.kind !== 'interval' || (operator === '-' && expr.left.kind === 'interval')) {
      throw new InvalidQuery(`cannot subtract a timestamp from an INTERVAL`, position);
    }
    return addInterval(translateExpr(timestamp, ctx), interval, operator === '-', ctx);
  }
  if (operator === '||') {
    // a chain a || b || c is one concatenation, so its size is checked once and its operands are not bound level by level
    const operands = concatenated(expr).map((operand) => expect(translateExpr(operand, ctx), ['string'], '||', position));
    return {
      sql: concatenation(
        operands.map((operand) => operand.sql),
        ctx.budget,
        ctx.maxValueBytes,
      ),
      type: STRING,
    };
  }
  const left = translateExpr(expr.left, ctx);
  const right = translateExpr(expr.right, ctx);
  if (operator === 'and' || operator === 'or') {
    expect(left, ['bool'], operator.toUpperCase(), position);
    expect(right, ['bool'], operator.toUpperCase(), position);
    return { sql: `(${left.sql} ${operator.toUpperCase()} ${right.sql})`, type: BOOL };
  }
  if (operator in COMPARISONS) {
    const [l, r] = comparePair(left, right, operator, position);
    return { sql: `(${l.sql} ${COMPARISONS[operator as keyof typeof COMPARISONS]} ${r.sql})`, type: BOOL };
  }
  if (operator === '%') throw new InvalidQuery(`BigQuery has no % operator; use MOD(a, b)`, position);
  if (operator in BITWISE || operator === '^') {
    expect(left, ['int64'], operator, position);
    expect(right, ['int64'], operator, position);
    return {
      sql: operator === '^' ? `xor(${left.sql}, ${right.sql})` : `(${left.sql} ${BITWISE[operator as keyof typeof BITWISE]} ${right.sql})`,
      type: INT64,
    };
  }
  const numericLeft = expect(left, ['int64', 'float64', 'numeric'], `operator ${operator}`, position);
  const numericRight = expect(right, ['int64', 'float64', 'numeric'], `operator ${operator}`, position);
  return arithmetic(operator as '+' | '-' | '*' | '/', numericLeft, numericRight, ctx.budget, position);
}

/** The operands of a chain of ||, left to right. */
function concatenated(expr: Expr, operands: Expr[] = []): Expr[] {
  if (expr.kind !== 'binary' || expr.operator !== '||') operands.push(expr);
  else concatenated(expr.right, concatenated(expr.left, operands));
  return operands;
}

/** + - * keep INT64 (DuckDB's BIGINT overflow is an error, as in BigQuery); / is always FLOAT64 and fails on zero. */
function arithmetic(operator: '+' | '-' | '*' | '/', left: Typed, right: Typed, budget: SqlBudget, position?: QueryPosition): Typed {
  const type = commonType(left.type, right.type)!;
  if (operator !== '/') return { sql: `(${left.sql} ${operator} ${right.sql})`, type: type.kind === 'unknown' ? INT64 : type };
  if (type.kind === 'numeric') throw new SandboxViolation(`division of NUMERIC values is not supported`, position);
  const sql = bindOnce(budget, [left.sql, right.sql], ([dividend, divisor]) => {
    const denominator = `CAST(${divisor} AS DOUBLE)`;
    return `(CASE WHEN ${denominator} = 0 THEN error('division by zero') ELSE CAST(${dividend} AS DOUBLE) / ${denominator} END)`;
  });
  return { sql, type: FLOAT64 };
}

/** DuckDB interval constructors per unit; QUARTER is three months. */
const INTERVALS: Partial<Record<string, (n: string) => string>> = {
  microsecond: (n) => `to_microseconds(${n})`,
  millisecond: (n) => `to_milliseconds(${n})`,
  second: (n) => `to_seconds(${n})`,
  minute: (n) => `to_minutes(${n})`,
  hour: (n) => `to_hours(${n})`,
  day: (n) => `to_days(${n})`,
  week: (n) => `to_days(${n} * 7)`,
  month: (n) => `to_months(${n})`,
  quarter: (n) => `to_months(${n} * 3)`,
  year: (n) => `to_years(${n})`,
};

/** The units BigQuery allows per type: a TIMESTAMP only up to DAY, a DATE only from DAY. */
const INTERVAL_UNITS: Partial<Record<SqlType['kind'], string[]>> = {
  timestamp: ['microsecond', 'millisecond', 'second', 'minute', 'hour', 'day'],
  datetime: ['microsecond', 'millisecond', 'second', 'minute', 'hour', 'day', 'week', 'month', 'quarter', 'year'],
  date: ['day', 'week', 'month', 'quarter', 'year'],
};

/**
 * `value ± interval n unit` (TIMESTAMP_ADD, DATE_SUB, `ts + interval 1 hour`). Adding months clamps
 * to the end of the month in both engines (Jan 31 + 1 month = Feb 29 in 2024).
 */
export function addInterval(value: Typed, interval: Extract<Expr, { kind: 'interval' }>, subtract: boolean, ctx: ExprContext): Typed {
  expect(value, ['timestamp', 'datetime', 'date'], 'INTERVAL arithmetic', interval.position);
  const amount = expect(translateExpr(interval.value, ctx), ['int64'], 'INTERVAL', interval.position);
  const type = value.type.kind === 'unknown' ? TIMESTAMP : value.type;
  const make = Object.hasOwn(INTERVALS, interval.unit) ? INTERVALS[interval.unit] : undefined;
  if (!make || !INTERVAL_UNITS[type.kind]?.includes(interval.unit)) {
    throw new InvalidQuery(`INTERVAL unit ${interval.unit.toUpperCase()} is not supported for ${typeName(type)}`, interval.position);
  }
  const sql = `(${value.sql} ${subtract ? '-' : '+'} ${make(amount.sql)})`;
  // DuckDB's DATE + INTERVAL is a TIMESTAMP
  return { sql: type.kind === 'date' ? `CAST(${sql} AS DATE)` : sql, type };
}

function caseExpr(expr: Extract<Expr, { kind: 'case' }>, ctx: ExprContext): Typed {
  const operand = expr.operand && translateExpr(expr.operand, ctx);
  const whens = expr.whens.map(({ when, then }) => {
    const condition = operand
      ? comparable(operand, translateExpr(when, ctx), 'CASE', expr.position)
      : expect(translateExpr(when, ctx), ['bool'], 'CASE WHEN', expr.position);
    return { condition, result: translateExpr(then, ctx) };
  });
  const otherwise = expr.else && translateExpr(expr.else, ctx);
  const results = [...whens.map((w) => w.result), ...(otherwise ? [otherwise] : [])];
  const type = unifyTypes(results, 'CASE', expr.position);
  const branches = ctx.budget.join(
    whens.map((w) => `WHEN ${w.condition.sql} THEN ${w.result.sql}`),
    ' ',
    expr.position,
  );
  return { sql: `(CASE ${operand ? `${operand.sql} ` : ''}${branches}${otherwise ? ` ELSE ${otherwise.sql}` : ''} END)`, type };
}

/** `CASE WHEN ok THEN value ELSE error(...)/NULL END`: BigQuery's error, or NULL for the SAFE_ forms. */
function orFail(test: string, value: string, message: string, safe: boolean): string {
  return `(CASE WHEN ${test} THEN ${value} ELSE ${safe ? 'NULL' : `error(${message})`} END)`;
}

export function castValue(value: Typed, target: CastType, safe: boolean, budget: SqlBudget, position?: QueryPosition): Typed {
  const from = value.type.kind;
  const cast = safe ? 'TRY_CAST' : 'CAST';
  const refuse = (): never => {
    throw new InvalidQuery(`Invalid cast from ${typeName(value.type)} to ${target}`, position);
  };
  // the checked casts read the value several times
  const checked = (text: (v: string) => string): string => bindOnce(budget, [value.sql], ([v]) => text(v!));
  switch (target) {
    case 'STRING': {
      if (from === 'string' || from === 'unknown') return { sql: from === 'unknown' ? 'CAST(NULL AS VARCHAR)' : value.sql, type: STRING };
      if (from === 'int64' || from === 'bool' || from === 'date') return { sql: `CAST(${value.sql} AS VARCHAR)`, type: STRING };
      // DuckDB writes a whole DOUBLE as 1.0, BigQuery as 1
      if (from === 'float64') return { sql: `regexp_replace(CAST(${value.sql} AS VARCHAR), '\\.0$', '')`, type: STRING };
      if (from === 'timestamp' || from === 'datetime') return { sql: checked((v) => civilText(v, from, 'cast')), type: STRING };
      return refuse();
    }
    case 'INT64': {
      if (from === 'int64') return value;
      if (from === 'unknown') return { sql: 'CAST(NULL AS BIGINT)', type: INT64 };
      if (from === 'bool') return { sql: `CAST(${value.sql} AS BIGINT)`, type: INT64 };
      // BigQuery rounds half away from zero (DuckDB's CAST rounds half to even); DuckDB's round() does
      if (from === 'float64' || from === 'numeric') return { sql: `${cast}(round(${value.sql}) AS BIGINT)`, type: INT64 };
      if (from === 'string') {
        // BigQuery reads decimal or hex digits only: '1.5' or ' 1' are errors, which DuckDB would accept
        const sql = checked((v) =>
          orFail(
            `(${v} IS NULL OR regexp_full_match(${v}, '[+-]?([0-9]+|0[xX][0-9a-fA-F]+)'))`,
            `${cast}(${v} AS BIGINT)`,
            `'Bad int64 value: ' || ${v}`,
            safe,
          ),
        );
        return { sql, type: INT64 };
      }
      return refuse();
    }
    case 'FLOAT64':
      if (from === 'float64') return value;
      if (['int64', 'numeric', 'string', 'unknown'].includes(from)) return { sql: `${cast}(${value.sql} AS DOUBLE)`, type: FLOAT64 };
      return refuse();
    case 'NUMERIC':
      if (['int64', 'numeric', 'string', 'unknown'].includes(from)) return { sql: `${cast}(${value.sql} AS DECIMAL(38,9))`, type: { kind: 'numeric' } };
      return refuse();
    case 'BOOL': {
      if (from === 'bool') return value;
      if (from === 'int64' || from === 'unknown') return { sql: `CAST(${value.sql} AS BOOLEAN)`, type: BOOL };
      if (from === 'string') {
        // only 'true' and 'false' (any case); DuckDB would also take 'yes', '1', 't'
        const sql = checked((v) => orFail(`(${v} IS NULL OR lower(${v}) IN ('true', 'false'))`, `(lower(${v}) = 'true')`, `'Bad bool value: ' || ${v}`, safe));
        return { sql, type: BOOL };
      }
      return refuse();
    }
    case 'TIMESTAMP':
      if (from === 'timestamp') return value;
      if (['string', 'datetime', 'date', 'unknown'].includes(from)) return { sql: `${cast}(${value.sql} AS TIMESTAMPTZ)`, type: TIMESTAMP };
      return refuse();
    case 'DATETIME':
      if (from === 'datetime') return value;
      if (['string', 'timestamp', 'date', 'unknown'].includes(from)) return { sql: `${cast}(${value.sql} AS TIMESTAMP)`, type: DATETIME };
      return refuse();
    case 'DATE':
      if (from === 'date') return value;
      if (['string', 'timestamp', 'datetime', 'unknown'].includes(from)) return { sql: `${cast}(${value.sql} AS DATE)`, type: DATE };
      return refuse();
    default:
      throw new SandboxViolation(`CAST to ${target} is not supported`, position);
  }
}

const EXTRACT_PARTS: Partial<Record<string, (v: string) => string>> = {
  // DuckDB's microsecond() and millisecond() count from the start of the minute
  microsecond: (v) => `(microsecond(${v}) % 1000000)`,
  millisecond: (v) => `(millisecond(${v}) % 1000)`,
  second: (v) => `second(${v})`,
  minute: (v) => `minute(${v})`,
  hour: (v) => `hour(${v})`,
  day: (v) => `day(${v})`,
  // BigQuery counts Sunday as 1, DuckDB as 0
  dayofweek: (v) => `(dayofweek(${v}) + 1)`,
  dayofyear: (v) => `dayofyear(${v})`,
  // weeks starting on Sunday, days before the first Sunday in week 0 (strftime %U)
  week: (v) => `CAST(strftime(${v}, '%U') AS BIGINT)`,
  isoweek: (v) => `week(${v})`,
  month: (v) => `month(${v})`,
  quarter: (v) => `quarter(${v})`,
  year: (v) => `year(${v})`,
  isoyear: (v) => `isoyear(${v})`,
};

/** EXTRACT(part FROM value [AT TIME ZONE zone]): a TIMESTAMP's part on the zone's clock (default UTC). */
export function extract(part: string, value: Typed, zoneName: string | undefined, position?: QueryPosition): Typed {
  expect(value, ['timestamp', 'datetime', 'date'], `EXTRACT(${part.toUpperCase()})`, position);
  const zone = zoneName === undefined ? UTC : timeZone(zoneName, position);
  if (zoneName !== undefined && value.type.kind !== 'timestamp') {
    throw new InvalidQuery(`AT TIME ZONE applies to a TIMESTAMP, not ${typeName(value.type)}`, position);
  }
  const civil = value.type.kind === 'timestamp' ? civilIn(value.sql, zone) : value.sql;
  if (part === 'date') return { sql: `CAST(${civil} AS DATE)`, type: DATE };
  const start = part.startsWith('week(') ? weekStart(part) : undefined;
  const fn = start !== undefined ? (v: string) => weekOfYear(v, start) : Object.hasOwn(EXTRACT_PARTS, part) ? EXTRACT_PARTS[part] : undefined;
  if (!fn || (value.type.kind === 'date' && ['hour', 'minute', 'second', 'millisecond', 'microsecond'].includes(part))) {
    throw new InvalidQuery(`EXTRACT(${part.toUpperCase()} FROM ${typeName(value.type)}) is not supported`, position);
  }
  return { sql: `CAST(${fn(civil)} AS BIGINT)`, type: INT64 };
}

function subscript(expr: Extract<Expr, { kind: 'subscript' }>, ctx: ExprContext): Typed {
  const array = translateExpr(expr.expr, ctx);
  if (array.type.kind !== 'array')
    throw new InvalidQuery(`Array element access with [${expr.mode.toUpperCase()}] needs an array, got ${typeName(array.type)}`, expr.position);
  const index = expect(translateExpr(expr.index, ctx), ['int64'], `[${expr.mode.toUpperCase()}]`, expr.position);
  // DuckDB lists are 1-based, read negative indexes from the end and give NULL out of range; BigQuery's
  // OFFSET is 0-based, ORDINAL 1-based, and out of range is an error unless SAFE_
  const zeroBased = expr.mode === 'offset' || expr.mode === 'safe_offset';
  const safe = expr.mode === 'safe_offset' || expr.mode === 'safe_ordinal';
  const sql = bindOnce(ctx.budget, [array.sql, index.sql], ([list, offset]) => {
    const position = zeroBased ? `(${offset} + 1)` : offset!;
    const message = `'Array index ' || CAST(${offset} AS VARCHAR) || ' is out of bounds'`;
    return `(CASE WHEN ${list} IS NULL OR ${offset} IS NULL THEN NULL WHEN ${position} BETWEEN 1 AND len(${list}) THEN list_extract(${list}, ${position}) ELSE ${safe ? 'NULL' : `error(${message})`} END)`;
  });
  return { sql, type: array.type.element };
}

export function orderItemSql(sql: string, item: OrderItem): string {
  // BigQuery puts NULLs first ascending and last descending; DuckDB's default differs, so say it
  const nulls = item.nulls ?? (item.descending ? 'last' : 'first');
  return `${sql} ${item.descending ? 'DESC' : 'ASC'} NULLS ${nulls.toUpperCase()}`;
}

export function windowSql(spec: WindowSpec, ctx: ExprContext): string {
  const inner: ExprContext = { ...ctx, windows: false, clause: 'OVER' };
  const parts: string[] = [];
  if (spec.partitionBy.length)
    parts.push(
      `PARTITION BY ${ctx.budget.join(
        spec.partitionBy.map((e) => translateExpr(e, inner).sql),
        ', ',
      )}`,
    );
  if (spec.orderBy.length)
    parts.push(
      `ORDER BY ${ctx.budget.join(
        spec.orderBy.map((o) => orderItemSql(translateExpr(o.expr, inner).sql, o)),
        ', ',
      )}`,
    );
  if (spec.frame) {
    const bound = (b: NonNullable<typeof spec.frame>['start']): string => {
      switch (b.kind) {
        case 'current_row':
          return 'CURRENT ROW';
        case 'unbounded_preceding':
          return 'UNBOUNDED PRECEDING';
        case 'unbounded_following':
          return 'UNBOUNDED FOLLOWING';
        case 'preceding':
        case 'following': {
          const offset = expect(translateExpr(b.offset, inner), ['int64', 'float64', 'numeric'], 'window frame', undefined);
          return `${offset.sql} ${b.kind.toUpperCase()}`;
        }
      }
    };
    const units = spec.frame.units.toUpperCase();
    parts.push(spec.frame.end ? `${units} BETWEEN ${bound(spec.frame.start)} AND ${bound(spec.frame.end)}` : `${units} ${bound(spec.frame.start)}`);
  }
  return ` OVER (${parts.join(' ')})`;
}

/** What the function translations call back into; passed to them, so that functions.ts does not import this module. */
const PRINTER: ExpressionPrinter = {
  translateExpr,
  addInterval,
  orderItemSql,
  windowSql,
  castToString: (value, ctx, position) => castValue(value, 'STRING', false, ctx.budget, position),
  coerceLiteral: (text, type, position) => coerceLiteral(text, type, position) ?? { sql: quoteString(text, position), type: STRING, stringLiteral: text },
};
