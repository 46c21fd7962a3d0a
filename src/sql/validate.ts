/**
 * What a parsed sandboxed query may do: read only the endpoint's CTEs and its own, call only listed
 * functions, use only the endpoint's parameters, and stay within size bounds. Pure; throws the
 * first problem found, with its position.
 */
import { InvalidQuery, SandboxViolation, UnknownTable, type QueryPosition } from '../errors.ts';
import { isAggregate, sandboxFunction, signatureOf } from './functions.ts';
import type { Expr, FromItem, OrderItem, Query, Relation, Select, SetExpression } from './syntax.ts';
import { childExpressions, subqueryOf } from './walk.ts';

export interface SandboxLimits {
  /** Length of the query text in UTF-8 bytes, checked before parsing. */
  maxQueryBytes: number;
  /** Operators in the text, checked before parsing (see countOperators in tokens.ts). */
  maxOperators: number;
  /** Parentheses, brackets, CASE and INTERVAL nested in the text, checked before parsing (see bracketDepth in tokens.ts). */
  maxBracketDepth: number;
  /** Nesting of expressions and subqueries; a chain of one operator (`a or b or c`) counts once. */
  maxDepth: number;
  /** Common table expressions in the whole query. */
  maxCtes: number;
  /** Tables, UNNESTs and subqueries read in FROM and JOIN, in the whole query. */
  maxTableReferences: number;
  /** Result columns of one SELECT. */
  maxSelectItems: number;
  /** Elements of one IN list, array, STRUCT or argument list. */
  maxListItems: number;
}

export const DEFAULT_SANDBOX_LIMITS: Readonly<SandboxLimits> = Object.freeze({
  maxQueryBytes: 64 * 1024,
  maxOperators: 1000,
  maxBracketDepth: 12,
  maxDepth: 64,
  maxCtes: 32,
  maxTableReferences: 64,
  maxSelectItems: 256,
  maxListItems: 1000,
});

/**
 * The planner renames each read of an endpoint table to a scan table of this prefix (`__scan_0`,
 * `__scan_0_groups`); a name of the query's own that began so could stand in for one of them.
 */
export const INTERNAL_TABLE_PREFIX = '__scan_';

/**
 * The key a table or CTE name is compared by. BigQuery resolves names given within a query (CTEs,
 * aliases) without regard to case, so we fold ASCII letters only: full Unicode folding would let
 * look-alikes through (the Kelvin sign U+212A lower-cases to "k").
 */
export function tableKey(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => letter.toLowerCase());
}

/** Where aggregate and window calls are refused, as BigQuery refuses them. */
type Clause = 'select' | 'where' | 'group_by' | 'having' | 'qualify' | 'order_by' | 'join_condition' | 'from';

const NO_AGGREGATES: ReadonlySet<Clause> = new Set(['where', 'group_by', 'join_condition', 'from']);
const NO_WINDOWS: ReadonlySet<Clause> = new Set(['where', 'group_by', 'having', 'join_condition', 'from']);

const CLAUSE_NAMES: Record<Clause, string> = {
  select: 'SELECT',
  where: 'WHERE',
  group_by: 'GROUP BY',
  having: 'HAVING',
  qualify: 'QUALIFY',
  order_by: 'ORDER BY',
  join_condition: 'a JOIN condition',
  from: 'FROM',
};

interface Context {
  /** Keys of the query's own CTEs visible here. */
  ctes: ReadonlySet<string>;
  clause: Clause;
  depth: number;
  insideAggregate: boolean;
}

/**
 * Checks the query against the endpoint: `allowedTables` are the endpoint's CTE names,
 * `parameterNames` its declared parameters (without `@`).
 */
