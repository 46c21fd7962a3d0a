import type { estypes } from '@elastic/elasticsearch';
import { ALWAYS_PRESENT_COLUMNS, exactTextField } from '../../../shared/stored-event.ts';
import { clampToDateNanos, isoToNanosText, millisFromNanosText, nanosTextFromMillis } from '../../../shared/stored-timestamp.ts';
import { pushdownOf } from '../../sql/functions.ts';
import type { Expr } from '../../sql/syntax.ts';
import { walk } from '../../sql/walk.ts';
import { NUMERIC_FIELD_TYPES, inNestedRecords, type FieldCatalog } from '../field-catalog.ts';
import { luceneRegexpForContains } from '../regex.ts';
import { regexpQuery } from '../regex-budget.ts';
import type { FieldReference, SelectScope } from './select-scope.ts';

type Query = estypes.QueryDslQueryContainer;

/**
 * A WHERE condition as an Elasticsearch filter. `exact` says the filter matches exactly the events
 * for which the condition is TRUE (each event being one row); otherwise it matches a superset
 * (values inside record arrays match when any element matches, values too long to index always
 * pass), and the embedded engine applies the condition itself to the rows the scan returns.
 */
export interface PushedPredicate {
  query: Query;
  exact: boolean;
}

export interface PredicateContext {
  scope: SelectScope;
  catalog: FieldCatalog;
  /** What current_timestamp() means, epoch milliseconds. */
  now: number;
}

/** The conjuncts of a WHERE clause: a AND b AND c -> [a, b, c]. */
export function conjuncts(expr: Expr | undefined): Expr[] {
  return expr ? operands(expr, 'and') : [];
}

/**
 * The operands of a chain of one operator however it is grouped, in order: a OR (b OR c) -> [a, b, c].
 * Filters are built from these flat lists, one bool for the whole chain: a bool per link would nest
 * as deep as the chain is long, beyond what Elasticsearch parses. Iterative, as a chain may hold a thousand links.
 */
export function operands(expr: Expr, operator: 'and' | 'or'): Expr[] {
  const found: Expr[] = [];
  const pending: Expr[] = [expr];
  while (pending.length > 0) {
    const next = pending.pop()!;
    if (next.kind === 'binary' && next.operator === operator) pending.push(next.right, next.left);
    else found.push(next);
  }
  return found;
}

type InList = Extract<Expr, { kind: 'in_list' }>;

/**
 * OR-ed equalities of one field with literals as one IN list, which becomes one `terms` filter:
 * `a = 1 or b = 2 or a = 3` -> [a in (1, 3), b in (2)]. Same truth in SQL's three-valued logic.
 */
export function equalitiesAsLists(disjuncts: readonly Expr[], context: PredicateContext): Expr[] {
  const lists = new Map<string, InList>();
  const result: Expr[] = [];
  for (const disjunct of disjuncts) {
    const equality = literalEquality(disjunct, context);
    if (!equality) {
      result.push(disjunct);
      continue;
    }
    const key = JSON.stringify(equality.field, (name, value: unknown) => (name === 'position' ? undefined : value));
    const list = lists.get(key);
    if (list) {
      list.list.push(equality.value);
      continue;
    }
    const created: InList = { kind: 'in_list', negated: false, expr: equality.field, list: [equality.value] };
    lists.set(key, created);
    result.push(created);
  }
  return result;
}

/** `field = literal` or `literal = field`, as its two sides. */
function literalEquality(expr: Expr, context: PredicateContext): { field: Expr; value: Expr } | undefined {
  if (expr.kind !== 'binary' || expr.operator !== '=') return undefined;
  if (fieldOf(expr.left, context) && literal(expr.right) !== undefined) return { field: expr.left, value: expr.right };
  if (fieldOf(expr.right, context) && literal(expr.left) !== undefined) return { field: expr.right, value: expr.left };
  return undefined;
}

