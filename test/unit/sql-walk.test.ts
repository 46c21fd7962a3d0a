import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { convertStatements } from '../../src/sql/convert.ts';
import { DEFAULT_SANDBOX_LIMITS, initSqlParser } from '../../src/sql/index.ts';
import { parseStatements } from '../../src/sql/parse.ts';
import type { Expr, Query } from '../../src/sql/syntax.ts';
import { bracketDepth, countOperators, scanTokens } from '../../src/sql/tokens.ts';
import { mapExpression, walk, type Clause } from '../../src/sql/walk.ts';
import { SQL_ATTACKS } from '../fixtures/sql-attacks.ts';

beforeAll(() => initSqlParser());

/** The tree as converted, before validation: the walker must cover what validation would refuse too. */
function tree(sql: string): Query {
  return convertStatements(parseStatements(sql));
}

/** Every Expr kind; a kind added to syntax.ts fails to compile here until it is listed. */
const EXPR_KINDS: Record<Expr['kind'], true> = {
  identifier: true,
  string: true,
  number: true,
  boolean: true,
  null: true,
  typed_literal: true,
  interval: true,
  date_part: true,
  unary: true,
  binary: true,
  like: true,
  between: true,
  in_list: true,
  in_subquery: true,
  in_unnest: true,
  is: true,
  call: true,
  cast: true,
  case: true,
  extract: true,
  subscript: true,
  field: true,
  struct: true,
  array: true,
  array_subquery: true,
  subquery: true,
  exists: true,
  parameter: true,
};

/** One query holding every node kind of syntax.ts. */
const EVERY_KIND = `with c as (select 1 as x)
select a, 's', 2, true, null, timestamp '2024-01-01', interval 1 hour, timestamp_trunc(t, hour), -a, a + b, a like 'x%',
  a between 1 and 2, a in (1, 2), a in (select x from c), a in unnest([1, 2]), a is null,
  count(*) over (partition by a order by b rows between 1 preceding and current row), string_agg(a order by b limit 3),
  cast(a as string), case a when 1 then 1 else 2 end, extract(hour from t), arr[offset(0)], arr[offset(0)].f, struct(1 as a),
  [1, 2], array(select 1), (select 1), exists(select 1), @p, t.*
from t join u using (id) cross join unnest(arr) as e, (select 1) as d, (v cross join w)
where a = 1 group by a having count(*) > 1 qualify row_number() over () = 1
union all (select 1)
order by a limit 10 offset 5`;

/** What a naive reflection walk finds: every object with a `kind`, as often as it is reached. */
function reflected(root: unknown): Map<object, number> {
  const found = new Map<object, number>();
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const node = pending.pop();
    if (Array.isArray(node)) pending.push(...node);
    else if (typeof node === 'object' && node !== null) {
      if ('kind' in node) found.set(node, (found.get(node) ?? 0) + 1);
      pending.push(...Object.values(node));
    }
  }
  return found;
}

/** The same through the walker: queries, selects, select items, relations, joins and expressions. */
function walked(root: Query): Map<object, number> {
  const found = new Map<object, number>();
  const note = (node: object) => void found.set(node, (found.get(node) ?? 0) + 1);
  walk(root, { query: note, selectItem: note, relation: note, join: note, expr: note, select: note });
  return found;
}

/** Set operations and frame bounds are not visited on their own: the walker passes through them. */
function withoutPassThrough(found: Map<object, number>): Map<object, number> {
  const passThrough = new Set(['set_operation', 'nested_query', 'current_row', 'unbounded_preceding', 'unbounded_following', 'preceding', 'following']);
  return new Map([...found].filter(([node]) => !passThrough.has((node as { kind: string }).kind)));
}

function corpus(): [string, Query][] {
  const studio = JSON.parse(readFileSync('test/fixtures/examples/studio-queries.json', 'utf8')) as { id: string; sql: string }[];
  const attacks: [string, Query][] = [];
  for (const attack of SQL_ATTACKS) {
    // the size attacks are refused before parsing, as parseSandboxQuery refuses them
    const tokens = scanTokens(attack.sql);
    if (bracketDepth(tokens) > DEFAULT_SANDBOX_LIMITS.maxBracketDepth || countOperators(tokens) > DEFAULT_SANDBOX_LIMITS.maxOperators) continue;
    try {
      attacks.push([attack.label, tree(attack.sql)]);
    } catch {
      // refused by the parser or the converter: no tree to walk
    }
  }
  return [['every kind', tree(EVERY_KIND)], ...studio.map((query): [string, Query] => [query.id, tree(query.sql)]), ...attacks];
}

