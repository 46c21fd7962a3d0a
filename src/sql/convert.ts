/**
 * From the parser's JSON tree (sqlparser-rs 0.62, serde's externally tagged enums: a variant is
 * `"Tag"` or `{"Tag": payload}`) to the sandbox's own tree (syntax.ts).
 *
 * Fail closed: every parser node is read through `fields()`, which refuses any field it was not
 * told about unless that field is empty. So a construct this file does not know, including one a
 * newer parser version adds, is refused with its name and position instead of being dropped.
 */
import { InvalidQuery, SandboxViolation, SqlSyntax, type QueryPosition } from '../errors.ts';
import { sandboxFunction } from './functions.ts';
import { groupByAllKeys } from './group-by-all.ts';
import type {
  BinaryOperator,
  CastType,
  CommonTableExpression,
  DatePart,
  Expr,
  FrameBound,
  FromItem,
  Join,
  OrderItem,
  Position,
  Query,
  Relation,
  Select,
  SelectItem,
  SetExpression,
  SetOperation,
  WindowFrame,
  WindowSpec,
  Weekday,
} from './syntax.ts';

type Node = Record<string, unknown>;

/** The refusal every statement other than one query gets; the reference says "Only SELECT queries allowed". */
export const ONLY_SELECT = 'only a single SELECT query is allowed';

/** Converts the parser's statements; anything but exactly one query is refused. */
export function convertStatements(statements: readonly unknown[]): Query {
  // only comments or a semicolon: the reference's wording
  if (statements.length === 0) throw new InvalidQuery('Query cannot be empty');
  if (statements.length > 1) {
    throw new SandboxViolation(`${ONLY_SELECT}; the text holds ${statements.length} statements`, positionOf(statements[1]));
  }
  const [kind, payload] = variant(statements[0], 'statement');
  if (kind !== 'Query') throw new SandboxViolation(`${ONLY_SELECT}, not ${describeStatement(kind)}`, positionOf(payload));
  return convertQuery(payload);
}

function describeStatement(kind: string): string {
  return kind.replace(/([a-z])([A-Z])/g, '$1 $2').toUpperCase();
}

// ---- reading the parser's JSON ----

/** Values that mean "not written": the parser's defaults. */
function isAbsent(value: unknown): boolean {
  return value === null || value === undefined || value === false || value === 'None' || (Array.isArray(value) && value.length === 0);
}

/** Fields that carry only tokens and positions. */
const LAYOUT_FIELDS = new Set([
  'span',
  'select_token',
  'with_token',
  'closing_paren_token',
  'case_token',
  'end_token',
  'wildcard_token',
  'explicit',
  'quote_style',
]);

/** How the SQL spells the parser's fields, for the refusal message. */
const FIELD_CONSTRUCTS: Record<string, string> = {
  sample: 'TABLESAMPLE',
  locks: 'FOR UPDATE',
  pipe_operators: 'pipe syntax (|>)',
  named_window: 'a named window (WINDOW w AS ...)',
  into: 'SELECT INTO',
  version: 'FOR SYSTEM_TIME AS OF',
  args: 'a table function (only UNNEST)',
  lateral: 'LATERAL',
  recursive: 'WITH RECURSIVE',
  value_table_mode: 'SELECT AS STRUCT / AS VALUE',
  top: 'TOP',
  fetch: 'FETCH',
  opt_replace: 'REPLACE on a wildcard',
  opt_exclude: 'EXCLUDE on a wildcard',
  opt_rename: 'RENAME on a wildcard',
  opt_ilike: 'ILIKE on a wildcard',
  escape_char: 'LIKE ... ESCAPE',
  any: 'LIKE ANY',
  format: 'CAST ... FORMAT',
  filter: 'FILTER (WHERE ...)',
  within_group: 'WITHIN GROUP',
  columns: 'column names on an alias',
  materialized: 'MATERIALIZED',
  with_ordinality: 'WITH ORDINALITY',
  fields: 'a typed STRUCT<...>',
  last_field: 'an INTERVAL range (.. TO ..)',
};