/** Any of several filters, in one flat `should`; undefined when one of them cannot be pushed (the rest would not be a superset). */
function anyOf(alternatives: readonly (PushedPredicate | undefined)[]): PushedPredicate | undefined {
  if (alternatives.length === 0 || alternatives.some((alternative) => alternative === undefined)) return undefined;
  const pushed = alternatives as PushedPredicate[];
  if (pushed.length === 1) return pushed[0];
  return {
    query: { bool: { should: pushed.map((alternative) => alternative.query), minimum_should_match: 1 } },
    exact: pushed.every((alternative) => alternative.exact),
  };
}

/** The filter a condition implies on the scanned events, or undefined when it implies nothing the store can check. */
export function pushDown(expr: Expr, context: PredicateContext): PushedPredicate | undefined {
  switch (expr.kind) {
    case 'binary':
      if (expr.operator === 'and') {
        const parts = conjuncts(expr).map((conjunct) => pushDown(conjunct, context));
        // the parts that can be pushed still hold for every row that passes: a superset
        const pushed = parts.filter((part): part is PushedPredicate => part !== undefined);
        if (pushed.length === 0) return undefined;
        const exact = pushed.length === parts.length && pushed.every((part) => part.exact);
        return { query: pushed.length === 1 ? pushed[0]!.query : { bool: { filter: pushed.map((part) => part.query) } }, exact };
      }
      if (expr.operator === 'or') return anyOf(equalitiesAsLists(operands(expr, 'or'), context).map((disjunct) => pushDown(disjunct, context)));
      if (expr.operator === '=') {
        const text = integerTextIn(expr.left, integerList([expr.right]), context) ?? integerTextIn(expr.right, integerList([expr.left]), context);
        if (text) return text;
      }
      return comparison(expr.operator, expr.left, expr.right, context);
    case 'unary':
      return expr.operator === 'not' ? negation(expr.operand, context) : undefined;
    case 'between': {
      if (expr.negated) return negation({ ...expr, negated: false }, context);
      const text = integerTextIn(expr.expr, integerRange(expr.low, expr.high), context);
      if (text) return text;
      const low = comparison('>=', expr.expr, expr.low, context);
      const high = comparison('<=', expr.expr, expr.high, context);
      if (!low || !high) return undefined;
      return { query: { bool: { filter: [low.query, high.query] } }, exact: low.exact && high.exact };
    }
    case 'in_list':
      if (expr.negated) return negation({ ...expr, negated: false }, context);
      return integerTextIn(expr.expr, integerList(expr.list), context) ?? equalsAny(expr.expr, expr.list, context);
    case 'like':
      if (expr.negated) return negation({ ...expr, negated: false }, context);
      return stringMatch(expr.expr, expr.pattern, 'like', context);
    case 'is': {
      if (expr.test !== 'null') return expr.negated ? undefined : comparison('=', expr.expr, { kind: 'boolean', value: expr.test === 'true' }, context);
      const field = fieldOf(expr.expr, context);
      if (!field) return undefined;
      const exists = onField(field, (name) => ({ exists: { field: name } }), context, true);
      if (!exists) return undefined;
      if (expr.negated) return exists;
      return field.kind === 'column' ? { query: { bool: { must_not: [exists.query] } }, exact: true } : undefined;
    }
    case 'call':
      return callMatch(expr, context);
    default:
      return undefined;
  }
}

/** A call the registry marks as a regexp or prefix condition (REGEXP_CONTAINS, STARTS_WITH) on a scanned field, as the store's query. */
function callMatch(expr: Extract<Expr, { kind: 'call' }>, context: PredicateContext): PushedPredicate | undefined {
  const pushdown = pushdownOf(expr);
  if (expr.args.length !== 2 || (pushdown !== 'regexp_condition' && pushdown !== 'prefix_condition')) return undefined;
  return stringMatch(expr.args[0]!, expr.args[1]!, pushdown === 'regexp_condition' ? 'regexp' : 'prefix', context);
}

