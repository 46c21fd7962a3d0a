/**
 * The syntax tree of the sandboxed SQL dialect (BigQuery-flavoured, as Logflare clients send it).
 *
 * The parser's own tree (sqlparser-rs, serialised as JSON) is converted into this one by
 * `src/sql/convert.ts`; whatever has no place here is refused there. So this file is also the list
 * of constructs the sandbox accepts: the planner, the DuckDB printer and the validator read only
 * these types. Names are kept as written (case included); keywords and function names are
 * lower-cased.
 */

/** 1-based, as the parser reports it. */
export interface Position {
  line: number;
  column: number;
}

export interface Query {
  kind: 'query';
  /** The query's own WITH clause, in order; later CTEs may read earlier ones. */
  with: CommonTableExpression[];
  body: SetExpression;
  orderBy: OrderItem[];
  limit?: Expr;
  offset?: Expr;
  position?: Position;
}

export interface CommonTableExpression {
  name: string;
  query: Query;
  position?: Position;
}

export type SetExpression = Select | SetOperation | NestedQuery;

export interface SetOperation {
  kind: 'set_operation';
  /** BigQuery requires ALL or DISTINCT; a bare UNION is read as DISTINCT. */
  operator: 'union_all' | 'union_distinct' | 'intersect_distinct' | 'except_distinct';
  left: SetExpression;
  right: SetExpression;
}

/** A parenthesised query used as an operand of a set operation. */
export interface NestedQuery {
  kind: 'nested_query';
  query: Query;
}

export interface Select {
  kind: 'select';
  distinct: boolean;
  items: SelectItem[];
  /** Comma-separated FROM items; empty for `select 1`. */
  from: FromItem[];
  where?: Expr;
  /** GROUP BY ALL is read into the items' ordinals here (see group-by-all.ts). */
  groupBy: Expr[];
  /** GROUP BY ROLLUP (groupBy): also the subtotals of each prefix of the keys and the grand total. */
  rollup?: boolean;
  having?: Expr;
  qualify?: Expr;
  position?: Position;
}

export type SelectItem =
  | { kind: 'expression'; expr: Expr; alias?: string; position?: Position }
  /** `*` or `t.*`, optionally `except (a, b)`. */
  | { kind: 'wildcard'; qualifier?: string[]; except: string[]; position?: Position };

/** One comma-separated FROM element with the joins that follow it. */
export interface FromItem {
  relation: Relation;
  joins: Join[];
}

export type Relation =
  /** A table name: a CTE of the endpoint or of the query (possibly dotted or backquoted as written). */
  | { kind: 'table'; name: string[]; alias?: string; position?: Position }
  /** `unnest(expr) [as alias] [with offset [as alias]]`. */
  | { kind: 'unnest'; array: Expr; alias?: string; offsetAlias?: string; withOffset: boolean; position?: Position }
  /** `(select ...) [as alias]`. */
  | { kind: 'derived'; query: Query; alias?: string; position?: Position }
  /** `(a cross join b)`: a parenthesised join. */
  | { kind: 'nested_join'; item: FromItem; alias?: string; position?: Position };

/** A comma between FROM items is not a Join: it separates FromItems (BigQuery reads it as a cross join). */
export interface Join {
  kind: 'cross' | 'inner' | 'left' | 'right' | 'full';
  relation: Relation;
  on?: Expr;
  using?: string[];
}

export interface OrderItem {
  expr: Expr;
  descending: boolean;
  nulls?: 'first' | 'last';
}

export type Weekday = 'sunday' | 'monday' | 'tuesday' | 'wednesday' | 'thursday' | 'friday' | 'saturday';

export type DatePart =
  | 'microsecond'
  | 'millisecond'
  | 'second'
  | 'minute'
  | 'hour'
  | 'day'
  | 'dayofweek'
  | 'dayofyear'
  /** Weeks starting on Sunday; `week(monday)` ... `week(saturday)` start on that day (WEEK(<weekday>)). */
  | 'week'
  | `week(${Exclude<Weekday, 'sunday'>})`
  | 'isoweek'
  | 'month'
  | 'quarter'
  | 'year'
  | 'isoyear'
  | 'date'
  | 'time';

/** The scalar types a CAST may name, BigQuery spelling, upper case. */
export type CastType = 'STRING' | 'INT64' | 'FLOAT64' | 'NUMERIC' | 'BIGNUMERIC' | 'BOOL' | 'BYTES' | 'DATE' | 'DATETIME' | 'TIME' | 'TIMESTAMP' | 'JSON';

export type BinaryOperator =
  | 'and'
  | 'or'
  | '='
  | '!='
  | '<'
  | '<='
  | '>'
  | '>='
  | '+'
  | '-'
  | '*'
  | '/'
  | '%'
  | '||'
  | '&'
  | '|'
  | '^'
  | '<<'
  | '>>'
  /** `a IS [NOT] DISTINCT FROM b`: equality where NULL equals NULL. */
  | 'is distinct from'
  | 'is not distinct from';