/** The node as an object whose fields other than `known` are all absent. */
function fields(node: unknown, known: readonly string[], construct: string): Node {
  if (!isNode(node)) throw unsupported(construct, node);
  for (const [name, value] of Object.entries(node)) {
    if (!known.includes(name) && !LAYOUT_FIELDS.has(name) && !isAbsent(value)) {
      throw unsupported(FIELD_CONSTRUCTS[name] ?? `${construct} with ${name.replace(/_/g, ' ')}`, node);
    }
  }
  return node;
}

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An enum value: `"Tag"` or `{"Tag": payload}`. */
function variant(value: unknown, construct: string): [string, unknown] {
  if (typeof value === 'string') return [value, undefined];
  if (isNode(value)) {
    const keys = Object.keys(value);
    if (keys.length === 1) return [keys[0]!, value[keys[0]!]];
  }
  throw unsupported(construct, value);
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function unsupported(construct: string, node: unknown): SandboxViolation {
  return new SandboxViolation(`${construct} is not allowed in a sandboxed query`, positionOf(node));
}

/** The first position recorded in the node or below it (the parser puts spans on tokens and names). */
function positionOf(node: unknown, depth = 0): Position | undefined {
  if (depth > 64 || typeof node !== 'object' || node === null) return undefined;
  if (isNode(node)) {
    const start = isNode(node.span) && isNode(node.span.start) ? node.span.start : undefined;
    if (start && typeof start.line === 'number' && typeof start.column === 'number' && start.line > 0) {
      return { line: start.line, column: start.column };
    }
  }
  for (const child of Array.isArray(node) ? node : Object.values(node)) {
    const found = positionOf(child, depth + 1);
    if (found) return found;
  }
  return undefined;
}

function at(node: unknown): { position?: Position } {
  const position = positionOf(node);
  return position ? { position } : {};
}

interface Ident {
  value: string;
  quoted: boolean;
  position?: QueryPosition;
}

function ident(node: unknown): Ident {
  const raw = fields(node, ['value'], 'identifier');
  if (typeof raw.value !== 'string') throw unsupported('identifier', node);
  if (raw.quote_style === '"') throw new SqlSyntax(`"${raw.value}" is a string in BigQuery; quote names with backquotes`, positionOf(raw));
  return { value: raw.value, quoted: typeof raw.quote_style === 'string', ...at(raw) };
}

/** BigQuery's reserved keywords: never a name unless backquoted. */
const RESERVED_KEYWORDS = new Set(
  (
    'all and any array as asc assert_rows_modified at between by case cast collate contains create cross cube current default define desc ' +
    'distinct else end enum escape except exclude exists extract false fetch following for from full group grouping groups hash having if ' +
    'ignore in inner intersect interval into is join lateral left like limit lookup merge natural new no not null nulls of on or order outer ' +
    'over partition preceding proto qualify range recursive respect right rollup rows select set some struct tablesample then to treat true ' +
    'unbounded union unnest using when where window with within'
  ).split(' '),
);

/**
 * Refuses an unquoted reserved keyword used as a name. The parser falls back to reading a keyword
 * as a name when it gives up on a construct (70 nested CASEs end in a column called `case`).
 */
function checkNotReserved(part: Ident): void {
  if (!part.quoted && RESERVED_KEYWORDS.has(part.value.toLowerCase())) {
    throw new SqlSyntax(`${part.value} is a reserved keyword; quote it with backquotes to use it as a name`, part.position);
  }
}

/** An object name (`a`, `a.b.c`, `` `a.b` ``): its parts. */
function objectName(node: unknown, construct: string): Ident[] {
  const parts = list(node).map((part) => {
    const [kind, payload] = variant(part, construct);
    if (kind !== 'Identifier') throw unsupported(construct, part);
    return ident(payload);
  });
  if (parts.length === 0) throw unsupported(construct, node);
  return parts;
}

// ---- queries ----

function convertQuery(node: unknown): Query {
  const raw = fields(node, ['with', 'body', 'order_by', 'limit_clause'], 'query');
  const query: Query = {
    kind: 'query',
    with: raw.with === null || raw.with === undefined ? [] : convertWith(raw.with),
    body: convertSetExpression(raw.body),
    orderBy: raw.order_by === null || raw.order_by === undefined ? [] : convertOrderBy(raw.order_by),
    ...at(raw.body),
  };
  if (raw.limit_clause !== null && raw.limit_clause !== undefined) {
    const [kind, payload] = variant(raw.limit_clause, 'LIMIT clause');
    if (kind !== 'LimitOffset') throw unsupported('LIMIT offset, count', raw.limit_clause);
    const limit = fields(payload, ['limit', 'offset'], 'LIMIT clause');
    if (limit.limit !== null && limit.limit !== undefined) query.limit = convertExpr(limit.limit);
    if (limit.offset !== null && limit.offset !== undefined) query.offset = convertExpr(fields(limit.offset, ['value'], 'OFFSET').value);
  }
  return query;
}

function convertWith(node: unknown): CommonTableExpression[] {
  const raw = fields(node, ['cte_tables'], 'WITH clause');
  return list(raw.cte_tables).map((cte) => {
    const table = fields(cte, ['alias', 'query'], 'common table expression');
    const name = ident(fields(table.alias, ['name'], 'common table expression name').name);
    return { name: name.value, query: convertQuery(table.query), ...(name.position ? { position: name.position } : {}) };
  });
}

function convertSetExpression(node: unknown): SetExpression {
  const [kind, payload] = variant(node, 'query body');
  switch (kind) {
    case 'Select':
      return convertSelect(payload);
    case 'Query':
      return { kind: 'nested_query', query: convertQuery(payload) };
    case 'SetOperation': {
      const raw = fields(payload, ['left', 'op', 'set_quantifier', 'right'], 'set operation');
      return { kind: 'set_operation', operator: setOperator(raw), left: convertSetExpression(raw.left), right: convertSetExpression(raw.right) };
    }
    case 'Values':
      throw unsupported('VALUES', payload);
    default:
      throw new SandboxViolation(`${ONLY_SELECT}, not ${describeStatement(kind)}`, positionOf(payload));
  }
}

function setOperator(raw: Node): SetOperation['operator'] {
  const all = raw.set_quantifier === 'All';
  if (!all && raw.set_quantifier !== 'Distinct' && raw.set_quantifier !== 'None') {
    throw unsupported(`${describeStatement(String(raw.op))} ${describeStatement(String(raw.set_quantifier))}`, raw);
  }
  if (raw.op === 'Union') return all ? 'union_all' : 'union_distinct';
  if (raw.op === 'Intersect' && !all) return 'intersect_distinct';
  if (raw.op === 'Except' && !all) return 'except_distinct';
  throw unsupported(`${String(raw.op).toUpperCase()}${all ? ' ALL' : ''}`, raw);
}

function convertSelect(node: unknown): Select {
  const raw = fields(node, ['distinct', 'projection', 'from', 'selection', 'group_by', 'having', 'qualify', 'flavor'], 'SELECT');
  if (raw.flavor !== undefined && raw.flavor !== 'Standard') throw unsupported('FROM-first SELECT', raw);
  const items = list(raw.projection).map(convertSelectItem);
  const position = at(raw.select_token);
  const select: Select = {
    kind: 'select',
    distinct: convertDistinct(raw.distinct),
    items,
    from: list(raw.from).map(convertFromItem),
    groupBy: [],
    ...position,
  };
  Object.assign(select, convertGroupBy(raw.group_by, items, position.position));
  if (!isAbsent(raw.selection)) select.where = convertExpr(raw.selection);
  if (!isAbsent(raw.having)) select.having = convertExpr(raw.having);
  if (!isAbsent(raw.qualify)) select.qualify = convertExpr(raw.qualify);
  return select;
}

function convertDistinct(node: unknown): boolean {
  if (isAbsent(node) || node === 'All') return false;
  if (node === 'Distinct') return true;
  throw unsupported('SELECT DISTINCT ON', node);
}

function convertGroupBy(node: unknown, items: readonly SelectItem[], position: Position | undefined): Pick<Select, 'groupBy' | 'rollup'> {
  if (isAbsent(node)) return { groupBy: [] };
  const [kind, payload] = variant(node, 'GROUP BY');
  if (kind !== 'Expressions' && kind !== 'All') throw unsupported(`GROUP BY ${kind}`, node);
  const [expressions, modifiers] = kind === 'All' ? [[], payload] : list(payload);
  if (!isAbsent(modifiers)) throw unsupported('GROUP BY modifiers (WITH ROLLUP, WITH CUBE, WITH TOTALS)', payload);
  if (kind === 'All') return { groupBy: groupByAllKeys(items, position) };
  const written = list(expressions);
  const rollups = written.filter((expr) => variant(expr, 'GROUP BY item')[0] === 'Rollup');
  if (rollups.length === 0) return { groupBy: written.map(convertExpr) };
  if (written.length > 1) throw unsupported('ROLLUP beside other GROUP BY items (write every key inside ROLLUP)', payload);
  const sets = list(variant(rollups[0], 'ROLLUP')[1]);
  return {
    groupBy: sets.map((set) => {
      const [only, ...rest] = list(set);
      if (only === undefined || rest.length > 0) throw unsupported('a parenthesised set of columns inside ROLLUP', set);
      return convertExpr(only);
    }),
    rollup: true,
  };
}

function convertSelectItem(node: unknown): SelectItem {
  const [kind, payload] = variant(node, 'select item');
  switch (kind) {
    case 'UnnamedExpr':
      return { kind: 'expression', expr: convertExpr(payload), ...at(payload) };
    case 'ExprWithAlias': {
      const raw = fields(payload, ['expr', 'alias'], 'select item');
      return { kind: 'expression', expr: convertExpr(raw.expr), alias: ident(raw.alias).value, ...at(raw) };
    }
    case 'Wildcard':
      return { kind: 'wildcard', except: wildcardExcept(payload), ...at(payload) };
    case 'QualifiedWildcard': {
      const [qualifier, options] = list(payload);
      const [qualifierKind, name] = variant(qualifier, 'qualified wildcard');
      if (qualifierKind !== 'ObjectName') throw unsupported('wildcard on an expression', qualifier);
      return { kind: 'wildcard', qualifier: objectName(name, 'wildcard qualifier').map((part) => part.value), except: wildcardExcept(options), ...at(name) };
    }
    default:
      throw unsupported(kind, payload);
  }
}

/** `* except (a, b)` is the only wildcard option BigQuery clients use; REPLACE and the rest are refused. */
function wildcardExcept(node: unknown): string[] {
  const options = fields(node, ['opt_except'], 'wildcard');
  if (isAbsent(options.opt_except)) return [];
  const except = fields(options.opt_except, ['first_element', 'additional_elements'], 'wildcard EXCEPT');
  return [except.first_element, ...list(except.additional_elements)].map((column) => ident(column).value);
}

// ---- FROM ----

function convertFromItem(node: unknown): FromItem {
  const raw = fields(node, ['relation', 'joins'], 'FROM item');
  return { relation: convertRelation(raw.relation), joins: list(raw.joins).map(convertJoin) };
}

function convertRelation(node: unknown): Relation {
  const [kind, payload] = variant(node, 'FROM item');
  switch (kind) {
    case 'Table': {
      const raw = fields(payload, ['name', 'alias'], 'table reference');
      const name = objectName(raw.name, 'table name');
      checkNotReserved(name[0]!);
      return { kind: 'table', name: name.map((part) => part.value), ...alias(raw.alias), ...at(raw.name) };
    }
    case 'UNNEST': {
      const raw = fields(payload, ['alias', 'array_exprs', 'with_offset', 'with_offset_alias'], 'UNNEST');
      const arrays = list(raw.array_exprs);
      if (arrays.length !== 1) throw unsupported('UNNEST of several arrays', raw);
      const relation: Relation = { kind: 'unnest', array: convertExpr(arrays[0]), withOffset: raw.with_offset === true, ...alias(raw.alias), ...at(raw) };
      if (!isAbsent(raw.with_offset_alias)) relation.offsetAlias = ident(raw.with_offset_alias).value;
      return relation;
    }
    case 'Derived': {
      const raw = fields(payload, ['subquery', 'alias'], 'subquery in FROM');
      return { kind: 'derived', query: convertQuery(raw.subquery), ...alias(raw.alias), ...at(raw.subquery) };
    }
    case 'NestedJoin': {
      const raw = fields(payload, ['table_with_joins', 'alias'], 'parenthesised join');
      return { kind: 'nested_join', item: convertFromItem(raw.table_with_joins), ...alias(raw.alias), ...at(raw) };
    }
    case 'Pivot':
    case 'Unpivot':
      throw unsupported(kind.toUpperCase(), payload);
    default:
      throw unsupported(`${kind.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase()} in FROM (only tables, UNNEST and subqueries)`, payload);
  }
}

function alias(node: unknown): { alias?: string } {
  if (isAbsent(node)) return {};
  const raw = fields(node, ['name'], 'alias');
  return { alias: ident(raw.name).value };
}

const JOIN_KINDS: Record<string, Join['kind']> = {
  CrossJoin: 'cross',
  Join: 'inner',
  Inner: 'inner',
  Left: 'left',
  LeftOuter: 'left',
  Right: 'right',
  RightOuter: 'right',
  FullOuter: 'full',
};

function convertJoin(node: unknown): Join {
  const raw = fields(node, ['relation', 'join_operator'], 'JOIN');
  const [operator, constraint] = variant(raw.join_operator, 'JOIN');
  const kind = JOIN_KINDS[operator];
  if (!kind) throw unsupported(`${operator.replace(/([a-z])([A-Z])/g, '$1 $2').toUpperCase()} JOIN`, raw);
  const join: Join = { kind, relation: convertRelation(raw.relation) };
  if (isAbsent(constraint)) return join;
  const [constraintKind, payload] = variant(constraint, 'JOIN condition');
  if (constraintKind === 'On') join.on = convertExpr(payload);
  else if (constraintKind === 'Using')
    join.using = list(payload).map((name) =>
      objectName(name, 'USING column')
        .map((part) => part.value)
        .join('.'),
    );
  else throw unsupported(`${constraintKind.toUpperCase()} JOIN`, raw);
  return join;
}

// ---- ORDER BY and windows ----

function convertOrderBy(node: unknown): OrderItem[] {
  const raw = fields(node, ['kind'], 'ORDER BY');
  const [kind, items] = variant(raw.kind, 'ORDER BY');
  if (kind !== 'Expressions') throw unsupported('ORDER BY ALL', node);
  return list(items).map(convertOrderItem);
}

function convertOrderItem(node: unknown): OrderItem {
  const raw = fields(node, ['expr', 'options'], 'ORDER BY item');
  const options = fields(raw.options, ['asc', 'nulls_first'], 'ORDER BY options');
  const item: OrderItem = { expr: convertExpr(raw.expr), descending: options.asc === false };
  if (typeof options.nulls_first === 'boolean') item.nulls = options.nulls_first ? 'first' : 'last';
  return item;
}

function convertWindow(node: unknown): WindowSpec {
  const [kind, payload] = variant(node, 'OVER clause');
  if (kind !== 'WindowSpec') throw unsupported('named window', node);
  const raw = fields(payload, ['partition_by', 'order_by', 'window_frame'], 'window specification');
  const spec: WindowSpec = { partitionBy: list(raw.partition_by).map(convertExpr), orderBy: list(raw.order_by).map(convertOrderItem) };
  if (!isAbsent(raw.window_frame)) spec.frame = convertFrame(raw.window_frame);
  return spec;
}

function convertFrame(node: unknown): WindowFrame {
  const raw = fields(node, ['units', 'start_bound', 'end_bound'], 'window frame');
  if (raw.units !== 'Rows' && raw.units !== 'Range') throw unsupported(`${String(raw.units).toUpperCase()} window frame`, node);
  const frame: WindowFrame = { units: raw.units === 'Rows' ? 'rows' : 'range', start: convertBound(raw.start_bound, 'preceding') };
  if (!isAbsent(raw.end_bound)) frame.end = convertBound(raw.end_bound, 'following');
  return frame;
}

function convertBound(node: unknown, unbounded: 'preceding' | 'following'): FrameBound {
  const [kind, offset] = variant(node, 'window frame bound');
  if (kind === 'CurrentRow') return { kind: 'current_row' };
  if (kind !== 'Preceding' && kind !== 'Following') throw unsupported('window frame bound', node);
  const direction = kind === 'Preceding' ? 'preceding' : 'following';
  if (isAbsent(offset)) {
    if (direction !== unbounded) throw unsupported(`UNBOUNDED ${direction.toUpperCase()} at this end of a frame`, node);
    return { kind: direction === 'preceding' ? 'unbounded_preceding' : 'unbounded_following' };
  }
  return { kind: direction, offset: convertExpr(offset) };
}

// ---- expressions ----

const BINARY_OPERATORS: Record<string, BinaryOperator> = {
  And: 'and',
  Or: 'or',
  Eq: '=',
  NotEq: '!=',
  Lt: '<',
  LtEq: '<=',
  Gt: '>',
  GtEq: '>=',
  Plus: '+',
  Minus: '-',
  Multiply: '*',
  Divide: '/',
  Modulo: '%',
  StringConcat: '||',
  BitwiseAnd: '&',
  BitwiseOr: '|',
  BitwiseXor: '^',
};

const UNARY_OPERATORS: Record<string, 'not' | '-' | '+' | '~'> = { Not: 'not', Minus: '-', Plus: '+', BitwiseNot: '~' };

const IS_TESTS: Record<string, { negated: boolean; test: 'null' | 'true' | 'false' }> = {
  IsNull: { negated: false, test: 'null' },
  IsNotNull: { negated: true, test: 'null' },
  IsTrue: { negated: false, test: 'true' },
  IsNotTrue: { negated: true, test: 'true' },
  IsFalse: { negated: false, test: 'false' },
  IsNotFalse: { negated: true, test: 'false' },
};

function convertExpr(node: unknown): Expr {
  const [kind, payload] = variant(node, 'expression');
  const position = at(payload);
  const is = IS_TESTS[kind];
  if (is) return { kind: 'is', ...is, expr: convertExpr(payload), ...position };
  switch (kind) {
    case 'Identifier':
      return identifierChain([ident(payload)]);
    case 'CompoundIdentifier':
      return identifierChain(list(payload).map(ident));
    case 'Value':
      return convertValue(payload);
    case 'TypedString':
      return convertTypedString(payload);
    case 'Nested':
      return convertExpr(payload);
    case 'BinaryOp': {
      const raw = fields(payload, ['left', 'op', 'right'], 'operator');
      const operator = BINARY_OPERATORS[String(raw.op)];
      if (!operator) throw unsupported(`operator ${String(raw.op)}`, raw);
      return { kind: 'binary', operator, left: convertExpr(raw.left), right: convertExpr(raw.right), ...position };
    }
    case 'IsDistinctFrom':
    case 'IsNotDistinctFrom': {
      const [left, right] = list(payload);
      const operator = kind === 'IsDistinctFrom' ? 'is distinct from' : 'is not distinct from';
      return { kind: 'binary', operator, left: convertExpr(left), right: convertExpr(right), ...position };
    }
    case 'UnaryOp': {
      const raw = fields(payload, ['op', 'expr'], 'operator');
      const operator = UNARY_OPERATORS[String(raw.op)];
      if (!operator) throw unsupported(`operator ${String(raw.op)}`, raw);
      return { kind: 'unary', operator, operand: convertExpr(raw.expr), ...position };
    }
    case 'Like': {
      const raw = fields(payload, ['negated', 'expr', 'pattern'], 'LIKE');
      return { kind: 'like', negated: raw.negated === true, expr: convertExpr(raw.expr), pattern: convertExpr(raw.pattern), ...position };
    }
    case 'Between': {
      const raw = fields(payload, ['expr', 'negated', 'low', 'high'], 'BETWEEN');
      return {
        kind: 'between',
        negated: raw.negated === true,
        expr: convertExpr(raw.expr),
        low: convertExpr(raw.low),
        high: convertExpr(raw.high),
        ...position,
      };
    }
    case 'InList': {
      const raw = fields(payload, ['expr', 'list', 'negated'], 'IN');
      return { kind: 'in_list', negated: raw.negated === true, expr: convertExpr(raw.expr), list: list(raw.list).map(convertExpr), ...position };
    }
    case 'InSubquery': {
      const raw = fields(payload, ['expr', 'subquery', 'negated'], 'IN (subquery)');
      return { kind: 'in_subquery', negated: raw.negated === true, expr: convertExpr(raw.expr), query: convertQuery(raw.subquery), ...position };
    }
    case 'InUnnest': {
      const raw = fields(payload, ['expr', 'array_expr', 'negated'], 'IN UNNEST');
      return { kind: 'in_unnest', negated: raw.negated === true, expr: convertExpr(raw.expr), array: convertExpr(raw.array_expr), ...position };
    }
    case 'Function':
      return convertFunction(payload);
    case 'Cast':
      return convertCast(payload);
    case 'Case': {
      const raw = fields(payload, ['operand', 'conditions', 'else_result'], 'CASE');
      const expr: Expr = {
        kind: 'case',
        whens: list(raw.conditions).map((branch) => {
          const when = fields(branch, ['condition', 'result'], 'CASE branch');
          return { when: convertExpr(when.condition), then: convertExpr(when.result) };
        }),
        ...position,
      };
      if (!isAbsent(raw.operand)) expr.operand = convertExpr(raw.operand);
      if (!isAbsent(raw.else_result)) expr.else = convertExpr(raw.else_result);
      return expr;
    }
    case 'Extract': {
      const raw = fields(payload, ['field', 'syntax', 'expr'], 'EXTRACT');
      if (raw.syntax !== 'From') throw unsupported('EXTRACT without FROM', raw);
      const part = dateTimeField(raw.field, raw);
      // EXTRACT(part FROM ts AT TIME ZONE 'zone'): the one place BigQuery takes AT TIME ZONE
      if (isNode(raw.expr) && 'AtTimeZone' in raw.expr) {
        const zoned = fields(raw.expr.AtTimeZone, ['timestamp', 'time_zone'], 'AT TIME ZONE');
        const zone = convertExpr(zoned.time_zone);
        if (zone.kind !== 'string') throw new InvalidQuery(`AT TIME ZONE takes a string literal such as 'America/Los_Angeles'`, positionOf(zoned.time_zone));
        return { kind: 'extract', part, expr: convertExpr(zoned.timestamp), timeZone: zone.value, ...position };
      }
      return { kind: 'extract', part, expr: convertExpr(raw.expr), ...position };
    }
    case 'Interval': {
      const raw = fields(payload, ['value', 'leading_field'], 'INTERVAL');
      if (isAbsent(raw.leading_field)) throw unsupported('INTERVAL without a unit', raw);
      return { kind: 'interval', value: convertExpr(raw.value), unit: dateTimeField(raw.leading_field, raw), ...position };
    }
    case 'Struct': {
      const raw = fields(payload, ['values'], 'STRUCT');
      return { kind: 'struct', fields: list(raw.values).map(structField), ...position };
    }
    case 'Array': {
      const raw = fields(payload, ['elem', 'named'], 'array');
      return { kind: 'array', elements: list(raw.elem).map(convertExpr), ...position };
    }
    case 'Subquery':
      return { kind: 'subquery', query: convertQuery(payload), ...position };
    case 'Exists': {
      const raw = fields(payload, ['subquery', 'negated'], 'EXISTS');
      return { kind: 'exists', negated: raw.negated === true, query: convertQuery(raw.subquery), ...position };
    }
    case 'CompoundFieldAccess':
      return convertFieldAccess(payload);
    case 'Trim': {
      // TRIM(x [, chars]) comes as its own node because of the SQL-standard TRIM(BOTH .. FROM ..).
      const raw = fields(payload, ['expr', 'trim_characters'], 'TRIM');
      return call('trim', [convertExpr(raw.expr), ...list(raw.trim_characters).map(convertExpr)], position);
    }
    case 'Substring': {
      const raw = fields(payload, ['expr', 'substring_from', 'substring_for', 'special', 'shorthand'], 'SUBSTRING');
      if (raw.special !== true) throw unsupported('SUBSTRING(x FROM n FOR m)', raw);
      const args = [raw.expr, raw.substring_from, raw.substring_for].filter((arg) => !isAbsent(arg)).map(convertExpr);
      return call(raw.shorthand === true ? 'substr' : 'substring', args, position);
    }
    case 'Ceil':
    case 'Floor': {
      const raw = fields(payload, ['expr', 'field'], kind.toUpperCase());
      if (!isNode(raw.field) || raw.field.DateTimeField !== 'NoDateTime') throw unsupported(`${kind.toUpperCase()} with a unit`, raw);
      return call(kind.toLowerCase(), [convertExpr(raw.expr)], position);
    }
    default:
      throw unsupported(describeExpression(kind), payload);
  }
}

function describeExpression(kind: string): string {
  const names: Record<string, string> = {
    Cast: 'CAST',
    AtTimeZone: 'AT TIME ZONE',
    Collate: 'COLLATE',
    ILike: 'ILIKE',
    RLike: 'RLIKE',
    SimilarTo: 'SIMILAR TO',
    Tuple: 'a tuple (a, b)',
    Cube: 'CUBE',
    GroupingSets: 'GROUPING SETS',
    Rollup: 'ROLLUP outside GROUP BY',
    Position: 'POSITION(.. IN ..)',
    Wildcard: '*',
    QualifiedWildcard: 't.*',
    Lambda: 'lambda',
    Prior: 'PRIOR',
    Named: 'named expression',
  };
  return names[kind] ?? `expression ${kind}`;
}

function call(name: string, args: Expr[], position: { position?: Position }): Expr {
  return { kind: 'call', name, args, star: false, distinct: false, ...position };
}

function identifierChain(parts: Ident[]): Expr {
  const [first, ...rest] = parts;
  if (!first) throw unsupported('empty identifier', parts);
  const position = first.position ? { position: first.position } : {};
  if (rest.some((part) => isParameterName(part))) throw unsupported('query parameter inside a path', parts);
  checkNotReserved(first);
  if (!isParameterName(first)) return { kind: 'identifier', path: parts.map((part) => part.value), ...position };
  if (first.value.startsWith('@@')) throw unsupported(`system variable ${first.value}`, parts);
  let expr: Expr = { kind: 'parameter', name: first.value.slice(1), ...position };
  for (const field of rest) expr = { kind: 'field', expr, field: field.value, ...position };
  return expr;
}

/** The parser returns `@name` as an unquoted identifier spelled with its `@`. */
function isParameterName(part: Ident): boolean {
  return !part.quoted && part.value.startsWith('@');
}

function structField(node: unknown): { expr: Expr; name?: string } {
  const [kind, payload] = variant(node, 'STRUCT field');
  if (kind !== 'Named') return { expr: convertExpr(node) };
  const raw = fields(payload, ['expr', 'name'], 'STRUCT field');
  return { expr: convertExpr(raw.expr), name: ident(raw.name).value };
}

function convertValue(node: unknown): Expr {
  const raw = fields(node, ['value'], 'literal');
  const position = at(raw);
  const [kind, value] = variant(raw.value, 'literal');
  switch (kind) {
    case 'Number': {
      const [text, long] = list(value);
      if (typeof text !== 'string' || long === true) throw unsupported('numeric literal', raw);
      return { kind: 'number', text, ...position };
    }
    // BigQuery reads double-quoted text as a string literal, as the parser's BigQuery dialect does.
    case 'SingleQuotedString':
    case 'DoubleQuotedString':
    case 'TripleSingleQuotedString':
    case 'TripleDoubleQuotedString':
    case 'SingleQuotedRawStringLiteral':
    case 'DoubleQuotedRawStringLiteral':
    case 'TripleSingleQuotedRawStringLiteral':
    case 'TripleDoubleQuotedRawStringLiteral':
      return { kind: 'string', value: String(value), ...position };
    case 'Boolean':
      return { kind: 'boolean', value: value === true, ...position };
    case 'Null':
      return { kind: 'null', ...position };
    case 'Placeholder':
      throw unsupported(`placeholder ${String(value)} (use @name parameters)`, raw);
    // the parser leaves a bytes literal's escapes as written (rb'..' does not reach here: it reads as a name)
    case 'SingleQuotedByteStringLiteral':
    case 'DoubleQuotedByteStringLiteral':
    case 'TripleSingleQuotedByteStringLiteral':
    case 'TripleDoubleQuotedByteStringLiteral':
      return { kind: 'typed_literal', type: 'BYTES', value: bytesLiteralHex(String(value), raw), ...position };
    default:
      throw unsupported(kind.includes('Byte') ? 'raw bytes literal' : `literal ${kind}`, raw);
  }
}

const SIMPLE_ESCAPES: Record<string, number> = { a: 7, b: 8, f: 12, n: 10, r: 13, t: 9, v: 11, '\\': 92, '?': 63, '"': 34, "'": 39, '`': 96 };

/** A bytes literal's bytes in hex: characters as UTF-8, escapes by BigQuery's lexical rules (which allow no \u in bytes). */
function bytesLiteralHex(text: string, context: unknown): string {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    if (text[i] !== '\\') {
      const codePoint = text.codePointAt(i)!;
      if (codePoint > 0xffff) i++;
      bytes.push(...Buffer.from(String.fromCodePoint(codePoint), 'utf8'));
      continue;
    }
    const escape = text[++i] ?? '';
    const simple = SIMPLE_ESCAPES[escape];
    const digits = text.slice(i, i + 3);
    if (simple !== undefined) {
      bytes.push(simple);
    } else if (/^[xX][0-9a-fA-F]{2}$/.test(digits)) {
      bytes.push(parseInt(digits.slice(1), 16));
      i += 2;
    } else if (/^[0-3][0-7]{2}$/.test(digits)) {
      bytes.push(parseInt(digits, 8));
      i += 2;
    } else {
      throw new InvalidQuery(`invalid escape sequence \\${escape} in a bytes literal`, positionOf(context));
    }
  }
  return Buffer.from(bytes).toString('hex');
}