/** NOT p is pushed only where p's filter is exact and its fields always exist (so there is no NULL row to get wrong). */
function negation(operand: Expr, context: PredicateContext): PushedPredicate | undefined {
  const inner = pushDown(operand, context);
  if (!inner?.exact) return undefined;
  if (!fieldsOf(operand, context).every((field) => field.kind === 'column' && ALWAYS_PRESENT_COLUMNS.has(field.column))) return undefined;
  return { query: { bool: { must_not: [inner.query] } }, exact: true };
}

/** Every identifier in `expr`, subqueries included (an unresolved one counts as an unknown field). */
function fieldsOf(expr: Expr, context: PredicateContext): FieldReference[] {
  const found: FieldReference[] = [];
  walk(expr, {
    expr: (node) => {
      if (node.kind === 'identifier') found.push(context.scope.resolve(node) ?? { kind: 'metadata', path: '?' });
    },
  });
  return found;
}

type Operator = '=' | '!=' | '<' | '<=' | '>' | '>=';
const FLIPPED: Record<Operator, Operator> = { '=': '=', '!=': '!=', '<': '>', '<=': '>=', '>': '<', '>=': '<=' };
const RANGE_KEY: Partial<Record<Operator, 'gt' | 'gte' | 'lt' | 'lte'>> = { '<': 'lt', '<=': 'lte', '>': 'gt', '>=': 'gte' };

function comparison(operator: string, left: Expr, right: Expr, context: PredicateContext): PushedPredicate | undefined {
  if (!(operator in FLIPPED)) return undefined;
  let op = operator as Operator;
  let fieldExpr = left;
  let valueExpr = right;
  if (!fieldOf(left, context) && fieldOf(right, context)) {
    [fieldExpr, valueExpr] = [right, left];
    op = FLIPPED[op];
  }
  const field = fieldOf(fieldExpr, context);
  if (!field) return undefined;
  if (field.kind === 'column' && field.column === 'timestamp') {
    const bound = timestampConstant(valueExpr, context.now);
    if (bound === undefined) return undefined;
    return timestampComparison(op, bound);
  }
  const value = literal(valueExpr);
  if (value === undefined) return undefined;
  if (op === '!=') {
    // a record array holds many values: only a single-valued column can be compared for inequality
    if (field.kind !== 'column' || !ALWAYS_PRESENT_COLUMNS.has(field.column)) return undefined;
    const equal = comparison('=', fieldExpr, valueExpr, context);
    return equal?.exact ? { query: { bool: { must_not: [equal.query] } }, exact: true } : undefined;
  }
  return onField(
    field,
    (name, type) => {
      if (typeof value === 'number') {
        if (!type || !NUMERIC_FIELD_TYPES.has(type)) return undefined;
        return op === '=' ? { term: { [name]: value } } : { range: { [name]: { [RANGE_KEY[op]!]: value } } };
      }
      if (typeof value === 'boolean') return type === 'boolean' && op === '=' ? { term: { [name]: value } } : undefined;
      if (type !== 'keyword') return undefined;
      return op === '=' ? { term: { [name]: value } } : { range: { [name]: { [RANGE_KEY[op]!]: value } } };
    },
    context,
  );
}

/**
 * `field IN (values)`: one `terms` filter when the values are literals the field's type compares as
 * `=` does (strings with a keyword, case-sensitive; numbers with a number; booleans with a boolean),
 * else the equalities one by one in a flat `should`.
 */
function equalsAny(fieldExpr: Expr, valueExprs: readonly Expr[], context: PredicateContext): PushedPredicate | undefined {
  const one = () => anyOf(valueExprs.map((valueExpr) => comparison('=', fieldExpr, valueExpr, context)));
  const field = fieldOf(fieldExpr, context);
  const values = valueExprs.map(literal);
  if (valueExprs.length < 2 || !field || (field.kind === 'column' && field.column === 'timestamp')) return one();
  if (values.some((value) => value === undefined)) return one();
  const kinds = new Set(values.map((value) => typeof value));
  if (kinds.size !== 1) return undefined;
  const kind = [...kinds][0];
  return onField(
    field,
    (name, type) => {
      const comparable = kind === 'number' ? type !== undefined && NUMERIC_FIELD_TYPES.has(type) : kind === 'boolean' ? type === 'boolean' : type === 'keyword';
      return comparable ? { terms: { [name]: values as estypes.FieldValue[] } } : undefined;
    },
    context,
  );
}

