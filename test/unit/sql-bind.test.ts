import { beforeAll, describe, expect, it } from 'vitest';
import { InvalidQuery, UnknownTable } from '../../src/errors.ts';
import { bind } from '../../src/sql/bind.ts';
import type { BindEnvironment, Binding, Bindings, Shape } from '../../src/sql/bindings.ts';
import { initSqlParser, parseSandboxQuery } from '../../src/sql/index.ts';
import type { Expr, Query, Relation, Select } from '../../src/sql/syntax.ts';
import { walk } from '../../src/sql/walk.ts';

beforeAll(() => initSqlParser());

const scalar: Shape = { kind: 'scalar' };
const open: Shape = { kind: 'open' };
const records = (fields: Record<string, Shape>): Shape => ({
  kind: 'array',
  element: { kind: 'record', fields: Object.entries(fields).map(([name, shape]) => ({ name, shape })) },
});

/** logs: metadata records with `level` and `request` records (`path`, `status`); `user` records nobody knows the fields of. */
const ENVIRONMENT: BindEnvironment = {
  tables: [
    {
      name: 'logs',
      columns: [
        { name: 'id', shape: scalar },
        { name: 'timestamp', shape: scalar },
        { name: 'metadata', shape: records({ level: scalar, status: scalar, request: records({ path: scalar, status: scalar }), user: open }) },
      ],
    },
    {
      name: 'other',
      columns: [
        { name: 'id', shape: scalar },
        { name: 'value', shape: scalar },
      ],
    },
  ],
};

function parse(sql: string): Query {
  return parseSandboxQuery(sql, { allowedTables: ['logs', 'other'] });
}

/** The query, its bindings, and every identifier by its text (the first one written so). */
function bound(sql: string): { query: Query; bindings: Bindings; name: (text: string, nth?: number) => Binding } {
  const query = parse(sql);
  const bindings = bind(query, ENVIRONMENT);
  const identifiers: Extract<Expr, { kind: 'identifier' }>[] = [];
  walk(query, { expr: (expr) => void (expr.kind === 'identifier' && identifiers.push(expr)) });
  const name = (text: string, nth = 0) => {
    const found = identifiers.filter((expr) => expr.path.join('.') === text)[nth];
    if (!found) throw new Error(`no identifier ${text}`);
    return bindings.names.get(found)!;
  };
  return { query, bindings, name };
}

/** The FROM relations of a query's top SELECT, in order (joins included). */
function relations(query: Query): Relation[] {
  const select = query.body as Select;
  return select.from.flatMap((item) => [item.relation, ...item.joins.map((join) => join.relation)]);
}

function refusal(sql: string): string {
  try {
    bind(parse(sql), ENVIRONMENT);
  } catch (error) {
    if (error instanceof InvalidQuery || error instanceof UnknownTable) return error.message;
    throw error;
  }
  throw new Error(`bound without error: ${sql}`);
}

describe('each binding kind', () => {
  it('a column of a scanned table, bare or qualified, with the struct fields after it', () => {
    const { query, name } = bound('select id, t.timestamp, t.metadata from logs as t');
    const [t] = relations(query);
    expect(name('id')).toEqual({ kind: 'column', range: t, column: 'id', fields: [] });
    expect(name('t.timestamp')).toEqual({ kind: 'column', range: t, column: 'timestamp', fields: [] });
    expect(name('t.metadata')).toEqual({ kind: 'column', range: t, column: 'metadata', fields: [] });
  });

  it('a field of an unnested record, through its alias or bare', () => {
    const { query, name } = bound('select m.level, request, path from logs cross join unnest(metadata) as m cross join unnest(m.request) as r');
    const [, m, r] = relations(query);
    expect(name('m.level')).toEqual({ kind: 'element', range: m, offset: false, fields: ['level'] });
    expect(name('request')).toEqual({ kind: 'element', range: m, offset: false, fields: ['request'] });
    expect(name('path')).toEqual({ kind: 'element', range: r, offset: false, fields: ['path'] });
    expect(name('metadata')).toEqual({ kind: 'column', range: relations(query)[0], column: 'metadata', fields: [] });
  });

  it('the WITH OFFSET number of an unnest', () => {
    const { query, name } = bound('select pos from logs cross join unnest(metadata) as m with offset as pos');
    expect(name('pos')).toEqual({ kind: 'element', range: relations(query)[1], offset: true, fields: [] });
  });

  it("a column of the query's own CTE and of a derived table", () => {
    const cte = bound('with c as (select id as k from logs) select k, c.k from c');
    const [c] = relations(cte.query);
    expect(cte.name('k')).toEqual({ kind: 'column', range: c, column: 'k', fields: [] });
    expect(cte.name('c.k')).toEqual({ kind: 'column', range: c, column: 'k', fields: [] });
    const derived = bound('select d.k, v from (select id as k, 1 as v from logs) as d');
    const [d] = relations(derived.query);
    expect(derived.name('d.k')).toEqual({ kind: 'column', range: d, column: 'k', fields: [] });
    expect(derived.name('v')).toEqual({ kind: 'column', range: d, column: 'v', fields: [] });
  });

  it('a table alias used as a value is its whole row', () => {
    const { query, name } = bound('select t, to_json_string(t) from logs as t');
    const [t] = relations(query);
    expect(name('t')).toEqual({ kind: 'row', range: t });
    expect(name('t', 1)).toEqual({ kind: 'row', range: t });
  });

  it('a select alias in GROUP BY, HAVING, QUALIFY and ORDER BY, never in WHERE', () => {
    const { name } = bound('select id as k, count(*) as n from logs where id is not null group by k having n > 1 qualify k is not null order by n');
    for (const [text, nth] of [
      ['k', 0],
      ['n', 0],
      ['k', 1],
      ['n', 1],
    ] as const)
      expect(name(text, nth).kind).toBe('alias');
    expect(name('id', 1).kind).toBe('column');
  });

  it('a name of the enclosing query (correlation), and the inner scope first', () => {
    const { query, name } = bound("select (select count(*) from unnest(t.metadata) as m where m.level = t.id and level = 'x') from logs as t");
    const [t] = relations(query);
    expect(name('t.id')).toEqual({ kind: 'column', range: t, column: 'id', fields: [] });
    expect(name('t.metadata')).toEqual({ kind: 'column', range: t, column: 'metadata', fields: [] });
    expect(name('level')).toMatchObject({ kind: 'element', fields: ['level'] });
  });
});