const TYPED_LITERALS: Record<string, Extract<Expr, { kind: 'typed_literal' }>['type']> = {
  TIMESTAMP: 'TIMESTAMP',
  DATE: 'DATE',
  DATETIME: 'DATETIME',
  TIME: 'TIME',
  JSON: 'JSON',
  NUMERIC: 'NUMERIC',
};

function convertTypedString(node: unknown): Expr {
  const raw = fields(node, ['data_type', 'value'], 'typed literal');
  if (dataTypeName(raw.data_type, raw) === 'BIGNUMERIC') {
    const reason = "the engine's decimals hold at most 38 digits, NUMERIC's range; write NUMERIC '...'";
    throw new SandboxViolation(`BIGNUMERIC literals are not supported: ${reason}`, positionOf(raw));
  }
  const type = TYPED_LITERALS[dataTypeName(raw.data_type, raw)];
  if (!type) throw unsupported(`${dataTypeName(raw.data_type, raw)} literal`, raw);
  const literal = convertValue(raw.value);
  if (literal.kind !== 'string') throw unsupported(`${type} literal that is not a string`, raw);
  return { kind: 'typed_literal', type, value: literal.value, ...at(raw) };
}

/**
 * A data type's name, upper case. The parser writes most types as `"Int64"` but several as
 * `{"Datetime": null}`, `{"Timestamp": [null, "None"]}` or `{"String": null}` (precision, time
 * zone or length left out), which `JSON.stringify` of the JS object shows as `{}`.
 */