function timestampComparison(op: Operator, bound: string): PushedPredicate | undefined {
  if (op === '!=') return { query: { bool: { must_not: [{ term: { timestamp: bound } }] } }, exact: true };
  if (op === '=') return { query: { term: { timestamp: bound } }, exact: true };
  return { query: { range: { timestamp: { [RANGE_KEY[op]!]: bound } } }, exact: true };
}

function stringMatch(target: Expr, patternExpr: Expr, kind: 'like' | 'regexp' | 'prefix', context: PredicateContext): PushedPredicate | undefined {
  const field = fieldOf(target, context);
  const pattern = literal(patternExpr);
  if (!field || typeof pattern !== 'string') return undefined;
  let leaf: (name: string) => Query;
  if (kind === 'regexp') {
    let lucene: string;
    try {
      lucene = luceneRegexpForContains(pattern, 'sql');
    } catch {
      // a construct Lucene cannot express: the engine evaluates it, the store does not filter
      return undefined;
    }
    leaf = (name) => regexpQuery(name, lucene, { parameter: 'sql', pattern });
  } else if (kind === 'prefix') {
    leaf = (name) => ({ prefix: { [name]: { value: pattern } } });
  } else {
    const wildcard = likeToWildcard(pattern);
    leaf = (name) => ({ wildcard: { [name]: { value: wildcard } } });
  }
  return onField(field, (name, type) => (type === 'keyword' ? leaf(name) : undefined), context);
}

/** The most integers a CAST of text is compared with that are sent to the store as their digits; beyond, nothing is pushed. */
const MAX_INTEGER_TEXTS = 1024;

/**
 * `CAST(field AS INT64)` equal to one of `values`, on a keyword field, as a superset filter: the
 * engine reads text of decimal or hexadecimal digits with an optional sign, so text it reads as one
 * of them is that value's own digits, or starts with a sign or a 0 (leading zeros, hexadecimal). The
 * rows are checked exactly after the store (by the service or the engine).
 */
function integerTextIn(target: Expr, values: number[] | undefined, context: PredicateContext): PushedPredicate | undefined {
  if (values === undefined || values.length === 0 || values.length > MAX_INTEGER_TEXTS) return undefined;
  if (target.kind !== 'cast' || target.safe || target.type !== 'INT64' || target.expr.kind !== 'identifier') return undefined;
  const field = context.scope.resolve(target.expr);
  if (field?.kind !== 'metadata') return undefined;
  const digits = values.map(String);
  const otherForms = (name: string): Query[] => ['+', '-', '0'].map((start) => ({ prefix: { [name]: { value: start } } }));
  return onField(
    field,
    (name, type) => (type === 'keyword' ? { bool: { should: [{ terms: { [name]: digits } }, ...otherForms(name)], minimum_should_match: 1 } } : undefined),
    context,
  );
}

/** The integers from one integer literal to another, when they are few enough to list. */
function integerRange(lowExpr: Expr, highExpr: Expr): number[] | undefined {
  const low = literal(lowExpr);
  const high = literal(highExpr);
  if (!Number.isSafeInteger(low) || !Number.isSafeInteger(high)) return undefined;
  const count = (high as number) - (low as number) + 1;
  if (count > MAX_INTEGER_TEXTS) return undefined;
  return Array.from({ length: Math.max(0, count) }, (_, offset) => (low as number) + offset);
}

/** Integer literals, all of them, or undefined. */
function integerList(exprs: readonly Expr[]): number[] | undefined {
  const values = exprs.map(literal);
  return values.every((value) => Number.isSafeInteger(value)) ? (values as number[]) : undefined;
}

