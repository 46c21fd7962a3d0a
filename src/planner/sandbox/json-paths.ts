import type { Expr } from '../../sql/syntax.ts';

/** A JSONPath of member names only, `$.a.b` (at least one), as the service reads it. */
const MEMBER_PATH = /^\$(\.[A-Za-z0-9_]+)+$/;

/**
 * JSON_VALUE(text, '$.a.b') as its text argument and the path's member names, when the path is a
 * literal of that simple form; undefined for any other call (or a windowed one, or other JSONPath syntax).
 */
export function jsonValueCall(expr: Expr): { text: Expr; steps: string[] } | undefined {
  if (expr.kind !== 'call' || expr.name !== 'json_value' || expr.over || expr.distinct || expr.star || expr.args.length !== 2) return undefined;
  const [text, path] = expr.args as [Expr, Expr];
  if (path.kind !== 'string' || !MEMBER_PATH.test(path.value)) return undefined;
  return { text, steps: path.value.slice(2).split('.') };
}