export function validateSandboxQuery(
  query: Query,
  allowedTables: readonly string[],
  limits: SandboxLimits = DEFAULT_SANDBOX_LIMITS,
  parameterNames: readonly string[] = [],
): void {
  const endpointTables = new Set(allowedTables.map(tableKey));
  const tally = { ctes: 0, tableReferences: 0 };

  function checkDepth(depth: number, position: QueryPosition | undefined): void {
    if (depth > limits.maxDepth) {
      throw new SandboxViolation(`the query nests expressions and subqueries more than ${limits.maxDepth} levels deep (limit maxDepth)`, position);
    }
  }

  function checkListLength(length: number, what: string, position: QueryPosition | undefined): void {
    if (length > limits.maxListItems)
      throw new SandboxViolation(`${what} has ${length} elements, more than ${limits.maxListItems} (limit maxListItems)`, position);
  }

  function visitQuery(node: Query, outer: Context): void {
    checkDepth(outer.depth + 1, node.position);
    const context: Context = { ...outer, depth: outer.depth + 1, clause: 'select', insideAggregate: false };
    let ctes = new Set(outer.ctes);
    const ownNames = new Set<string>();
    for (const cte of node.with) {
      tally.ctes++;
      if (tally.ctes > limits.maxCtes)
        throw new SandboxViolation(`the query defines more than ${limits.maxCtes} common table expressions (limit maxCtes)`, cte.position);
      checkOwnName(cte.name, 'a WITH table name', cte.position);
      const key = tableKey(cte.name);
      if (ownNames.has(key)) throw new InvalidQuery(`the WITH clause defines ${cte.name} twice`, cte.position);
      // A CTE sees the ones before it, not itself: its own name inside it means the endpoint's table.
      visitQuery(cte.query, { ...context, ctes });
      ownNames.add(key);
      ctes = new Set([...ctes, key]);
    }
    const inner: Context = { ...context, ctes };
    visitSetExpression(node.body, inner);
    visitOrderBy(node.orderBy, { ...inner, clause: 'order_by' });
    if (node.limit) visitExpr(node.limit, { ...inner, clause: 'order_by' });
    if (node.offset) visitExpr(node.offset, { ...inner, clause: 'order_by' });
  }

  function visitSetExpression(node: SetExpression, context: Context): void {
    switch (node.kind) {
      case 'select':
        return visitSelect(node, context);
      case 'nested_query':
        return visitQuery(node.query, context);
      case 'set_operation':
        visitSetExpression(node.left, context);
        return visitSetExpression(node.right, context);
    }
  }

  function visitSelect(node: Select, context: Context): void {
    if (node.items.length > limits.maxSelectItems) {
      throw new SandboxViolation(`a SELECT lists ${node.items.length} columns, more than ${limits.maxSelectItems} (limit maxSelectItems)`, node.position);
    }
    for (const item of node.from) visitFromItem(item, context);
    // `select *` and `t.*` are accepted (the reference refuses them): over a CTE they return its
    // declared columns, and every table a query can read here is a CTE, so nothing else is exposed.
    for (const item of node.items) if (item.kind === 'expression') visitExpr(item.expr, { ...context, clause: 'select' });
    if (node.where) visitExpr(node.where, { ...context, clause: 'where' });
    for (const expr of node.groupBy) visitExpr(expr, { ...context, clause: 'group_by' });
    if (node.having) visitExpr(node.having, { ...context, clause: 'having' });
    if (node.qualify) visitExpr(node.qualify, { ...context, clause: 'qualify' });
  }

  function visitFromItem(item: FromItem, context: Context): void {
    visitRelation(item.relation, context);
    for (const join of item.joins) {
      visitRelation(join.relation, context);
      if (join.on) visitExpr(join.on, { ...context, clause: 'join_condition' });
    }
  }

  function visitRelation(relation: Relation, context: Context): void {
    tally.tableReferences++;
    if (tally.tableReferences > limits.maxTableReferences) {
      throw new SandboxViolation(
        `the query reads more than ${limits.maxTableReferences} tables, UNNESTs and subqueries (limit maxTableReferences)`,
        relation.position,
      );
    }
    if (relation.alias !== undefined) checkOwnName(relation.alias, 'an alias', relation.position);
    if (relation.kind === 'unnest' && relation.offsetAlias !== undefined) checkOwnName(relation.offsetAlias, 'an alias', relation.position);
    switch (relation.kind) {
      case 'table':
        return checkTable(relation.name, context, relation.position);
      case 'unnest':
        return visitExpr(relation.array, { ...context, clause: 'from' });
      case 'derived':
        return visitQuery(relation.query, context);
      case 'nested_join':
        return visitFromItem(relation.item, context);
    }
  }

  /** Whatever case it is written in: the engine, like BigQuery, compares these names without regard to it. */
  function checkOwnName(name: string, use: string, position: QueryPosition | undefined): void {
    if (name.toLowerCase().startsWith(INTERNAL_TABLE_PREFIX)) {
      throw new SandboxViolation(
        `${name} cannot be used as ${use}: names beginning with ${INTERNAL_TABLE_PREFIX} are reserved for the tables the service reads; choose another name`,
        position,
      );
    }
  }

  function checkTable(name: readonly string[], context: Context, position: QueryPosition | undefined): void {
    // Dotted names (project.dataset.table, INFORMATION_SCHEMA.*) never name a CTE.
    const [only] = name;
    if (name.length === 1 && only !== undefined) {
      const key = tableKey(only);
      if (context.ctes.has(key) || endpointTables.has(key)) return;
    }
    throw new UnknownTable(name.join('.'), allowedTables, position);
  }

  function visitOrderBy(items: readonly OrderItem[], context: Context): void {
    for (const item of items) visitExpr(item.expr, context);
  }

  /** Checks a call where it stands; its arguments, ORDER BY and LIMIT are read in the returned context. */
  function checkCall(node: Extract<Expr, { kind: 'call' }>, context: Context): Context {
    const fn = sandboxFunction(node.name);
    // The reference's wording: "Restricted function session_user".
    if (!fn) throw new SandboxViolation(`restricted function ${node.name}`, node.position);
    const written = node.star ? 1 : node.args.length;
    if (node.star && !fn.allowsStar) throw new InvalidQuery(`${node.name}(*) is not a valid call`, node.position);
    signatureOf(node.name, fn, written, node.position);
    checkListLength(node.args.length, `the call of ${node.name}`, node.position);
    const aggregate = isAggregate(fn) && !node.over;
    if (fn.kind === 'window' && !node.over) throw new InvalidQuery(`${node.name} needs an OVER clause`, node.position);
    if (node.over && (fn.kind === 'scalar' || fn.kind === 'aggregate')) throw new InvalidQuery(`${node.name} cannot take an OVER clause`, node.position);
    if ((node.distinct || node.orderBy || node.limit) && !aggregate) {
      throw new InvalidQuery(`DISTINCT, ORDER BY and LIMIT inside a call are only for aggregate functions, not ${node.name}`, node.position);
    }
    if (aggregate && NO_AGGREGATES.has(context.clause)) {
      throw new InvalidQuery(`aggregate function ${node.name} is not allowed in ${CLAUSE_NAMES[context.clause]}`, node.position);
    }
    if (aggregate && context.insideAggregate)
      throw new InvalidQuery(`aggregate function ${node.name} cannot be nested inside another aggregate`, node.position);
    if (node.over && NO_WINDOWS.has(context.clause)) {
      throw new InvalidQuery(`window function ${node.name} is not allowed in ${CLAUSE_NAMES[context.clause]}`, node.position);
    }
    // a windowed call is never an aggregate here, so its window is read in the same context
    return { ...context, insideAggregate: context.insideAggregate || aggregate };
  }

  function visitExpr(node: Expr, outer: Context, chainedFrom?: string): void {
    // A chain of one operator (`a or b or c`) is one level, however long: only its first link counts.
    const depth = node.kind === 'binary' && node.operator === chainedFrom ? outer.depth : outer.depth + 1;
    checkDepth(depth, node.position);
    const context = checkExpr(node, { ...outer, depth });
    const children = childExpressions(node);
    children.forEach((child, index) => visitExpr(child, context, node.kind === 'binary' && index === 0 ? node.operator : undefined));
    const query = subqueryOf(node);
    if (query) visitQuery(query, context);
  }

  /** Checks one expression before its children are read; returns the context they are read in. */
  function checkExpr(node: Expr, context: Context): Context {
    switch (node.kind) {
      case 'parameter':
        if (!parameterNames.includes(node.name)) {
          const declared = parameterNames.length > 0 ? parameterNames.map((name) => `@${name}`).join(', ') : 'none';
          throw new InvalidQuery(`unknown parameter @${node.name}; this endpoint's parameters are: ${declared}`, node.position);
        }
        return context;
      case 'in_list':
        checkListLength(node.list.length, 'an IN list', node.position);
        return context;
      case 'struct':
        checkListLength(node.fields.length, 'a STRUCT', node.position);
        return context;
      case 'array':
        checkListLength(node.elements.length, 'an array', node.position);
        return context;
      case 'call':
        return checkCall(node, context);
      default:
        return context;
    }
  }

  visitQuery(query, { ctes: new Set(), clause: 'select', depth: 0, insideAggregate: false });
}