function dataTypeName(node: unknown, context: unknown): string {
  const [kind, parameters] = variant(node, 'data type');
  const written = Array.isArray(parameters) ? parameters : [parameters];
  // A precision, a length or WITH TIME ZONE: nothing BigQuery clients write in a cast.
  if (!written.every(isAbsent)) throw unsupported(`data type ${kind} with parameters`, context);
  return kind.toUpperCase();
}

const CAST_TYPES: Record<string, CastType> = {
  STRING: 'STRING',
  INT64: 'INT64',
  FLOAT64: 'FLOAT64',
  NUMERIC: 'NUMERIC',
  BIGNUMERIC: 'BIGNUMERIC',
  BOOL: 'BOOL',
  BOOLEAN: 'BOOL',
  BYTES: 'BYTES',
  DATE: 'DATE',
  DATETIME: 'DATETIME',
  TIME: 'TIME',
  TIMESTAMP: 'TIMESTAMP',
  JSON: 'JSON',
};

/**
 * `expr::type` is Postgres, written by dashboards built for self-hosted installs; it is read as
 * CAST(expr AS type) with Postgres's type names mapped to BigQuery's (keys without spaces).
 */
const DOUBLE_COLON_TYPES: Record<string, CastType> = {
  ...CAST_TYPES,
  TEXT: 'STRING',
  VARCHAR: 'STRING',
  CHARACTERVARYING: 'STRING',
  INT: 'INT64',
  INTEGER: 'INT64',
  BIGINT: 'INT64',
  SMALLINT: 'INT64',
  INT2: 'INT64',
  INT4: 'INT64',
  INT8: 'INT64',
  FLOAT: 'FLOAT64',
  FLOAT4: 'FLOAT64',
  FLOAT8: 'FLOAT64',
  REAL: 'FLOAT64',
  DOUBLE: 'FLOAT64',
  DOUBLEPRECISION: 'FLOAT64',
  DECIMAL: 'NUMERIC',
  TIMESTAMPTZ: 'TIMESTAMP',
  JSONB: 'JSON',
  BYTEA: 'BYTES',
};