describe('shadowing', () => {
  it('a range variable before a column of the same name', () => {
    const { query, name } = bound('select metadata.level from logs cross join unnest(metadata) as metadata');
    expect(name('metadata.level')).toEqual({ kind: 'element', range: relations(query)[1], offset: false, fields: ['level'] });
  });

  it('a column before a field of an unnested record', () => {
    const { query, name } = bound('select id from logs cross join unnest(metadata) as m');
    expect(name('id')).toEqual({ kind: 'column', range: relations(query)[0], column: 'id', fields: [] });
  });

  it('a select alias before a column in ORDER BY; the column inside an expression of GROUP BY', () => {
    const { name } = bound('select timestamp as id from logs group by timestamp order by id');
    expect(name('id')).toEqual({ kind: 'alias', name: 'id' });
  });

  it('JOIN ... USING leaves the bare name to the left side', () => {
    const { query, name } = bound('select id, b.id from logs as a join other as b using (id)');
    const [a, b] = relations(query);
    expect(name('id')).toEqual({ kind: 'column', range: a, column: 'id', fields: [] });
    expect(name('b.id')).toEqual({ kind: 'column', range: b, column: 'id', fields: [] });
  });

  it("JOIN ... USING pairs the two sides' columns for the join condition", () => {
    const { query, bindings } = bound('select 1 from logs as a join other as b using (id)');
    const [a, b] = relations(query);
    const join = (query.body as Select).from[0]!.joins[0]!;
    expect(bindings.using.get(join)).toEqual([
      { left: { kind: 'column', range: a, column: 'id', fields: [] }, right: { kind: 'column', range: b, column: 'id', fields: [] } },
    ]);
  });
});

describe('what is known before the rows', () => {
  it('a bare field two records are known to have is ambiguous', () => {
    expect(refusal('select status from logs cross join unnest(metadata) as m cross join unnest(m.request) as r')).toBe(
      'Name status is ambiguous: more than one unnested record has a field status; qualify it (line 1, column 8)',
    );
  });

  it('a field the one record in scope is not known to have is still its field (NULL when no row has it)', () => {
    const { query, name } = bound('select color from logs cross join unnest(metadata) as m');
    expect(name('color')).toEqual({ kind: 'element', range: relations(query)[1], offset: false, fields: ['color'] });
  });

  it('a field no known record has, among several, is missing', () => {
    expect(bound('select color from logs cross join unnest(metadata) as m cross join unnest(m.request) as r').name('color')).toEqual({ kind: 'missing' });
  });

  it('a field known in one record wins over values whose fields cannot be known', () => {
    const { query, name } = bound('select level from logs cross join unnest(metadata) as m cross join unnest(m.user) as u');
    expect(name('level')).toEqual({ kind: 'element', range: relations(query)[1], offset: false, fields: ['level'] });
  });

  it('a field only values of unknown fields might have is refused as ambiguous', () => {
    expect(refusal('select color from logs cross join unnest(metadata) as m cross join unnest(m.user) as u cross join unnest(m.user) as v')).toMatch(
      /^Name color is ambiguous: more than one unnested value may have a field color; qualify it/,
    );
  });

  it('a computed array of scalars holds no fields', () => {
    expect(refusal("select color from unnest(split('a,b')) as s")).toBe('Unrecognized name: color (line 1, column 8)');
  });

  it("a struct literal's fields are known", () => {
    const { query, name } = bound('select a from unnest([struct(1 as a, 2 as b)]) as s');
    expect(name('a')).toEqual({ kind: 'element', range: relations(query)[0], offset: false, fields: ['a'] });
  });
});

describe('errors, once, with positions', () => {
  it('an unknown name', () => {
    expect(refusal('select nope from logs')).toBe('Unrecognized name: nope (line 1, column 8)');
  });

  it('a column two tables have', () => {
    expect(refusal('select id from logs, other')).toBe('Column name id is ambiguous: more than one table in FROM has it; qualify it (line 1, column 8)');
  });

  it('a column a table lacks', () => {
    expect(refusal('select t.nope from logs as t')).toBe('Name nope not found inside t (line 1, column 8)');
  });

  it('two ranges of one name in one FROM', () => {
    expect(refusal('select 1 from logs as t, other as t')).toMatch(/^duplicate table alias t in the same FROM clause/);
  });

  it('two select columns of one name, named by HAVING', () => {
    expect(refusal('select id as k, timestamp as k from logs group by 1, 2 having k is null')).toMatch(
      /^k is ambiguous: the select list has more than one column of that name/,
    );
  });

  it('USING a column one side lacks', () => {
    expect(refusal('select 1 from logs as a join other as b using (value)')).toBe('column value in USING must exist exactly once on each side of the join');
  });
});