/** SQL LIKE (% any run, _ one character, backslash escapes) as an Elasticsearch wildcard pattern. */
export function likeToWildcard(pattern: string): string {
  let out = '';
  for (let i = 0; i < pattern.length; i += 1) {
    const c = pattern[i]!;
    if (c === '\\' && i + 1 < pattern.length) {
      out += escapeWildcardChar(pattern[++i]!);
    } else if (c === '%') out += '*';
    else if (c === '_') out += '?';
    else out += escapeWildcardChar(c);
  }
  return out;
}

function escapeWildcardChar(c: string): string {
  return c === '*' || c === '?' || c === '\\' ? `\\${c}` : c;
}

/**
 * Applies a leaf filter to the store field behind a reference: the keyword of event_message, or a
 * metadata path (inside `nested` queries where the mapping nests it). Keyword values too long to
 * index are recorded in `_ignored` and always pass.
 */
function onField(
  field: FieldReference,
  leaf: (name: string, type: string | undefined) => Query | undefined,
  context: PredicateContext,
  existence = false,
): PushedPredicate | undefined {
  if (field.kind === 'column') {
    if (field.column === 'metadata' || field.column === 'timestamp') return undefined;
    if (field.column === 'event_message') {
      if (existence) return { query: { exists: { field: 'event_message' } }, exact: true };
      const keyword = exactTextField(field.column);
      const query = leaf(keyword, 'keyword');
      return query ? withIgnored(query, keyword) : undefined;
    }
    const query = leaf(field.column, 'keyword');
    return query ? { query, exact: true } : undefined;
  }
  const type = context.catalog.typeOf(field.path);
  if (type === undefined || type === 'conflict' || type === 'text') return undefined;
  const query = existence ? (type === 'object' || type === 'nested' ? undefined : { exists: { field: field.path } }) : leaf(field.path, type);
  if (!query) return undefined;
  const wrapped = inNestedRecords(field.path, existence || type !== 'keyword' ? query : withIgnored(query, field.path).query, context.catalog);
  return { query: wrapped, exact: false };
}

function withIgnored(query: Query, field: string): PushedPredicate {
  return { query: { bool: { should: [query, { term: { _ignored: field } }], minimum_should_match: 1 } }, exact: false };
}

function fieldOf(expr: Expr, context: PredicateContext): FieldReference | undefined {
  if (expr.kind === 'identifier') return context.scope.resolve(expr);
  // a cast to the type the field already has compares the same way in the store
  if (expr.kind === 'cast' && !expr.safe && (expr.type === 'INT64' || expr.type === 'FLOAT64')) {
    const inner = fieldOf(expr.expr, context);
    if (inner?.kind === 'metadata' && NUMERIC_FIELD_TYPES.has(context.catalog.typeOf(inner.path) ?? '')) return inner;
  }
  return undefined;
}

function literal(expr: Expr): string | number | boolean | undefined {
  if (expr.kind === 'string') return expr.value;
  if (expr.kind === 'boolean') return expr.value;
  if (expr.kind === 'number') {
    const value = Number(expr.text);
    return Number.isFinite(value) && (Number.isSafeInteger(value) || !/^-?\d+$/.test(expr.text)) ? value : undefined;
  }
  if (expr.kind === 'unary' && expr.operator === '-' && expr.operand.kind === 'number') {
    const value = literal(expr.operand);
    return typeof value === 'number' ? -value : undefined;
  }
  return undefined;
}

const INTERVAL_MS: Partial<Record<string, number>> = { millisecond: 1, second: 1000, minute: 60_000, hour: 3_600_000, day: 86_400_000 };