function convertCast(node: unknown): Expr {
  const raw = fields(node, ['kind', 'expr', 'data_type'], 'CAST');
  if (raw.kind === 'DoubleColon') {
    return { kind: 'cast', safe: false, expr: convertExpr(raw.expr), type: doubleColonType(raw.data_type, raw), ...at(raw) };
  }
  if (raw.kind !== 'Cast' && raw.kind !== 'SafeCast') throw unsupported(`${String(raw.kind)}`, raw);
  const name = dataTypeName(raw.data_type, raw);
  const type = CAST_TYPES[name];
  if (!type) throw unsupported(`CAST to ${name}`, raw);
  return { kind: 'cast', safe: raw.kind === 'SafeCast', expr: convertExpr(raw.expr), type, ...at(raw) };
}

/** The BigQuery type of `::type`; a name it has no mapping for is a 400 naming it. */
function doubleColonType(node: unknown, context: unknown): CastType {
  const [kind, parameters] = variant(node, 'data type');
  let name = kind.toUpperCase();
  if (kind === 'Custom')
    name = objectName(list(parameters)[0], 'data type')
      .map((part) => part.value)
      .join('.')
      .toUpperCase();
  // `timestamp with time zone` and `timestamptz` are Postgres's TIMESTAMP
  else if (kind === 'Timestamp' && Array.isArray(parameters) && isAbsent(parameters[0])) name = 'TIMESTAMP';
  else dataTypeName(node, context);
  const type = DOUBLE_COLON_TYPES[name];
  if (!type) {
    const known = 'text, varchar, int, bigint, float, double precision, numeric, bool, timestamp, timestamptz, date, json, bytea or a BigQuery type';
    throw new InvalidQuery(`unknown type ${name.toLowerCase()} in a :: cast; use one of ${known}`, positionOf(context));
  }
  return type;
}