export type Expr =
  /**
   * An identifier chain as written: `a`, `t.a`, `m.request.path`. Which part is a table, an unnest
   * alias, a column or a struct field is decided by name resolution, not here.
   */
  | { kind: 'identifier'; path: string[]; position?: Position }
  | { kind: 'string'; value: string; position?: Position }
  /** Kept as text so 64-bit integers and decimals survive. */
  | { kind: 'number'; text: string; position?: Position }
  | { kind: 'boolean'; value: boolean; position?: Position }
  | { kind: 'null'; position?: Position }
  /**
   * A typed literal: `timestamp '2024-01-01'`, `date '2024-01-01'`, `datetime '...'`, `json '...'`;
   * also a bytes literal `b'...'`, whose value is its bytes in hex (escapes read).
   */
  | { kind: 'typed_literal'; type: 'TIMESTAMP' | 'DATE' | 'DATETIME' | 'TIME' | 'JSON' | 'NUMERIC' | 'BYTES'; value: string; position?: Position }
  /** `interval 1 hour` (the value may be an expression). */
  | { kind: 'interval'; value: Expr; unit: DatePart; position?: Position }
  /** The unit argument of timestamp_trunc, date_trunc, timestamp_diff, extract and friends. */
  | { kind: 'date_part'; part: DatePart; position?: Position }
  | { kind: 'unary'; operator: 'not' | '-' | '+' | '~'; operand: Expr; position?: Position }
  | { kind: 'binary'; operator: BinaryOperator; left: Expr; right: Expr; position?: Position }
  | { kind: 'like'; negated: boolean; expr: Expr; pattern: Expr; position?: Position }
  | { kind: 'between'; negated: boolean; expr: Expr; low: Expr; high: Expr; position?: Position }
  | { kind: 'in_list'; negated: boolean; expr: Expr; list: Expr[]; position?: Position }
  | { kind: 'in_subquery'; negated: boolean; expr: Expr; query: Query; position?: Position }
  /** `in unnest(array)`. */
  | { kind: 'in_unnest'; negated: boolean; expr: Expr; array: Expr; position?: Position }
  /** `is [not] null`, `is [not] true`, `is [not] false`. */
  | { kind: 'is'; negated: boolean; expr: Expr; test: 'null' | 'true' | 'false'; position?: Position }
  /**
   * A function call, name lower-cased. `count(*)` has `star`; aggregates may have `distinct`;
   * window functions have `over`. `ignoreNulls` is `ignore nulls` inside the call.
   */
  | {
      kind: 'call';
      name: string;
      args: Expr[];
      star: boolean;
      distinct: boolean;
      ignoreNulls?: boolean;
      /** `order by` inside an aggregate call, e.g. string_agg(x order by y). */
      orderBy?: OrderItem[];
      limit?: Expr;
      over?: WindowSpec;
      position?: Position;
    }
  | { kind: 'cast'; safe: boolean; expr: Expr; type: CastType; position?: Position }
  | { kind: 'case'; operand?: Expr; whens: { when: Expr; then: Expr }[]; else?: Expr; position?: Position }
  /** `extract(part from expr [at time zone 'zone'])`. */
  | { kind: 'extract'; part: DatePart; expr: Expr; timeZone?: string; position?: Position }
  /**
   * `expr[offset(n)]`, `expr[safe_offset(n)]`, `expr[ordinal(n)]`, `expr[safe_ordinal(n)]`, and the
   * bare `expr[n]` (BigQuery reads it as offset).
   */
  | { kind: 'subscript'; expr: Expr; mode: 'offset' | 'safe_offset' | 'ordinal' | 'safe_ordinal'; index: Expr; position?: Position }
  /** `(expr).field`: field access on something other than an identifier chain. */
  | { kind: 'field'; expr: Expr; field: string; position?: Position }
  | { kind: 'struct'; fields: { expr: Expr; name?: string }[]; position?: Position }
  | { kind: 'array'; elements: Expr[]; position?: Position }
  /** `array(select ...)`. */
  | { kind: 'array_subquery'; query: Query; position?: Position }
  /** A scalar subquery `(select ...)`. */
  | { kind: 'subquery'; query: Query; position?: Position }
  | { kind: 'exists'; negated: boolean; query: Query; position?: Position }
  /** A named query parameter `@name` (the endpoint's declared parameters). */
  | { kind: 'parameter'; name: string; position?: Position };

export interface WindowSpec {
  partitionBy: Expr[];
  orderBy: OrderItem[];
  frame?: WindowFrame;
}

export interface WindowFrame {
  units: 'rows' | 'range';
  start: FrameBound;
  end?: FrameBound;
}

export type FrameBound =
  | { kind: 'current_row' }
  | { kind: 'unbounded_preceding' }
  | { kind: 'unbounded_following' }
  | { kind: 'preceding'; offset: Expr }
  | { kind: 'following'; offset: Expr };