/** A constant timestamp expression (ISO text, current_timestamp() plus or minus an interval) in the stored nine-digit form. */
export function timestampConstant(expr: Expr, now: number): string | undefined {
  if (expr.kind === 'string' || (expr.kind === 'typed_literal' && expr.type === 'TIMESTAMP')) {
    const bound = isoToNanosText(
      expr.value
        .trim()
        .replace(' ', 'T')
        .replace(/\s*UTC$/i, 'Z')
        .replace(/\+00$/, 'Z'),
    );
    return bound === undefined ? undefined : clampToDateNanos(bound);
  }
  if (expr.kind === 'cast' && expr.type === 'TIMESTAMP') return timestampConstant(expr.expr, now);
  if (expr.kind !== 'call' || pushdownOf(expr) !== 'time_constant') return undefined;
  if (expr.name === 'current_timestamp' && expr.args.length === 0) return nanosTextFromMillis(now);
  if ((expr.name === 'timestamp_sub' || expr.name === 'timestamp_add') && expr.args.length === 2) {
    const base = timestampConstant(expr.args[0]!, now);
    const interval = expr.args[1]!;
    if (base === undefined || interval.kind !== 'interval' || interval.value.kind !== 'number') return undefined;
    const unitMs = INTERVAL_MS[interval.unit];
    const amount = Number(interval.value.text);
    const baseMillis = millisFromNanosText(base, 'exact');
    if (unitMs === undefined || !Number.isInteger(amount) || baseMillis === undefined) return undefined;
    const millis = baseMillis + (expr.name === 'timestamp_sub' ? -1 : 1) * amount * unitMs;
    return Number.isFinite(millis) ? clampToDateNanos(nanosTextFromMillis(millis)) : undefined;
  }
  return undefined;
}

/**
 * A condition in SQL's three-valued logic as two filters: the events on which it is TRUE and those
 * on which it is FALSE (the rest are NULL). Exact for events whose record arrays hold at most one
 * element and whose values were all indexed (the aggregation pushdown checks both); `paths` are
 * the metadata paths it reads, which must not be multi-valued either. `unsure`, only where asked
 * for (TruthOptions): the events on which the store cannot tell, because the engine's value may be
 * any of the three or an error (a CAST of text); they are in neither `whenTrue` nor `whenFalse`.
 */
export interface Truth {
  whenTrue: Query;
  whenFalse: Query;
  paths: string[];
  unsure?: Query;
}

/** `unsureCasts`: a CAST of text to INT64 compared with integers is a truth with an `unsure` part (record filters read those events whole). */
export interface TruthOptions {
  unsureCasts?: boolean;
}

const MATCH_ALL: Query = { match_all: {} };
const MATCH_NONE: Query = { match_none: {} };

function not(query: Query): Query {
  return { bool: { must_not: [query] } };
}

function negated(truth: Truth): Truth {
  return { ...truth, whenTrue: truth.whenFalse, whenFalse: truth.whenTrue };
}

export function truthOf(expr: Expr, context: PredicateContext, options: TruthOptions = {}): Truth | undefined {
  switch (expr.kind) {
    case 'boolean':
      return { whenTrue: expr.value ? MATCH_ALL : MATCH_NONE, whenFalse: expr.value ? MATCH_NONE : MATCH_ALL, paths: [] };
    case 'binary': {
      if (expr.operator === 'and')
        return combinedTruth(
          'and',
          conjuncts(expr).map((conjunct) => truthOf(conjunct, context, options)),
        );
      if (expr.operator === 'or')
        return combinedTruth(
          'or',
          equalitiesAsLists(operands(expr, 'or'), context).map((disjunct) => truthOf(disjunct, context, options)),
        );
      if (expr.operator === '=' && options.unsureCasts) {
        const cast = castTruth(expr.left, integerList([expr.right]), context) ?? castTruth(expr.right, integerList([expr.left]), context);
        if (cast) return cast;
      }
      return leafTruth(expr.operator, expr.left, expr.right, context);
    }
    case 'unary': {
      if (expr.operator !== 'not') return undefined;
      const inner = truthOf(expr.operand, context, options);
      return inner && negated(inner);
    }
    case 'between': {
      const cast = options.unsureCasts ? castTruth(expr.expr, integerRange(expr.low, expr.high), context) : undefined;
      const range =
        cast ??
        truthOf(
          {
            kind: 'binary',
            operator: 'and',
            left: { kind: 'binary', operator: '>=', left: expr.expr, right: expr.low },
            right: { kind: 'binary', operator: '<=', left: expr.expr, right: expr.high },
          },
          context,
          options,
        );
      return range && expr.negated ? negated(range) : range;
    }
    case 'in_list': {
      const truth = (options.unsureCasts ? castTruth(expr.expr, integerList(expr.list), context) : undefined) ?? listTruth(expr.expr, expr.list, context);
      return truth && expr.negated ? negated(truth) : truth;
    }
    case 'is': {
      if (expr.test !== 'null') return undefined;
      const field = exactField(expr.expr, context);
      if (!field) return undefined;
      const exists = field.exists;
      return expr.negated ? { whenTrue: exists, whenFalse: not(exists), paths: field.paths } : { whenTrue: not(exists), whenFalse: exists, paths: field.paths };
    }
    case 'like': {
      const match = stringMatch(expr.expr, expr.pattern, 'like', context);
      return match && stringTruth(expr.expr, match, expr.negated, context);
    }
    case 'call': {
      const match = callMatch(expr, context);
      return match && stringTruth(expr.args[0]!, match, false, context);
    }
    default:
      return undefined;
  }
}