// ---- date parts ----

const DATE_PARTS: Record<string, DatePart> = {
  microsecond: 'microsecond',
  microseconds: 'microsecond',
  millisecond: 'millisecond',
  milliseconds: 'millisecond',
  second: 'second',
  minute: 'minute',
  hour: 'hour',
  day: 'day',
  dayofweek: 'dayofweek',
  dayofyear: 'dayofyear',
  week: 'week',
  isoweek: 'isoweek',
  month: 'month',
  quarter: 'quarter',
  year: 'year',
  isoyear: 'isoyear',
  date: 'date',
  time: 'time',
};

/** The parser's DateTimeField (EXTRACT, INTERVAL): `"Hour"`, `{"Week": null}`, `{"Custom": ident}`. */
function dateTimeField(node: unknown, context: unknown): DatePart {
  const [kind, payload] = variant(node, 'date part');
  if (kind === 'Custom') return datePart(ident(payload).value, context);
  if (kind === 'Week' && !isAbsent(payload)) return weekStartingOn(ident(payload).value, context);
  return datePart(kind, context);
}

function datePart(word: string, context: unknown): DatePart {
  const part = DATE_PARTS[word.toLowerCase()];
  if (!part) throw new InvalidQuery(`unknown date part ${word}; use one of ${Object.keys(DATE_PARTS).join(', ')}`, positionOf(context));
  return part;
}