describe('walk', () => {
  it('reaches every expression kind', () => {
    const kinds = new Set<string>();
    walk(tree(EVERY_KIND), { expr: (expr) => void kinds.add(expr.kind) });
    expect([...kinds].sort()).toEqual(Object.keys(EXPR_KINDS).sort());
  });

  it('visits exactly the nodes a reflection walk finds, each once, over the studio queries and the attacks', () => {
    const queries = corpus();
    expect(queries.length).toBeGreaterThan(100);
    for (const [label, query] of queries) {
      const expected = withoutPassThrough(reflected(query));
      const actual = walked(query);
      expect(
        [...actual.values()].every((count) => count === 1),
        label,
      ).toBe(true);
      expect(actual.size, label).toBe(expected.size);
      for (const node of expected.keys()) expect(actual.has(node), `${label}: ${JSON.stringify(node)}`).toBe(true);
    }
  });

  it('visits in the order of the query: CTEs, FROM, items, WHERE, GROUP BY, HAVING, QUALIFY, ORDER BY, LIMIT', () => {
    const names: string[] = [];
    walk(tree('with c as (select c1 from t0) select i1, f(i2, i3) from t1 join t2 on o1 where w1 group by g1 having h1 qualify q1 order by r1 limit 1'), {
      relation: (relation) => void (relation.kind === 'table' && names.push(relation.name.join('.'))),
      expr: (expr) => void (expr.kind === 'identifier' && names.push(expr.path.join('.'))),
    });
    expect(names).toEqual(['t0', 'c1', 't1', 't2', 'o1', 'i1', 'i2', 'i3', 'w1', 'g1', 'h1', 'q1', 'r1']);
  });

  it('visits the operand of IN before its subquery', () => {
    const names: string[] = [];
    walk(tree('select 1 from t where a in (select b from u)'), { expr: (expr) => void (expr.kind === 'identifier' && names.push(expr.path[0]!)) });
    expect(names).toEqual(['a', 'b']);
  });

  it('tells the clause each expression stands in', () => {
    const clauses: Record<string, Clause> = {};
    walk(tree('select s from t join u on j cross join unnest(n) where w group by g having h qualify q order by o limit 1'), {
      expr: (expr, clause) => void (expr.kind === 'identifier' && (clauses[expr.path[0]!] = clause)),
    });
    expect(clauses).toEqual({ s: 'select', j: 'join_condition', n: 'from', w: 'where', g: 'group_by', h: 'having', q: 'qualify', o: 'order_by' });
  });

  it('skips what lies below a node whose callback returns false', () => {
    const sql = 'select a, (select b from u), exists(select c from v) from t where d in (select e from w)';
    const bySubquery: string[] = [];
    walk(tree(sql), {
      expr: (expr) => {
        if (expr.kind === 'identifier') bySubquery.push(expr.path[0]!);
        return expr.kind !== 'subquery' && expr.kind !== 'exists';
      },
    });
    expect(bySubquery).toEqual(['a', 'd', 'e']);
    const byQuery: string[] = [];
    const root = tree(sql);
    walk(root, { query: (query) => query === root, expr: (expr) => void (expr.kind === 'identifier' && byQuery.push(expr.path[0]!)) });
    expect(byQuery).toEqual(['a', 'd']);
  });

  it('walks a long operator chain without deep recursion', () => {
    let chain: Expr = { kind: 'identifier', path: ['x0'] };
    for (let index = 1; index < 100_000; index++) chain = { kind: 'binary', operator: 'or', left: chain, right: { kind: 'identifier', path: [`x${index}`] } };
    let identifiers = 0;
    walk(chain, { expr: (expr) => void (expr.kind === 'identifier' && identifiers++) });
    expect(identifiers).toBe(100_000);
  });
});

describe('mapExpression', () => {
  it('replaces matching sub-expressions in a copy, leaving the original and its subqueries alone', () => {
    const query = tree('select f(a + 1, a) over (partition by a) + (select a from t) from t');
    const item = query.body.kind === 'select' ? query.body.items[0]! : undefined;
    if (item?.kind !== 'expression') throw new Error('expected an expression item');
    const before = JSON.stringify(item.expr);
    const mapped = mapExpression(item.expr, (expr) => (expr.kind === 'identifier' && expr.path[0] === 'a' ? { kind: 'identifier', path: ['b'] } : undefined));
    expect(JSON.stringify(item.expr)).toBe(before);
    const names: string[] = [];
    walk(mapped, { expr: (expr) => void (expr.kind === 'identifier' && names.push(expr.path[0]!)) });
    expect(names).toEqual(['b', 'b', 'b', 'a']);
    const subquery = (expr: Expr) => (expr.kind === 'binary' && expr.right.kind === 'subquery' ? expr.right.query : undefined);
    expect(subquery(mapped)).toBe(subquery(item.expr));
  });
});