/**
 * Text the engine's CAST to INT64 reads without error, as its own digits, and the service reads
 * exactly (finish-conditions.ts): a positive decimal without sign or leading zero, of at most 15 digits.
 */
const CANONICAL_POSITIVE_INTEGER = '[1-9][0-9]{0,14}';

/**
 * `CAST(field AS INT64)` equal to one of `values` (all positive), on a single-valued keyword field:
 * TRUE where the text is one of their digits, FALSE where it is other canonical digits, and unsure
 * anywhere else the field has a value (a sign, leading zeros, hexadecimal, or text the cast refuses).
 */
function castTruth(target: Expr, values: number[] | undefined, context: PredicateContext): Truth | undefined {
  if (values === undefined || values.length === 0 || values.length > MAX_INTEGER_TEXTS || values.some((value) => value <= 0)) return undefined;
  if (target.kind !== 'cast' || target.safe || target.type !== 'INT64' || target.expr.kind !== 'identifier') return undefined;
  const reference = context.scope.resolve(target.expr);
  const field = reference?.kind === 'metadata' ? exactField(target.expr, context) : undefined;
  if (reference?.kind !== 'metadata' || !field || context.catalog.typeOf(reference.path) !== 'keyword') return undefined;
  const inRecords = (query: Query) => inNestedRecords(reference.path, query, context.catalog);
  const listed = inRecords({ terms: { [reference.path]: values.map(String) } });
  const canonical = inRecords({ regexp: { [reference.path]: { value: CANONICAL_POSITIVE_INTEGER, flags: 'NONE' } } });
  return {
    whenTrue: listed,
    whenFalse: { bool: { filter: [canonical], must_not: [listed] } },
    unsure: { bool: { filter: [field.exists], must_not: [canonical] } },
    paths: field.paths,
  };
}

/** A pattern match's truth: the superset filter without its `_ignored` escape hatch, FALSE where the field has another value. */
function stringTruth(target: Expr, match: PushedPredicate, negated: boolean, context: PredicateContext): Truth | undefined {
  const field = exactField(target, context);
  if (!field) return undefined;
  const whenTrue = withoutIgnored(match.query);
  const whenFalse: Query = { bool: { filter: [field.exists], must_not: [whenTrue] } };
  return negated ? { whenTrue: whenFalse, whenFalse: whenTrue, paths: field.paths } : { whenTrue, whenFalse, paths: field.paths };
}

function withoutIgnored(query: Query): Query {
  const should = query.bool?.should;
  if (Array.isArray(should) && should.length === 2 && JSON.stringify(should[1]).startsWith('{"term":{"_ignored"')) return should[0]!;
  if (query.nested) return { nested: { ...query.nested, query: withoutIgnored(query.nested.query) } };
  return query;
}