/** WEEK(SUNDAY) is WEEK; weeks starting on other days have no place in the tree yet. */
const WEEKDAYS = new Set<Weekday>(['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday']);

/** WEEK(<weekday>): weeks starting on that day; WEEK(SUNDAY) is WEEK. */
function weekStartingOn(day: string, context: unknown): DatePart {
  const weekday = day.toLowerCase() as Weekday;
  if (!WEEKDAYS.has(weekday)) throw new InvalidQuery(`WEEK(${day}) needs a day of the week, such as WEEK(MONDAY)`, positionOf(context));
  return weekday === 'sunday' ? 'week' : `week(${weekday})`;
}

/** The bare-word unit argument of timestamp_trunc and friends: `hour`, `WEEK`, `week(sunday)`. */
function datePartArgument(functionName: string, index: number, node: unknown): Expr {
  const [kind, payload] = variant(node, 'date part');
  const position = at(payload);
  if (kind === 'Identifier') {
    const word = ident(payload);
    if (!word.quoted) return { kind: 'date_part', part: datePart(word.value, payload), ...position };
  }
  if (kind === 'Function') {
    const raw = fields(payload, ['name', 'args'], 'date part');
    const [name] = objectName(raw.name, 'date part');
    const [day] = functionArgs(raw.args, 'week').raw;
    const [dayKind, dayName] = day === undefined ? [] : variant(day, 'day of week');
    if (name?.value.toLowerCase() === 'week' && dayKind === 'Identifier') {
      return { kind: 'date_part', part: weekStartingOn(ident(dayName).value, payload), ...position };
    }
  }
  throw new InvalidQuery(`${functionName} expects a date part such as hour or day as argument ${index + 1}`, positionOf(node));
}

