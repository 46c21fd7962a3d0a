/**
 * DuckDB SQL has no LET. A BigQuery form that needs a value more than once (a NULL test and the
 * value, a range test and the element) would print the value's text each time, and nesting such
 * forms would multiply the text at every level (SUBSTR nested 8 deep: 3^8 copies).
 */
import type { SqlBudget } from './budget.ts';
import { BOUND_PARAMETER } from './literals.ts';

/** The longest text repeated as it is; anything longer is bound. */
const MAX_REPEATED_CHARS = 200;
const IDENTIFIER = `"(?:[^"]|"")*"`;
const STRING = `'(?:[^']|'')*'`;
const COLUMN = new RegExp(`^(?:struct_extract\\()*${IDENTIFIER}\\.${IDENTIFIER}(?:, ${STRING}\\))*$`);
const LITERAL = new RegExp(`^(?:NULL|TRUE|FALSE|${STRING}|CAST\\(\\d+ AS BIGINT\\)|CAST\\('[^']*' AS DOUBLE\\)|TIMESTAMPTZ '[^']*'|DATE '[^']*')$`);

function isLiteral(sql: string): boolean {
  return sql.length <= MAX_REPEATED_CHARS && LITERAL.test(sql);
}

function isCheapToRepeat(sql: string): boolean {
  return sql.length <= MAX_REPEATED_CHARS && (LITERAL.test(sql) || COLUMN.test(sql));
}

/**
 * `body` over `values`, each printed once. Columns and literals are short and are repeated as they
 * are. When any value is more than that, every value but the literals is bound through a lambda
 * over a one-element list, and `body` reads it through the lambda's parameter: every one, because a
 * lambda body can neither read an enclosing query's columns nor hold a subquery. The list is
 * evaluated once per row, as the values would be.
 */
export function bindOnce(budget: SqlBudget, values: readonly string[], body: (refs: string[]) => string): string {
  if (values.every(isCheapToRepeat)) return body([...values]);
  const bound = values.flatMap((value, i) => (isLiteral(value) ? [] : [i]));
  if (bound.length === 1) {
    const [at] = bound as [number];
    return `(list_transform([${values[at]}], lambda ${BOUND_PARAMETER}: ${body(values.map((value, i) => (i === at ? BOUND_PARAMETER : value)))})[1])`;
  }
  const fields = budget.join(
    bound.map((i) => `v${i} := ${values[i]}`),
    ', ',
  );
  const refs = values.map((value, i) => (isLiteral(value) ? value : `${BOUND_PARAMETER}.v${i}`));
  return `(list_transform([struct_pack(${fields})], lambda ${BOUND_PARAMETER}: ${body(refs)})[1])`;
}