/** The exists filter of a single-valued field (a column, or a metadata path through unnests). */
function exactField(expr: Expr, context: PredicateContext): { exists: Query; paths: string[] } | undefined {
  const field = fieldOf(expr, context);
  if (!field) return undefined;
  if (field.kind === 'column') {
    if (field.column === 'metadata') return undefined;
    return { exists: ALWAYS_PRESENT_COLUMNS.has(field.column) ? MATCH_ALL : { exists: { field: field.column } }, paths: [] };
  }
  const type = context.catalog.typeOf(field.path);
  if (type === undefined || type === 'object' || type === 'nested' || type === 'conflict' || type === 'text') return undefined;
  return { exists: inNestedRecords(field.path, { exists: { field: field.path } }, context.catalog), paths: [field.path] };
}

/**
 * AND or OR of several truths, each side one flat bool: AND is true when all are, false when any is;
 * OR the reverse. An event unsure for one part is unsure for the whole, and in neither side: the
 * engine may evaluate every part, so a part that may fail decides even where another settles the truth.
 */
function combinedTruth(operator: 'and' | 'or', truths: readonly (Truth | undefined)[]): Truth | undefined {
  if (truths.length === 0 || truths.some((truth) => truth === undefined)) return undefined;
  const parts = truths as Truth[];
  if (parts.length === 1) return parts[0];
  const all = (queries: Query[]): Query => ({ bool: { filter: queries } });
  const any = (queries: Query[]): Query => ({ bool: { should: queries, minimum_should_match: 1 } });
  const unsures = parts.flatMap((part) => (part.unsure ? [part.unsure] : []));
  const unsure = unsures.length === 0 ? undefined : unsures.length === 1 ? unsures[0]! : any(unsures);
  const sure = (query: Query): Query => (unsure ? { bool: { filter: [query], must_not: [unsure] } } : query);
  const whenTrue = parts.map((part) => part.whenTrue);
  const whenFalse = parts.map((part) => part.whenFalse);
  const paths = parts.flatMap((part) => part.paths);
  const [truthy, falsy] = operator === 'and' ? [all(whenTrue), any(whenFalse)] : [any(whenTrue), all(whenFalse)];
  return { whenTrue: sure(truthy), whenFalse: sure(falsy), paths, ...(unsure ? { unsure } : {}) };
}

/** `field IN (values)` over a single-valued field: true where one value matches (one `terms`), false where the field has another value. */
function listTruth(fieldExpr: Expr, valueExprs: readonly Expr[], context: PredicateContext): Truth | undefined {
  if (valueExprs.length === 0) return undefined;
  const field = exactField(fieldExpr, context);
  const equal = field && valueExprs.length > 1 ? equalsAny(fieldExpr, valueExprs, context) : undefined;
  if (!field || !equal)
    return combinedTruth(
      'or',
      valueExprs.map((valueExpr) => leafTruth('=', fieldExpr, valueExpr, context)),
    );
  const positive = withoutIgnored(equal.query);
  return { whenTrue: positive, whenFalse: { bool: { filter: [field.exists], must_not: [positive] } }, paths: field.paths };
}

function leafTruth(operator: string, left: Expr, right: Expr, context: PredicateContext): Truth | undefined {
  if (!(operator in FLIPPED)) return undefined;
  const fieldSide = exactField(left, context) ? left : exactField(right, context) ? right : undefined;
  if (!fieldSide) return undefined;
  const field = exactField(fieldSide, context)!;
  const equal = operator === '!=' ? comparison('=', left, right, context) : comparison(operator, left, right, context);
  if (!equal) return undefined;
  const positive = withoutIgnored(equal.query);
  const other: Query = { bool: { filter: [field.exists], must_not: [positive] } };
  return operator === '!=' ? { whenTrue: other, whenFalse: positive, paths: field.paths } : { whenTrue: positive, whenFalse: other, paths: field.paths };
}