// ---- calls and subscripts ----

const SUBSCRIPT_MODES = new Set(['offset', 'safe_offset', 'ordinal', 'safe_ordinal']);

function convertFunction(node: unknown): Expr {
  const raw = fields(node, ['name', 'args', 'over', 'null_treatment'], 'function call');
  const parts = objectName(raw.name, 'function name');
  // Dotted names (`safe.x`, `net.host`, `` `proj.ds.fn` ``) are kept whole so the allow-list refuses them by name.
  const name = parts
    .map((part) => part.value)
    .join('.')
    .toLowerCase();
  const position = at(raw.name);
  if (name === 'array' && isNode(raw.args) && 'Subquery' in raw.args) {
    return { kind: 'array_subquery', query: convertQuery(raw.args.Subquery), ...position };
  }
  const args = functionArgs(raw.args, name);
  const datePartIndex = sandboxFunction(name)?.datePartArgument;
  const expr: Extract<Expr, { kind: 'call' }> = {
    kind: 'call',
    name,
    args: args.raw.map((arg, index) => (index === datePartIndex ? datePartArgument(name, index, arg) : convertExpr(arg))),
    star: args.star,
    distinct: args.distinct,
    ...position,
  };
  const ignoreNulls = args.ignoreNulls ?? nullTreatment(raw.null_treatment);
  if (ignoreNulls !== undefined) expr.ignoreNulls = ignoreNulls;
  if (args.orderBy) expr.orderBy = args.orderBy;
  if (args.limit) expr.limit = args.limit;
  if (!isAbsent(raw.over)) expr.over = convertWindow(raw.over);
  return expr;
}

interface FunctionArgs {
  /** The parser's argument expressions, not yet converted. */
  raw: unknown[];
  star: boolean;
  distinct: boolean;
  ignoreNulls?: boolean;
  orderBy?: OrderItem[];
  limit?: Expr;
}

function functionArgs(node: unknown, name: string): FunctionArgs {
  if (isAbsent(node)) return { raw: [], star: false, distinct: false };
  const [kind, payload] = variant(node, 'function arguments');
  if (kind !== 'List') throw unsupported(`${name}(subquery)`, payload);
  const raw = fields(payload, ['duplicate_treatment', 'args', 'clauses'], 'function arguments');
  const result: FunctionArgs = { raw: [], star: false, distinct: raw.duplicate_treatment === 'Distinct' };
  for (const arg of list(raw.args)) {
    const [argKind, argPayload] = variant(arg, 'function argument');
    if (argKind !== 'Unnamed') throw unsupported(`named argument in ${name}()`, arg);
    const [valueKind, value] = variant(argPayload, 'function argument');
    if (valueKind === 'Wildcard') result.star = true;
    else if (valueKind === 'Expr') result.raw.push(value);
    else throw unsupported(`${valueKind} as an argument of ${name}()`, arg);
  }
  if (result.star && result.raw.length > 0) throw unsupported(`* beside other arguments of ${name}()`, payload);
  for (const clause of list(raw.clauses)) {
    const [clauseKind, value] = variant(clause, 'function argument clause');
    if (clauseKind === 'OrderBy') result.orderBy = list(value).map(convertOrderItem);
    else if (clauseKind === 'Limit') result.limit = convertExpr(value);
    else if (clauseKind === 'IgnoreOrRespectNulls') result.ignoreNulls = nullTreatment(value);
    else throw unsupported(`${clauseKind.replace(/([a-z])([A-Z])/g, '$1 $2').toUpperCase()} inside ${name}()`, clause);
  }
  return result;
}

function nullTreatment(node: unknown): boolean | undefined {
  if (isAbsent(node)) return undefined;
  return node === 'IgnoreNulls';
}

/** `a.b[offset(0)].c`, `f(x)[offset(1)]`, `(expr).field`. */
function convertFieldAccess(node: unknown): Expr {
  const raw = fields(node, ['root', 'access_chain'], 'field access');
  let expr = convertExpr(raw.root);
  for (const access of list(raw.access_chain)) {
    const [kind, payload] = variant(access, 'field access');
    const position = at(payload);
    if (kind === 'Dot') {
      const [fieldKind, field] = variant(payload, 'field access');
      if (fieldKind !== 'Identifier') throw unsupported('field access by expression', payload);
      const name = ident(field).value;
      expr = expr.kind === 'identifier' ? { ...expr, path: [...expr.path, name] } : { kind: 'field', expr, field: name, ...position };
    } else if (kind === 'Subscript') {
      const [subscriptKind, subscript] = variant(payload, 'subscript');
      if (subscriptKind !== 'Index') throw unsupported('array slice', payload);
      expr = { kind: 'subscript', expr, ...subscriptIndex(fields(subscript, ['index'], 'subscript').index), ...position };
    } else {
      throw unsupported(`${kind} access`, payload);
    }
  }
  return expr;
}

/** `[OFFSET(n)]` and its kin; a bare `[n]` is OFFSET, as in BigQuery. */
function subscriptIndex(node: unknown): { mode: Extract<Expr, { kind: 'subscript' }>['mode']; index: Expr } {
  const [kind, payload] = variant(node, 'subscript');
  if (kind === 'Function') {
    const raw = fields(payload, ['name', 'args'], 'subscript');
    const parts = objectName(raw.name, 'subscript');
    const mode = parts.length === 1 && !parts[0]!.quoted ? parts[0]!.value.toLowerCase() : '';
    if (SUBSCRIPT_MODES.has(mode)) {
      const args = functionArgs(raw.args, mode);
      if (args.raw.length !== 1 || args.star || args.distinct || args.orderBy || args.limit) {
        throw new InvalidQuery(`${mode.toUpperCase()} takes one index`, positionOf(payload));
      }
      return { mode: mode as Extract<Expr, { kind: 'subscript' }>['mode'], index: convertExpr(args.raw[0]) };
    }
  }
  return { mode: 'offset', index: convertExpr(node) };
}
