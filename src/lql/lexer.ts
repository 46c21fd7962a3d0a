/**
 * Splits LQL text into clauses: free-text words and phrases, `~regex`es, and keyed clauses
 * (`key` + operator + value) whose meaning the parser decides. One pass, no backtracking, so hostile
 * input costs time linear in its length (which is capped before any work).
 */
import { LqlSyntax } from '../errors.ts';

export const MAX_LQL_BYTES = 16 * 1024;
export const MAX_LQL_CLAUSES = 100;

export type FilterOperatorText = ':' | ':>' | ':>=' | ':<' | ':<=' | ':~' | ':@>' | ':@>~';

/** A value after a keyed clause's operator, as written; `offset` is 1-based. */
export type ValueToken = { kind: 'bare'; text: string; offset: number } | { kind: 'quoted'; text: string; offset: number };

interface ClauseBase {
  /** Where the clause starts, the `-` included; 1-based. */
  offset: number;
  negated: boolean;
}

export type ClauseToken =
  | (ClauseBase & { kind: 'word'; text: string })
  | (ClauseBase & { kind: 'phrase'; text: string })
  | (ClauseBase & { kind: 'regex'; value: ValueToken })
  | (ClauseBase & { kind: 'keyed'; key: string; operator: FilterOperatorText; value: ValueToken | undefined; valueOffset: number });

/** The operators, longest first so that `:@>~` is not read as `:@>` followed by `~`. */
const OPERATORS: readonly FilterOperatorText[] = [':>=', ':<=', ':@>~', ':@>', ':>', ':<', ':~', ':'];

/** Characters a field value may not start with: they would be a second operator (`:>>1`, `:~~x`). */
const OPERATOR_CHARS: ReadonlySet<string> = new Set(['>', '<', '=', '~', '@', ':']);
/** A free-text `~regex` may start with `<`, `=` or `@`; `~~x` is a doubled operator. */
const REGEX_OPERATOR_CHARS: ReadonlySet<string> = new Set(['~']);

const PATH_CHAR = /^[A-Za-z0-9_.]$/;

export function isWhitespace(ch: string | undefined): boolean {
  return ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r' || ch === '\f' || ch === '\v';
}

/** Quote for messages: JSON keeps control characters and quotes readable. */
export function show(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}

/**
 * The end of a bare run starting at `start`: it stops at whitespace, at a `"` (a `\"` pair is kept
 * literally, as in Logflare) and, unless `colonAllowed`, at `:`.
 */
export function scanBare(text: string, start: number, colonAllowed: boolean): number {
  let i = start;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '\\' && text[i + 1] === '"') {
      i += 2;
      continue;
    }
    if (ch === '"' || isWhitespace(ch) || (ch === ':' && !colonAllowed)) break;
    i += 1;
  }
  return i;
}

/** Reads `"..."` at `start` (which holds the opening quote): `\"` and `\\` are escapes, any other backslash is literal. */
export function scanQuoted(text: string, start: number): { value: string; end: number } {
  const parts: string[] = [];
  let runStart = start + 1;
  let i = start + 1;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '\\' && (text[i + 1] === '"' || text[i + 1] === '\\')) {
      parts.push(text.slice(runStart, i), text[i + 1] as string);
      i += 2;
      runStart = i;
      continue;
    }
    if (ch === '"') {
      parts.push(text.slice(runStart, i));
      return { value: parts.join(''), end: i + 1 };
    }
    i += 1;
  }
  throw new LqlSyntax(`unclosed quote: expected a closing " for the quote opened here`, start + 1);
}

function utf8Length(text: string, limit: number): number {
  let bytes = 0;
  for (let i = 0; i < text.length && bytes <= limit; i += 1) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 4;
      i += 1;
    } else bytes += 3;
  }
  return bytes;
}

export function lexLql(text: string): ClauseToken[] {
  if (text.length > MAX_LQL_BYTES || utf8Length(text, MAX_LQL_BYTES) > MAX_LQL_BYTES) {
    throw new LqlSyntax(`LQL text is too long: at most ${MAX_LQL_BYTES} bytes (16 KiB)`);
  }
  const clauses: ClauseToken[] = [];
  let i = 0;
  for (;;) {
    while (isWhitespace(text[i])) i += 1;
    if (i >= text.length) return clauses;
    if (clauses.length === MAX_LQL_CLAUSES) {
      throw new LqlSyntax(`too many clauses: at most ${MAX_LQL_CLAUSES}`, i + 1);
    }
    const { clause, end } = lexClause(text, i);
    if (end < text.length && !isWhitespace(text[end])) {
      throw new LqlSyntax(`expected whitespace or the end of the query after the clause, found ${show(text[end] as string)}`, end + 1);
    }
    clauses.push(clause);
    i = end;
  }
}

function lexClause(text: string, start: number): { clause: ClauseToken; end: number } {
  let i = start;
  const negated = text[i] === '-';
  if (negated) {
    i += 1;
    if (i >= text.length || isWhitespace(text[i]) || text[i] === '-') {
      throw new LqlSyntax('expected a filter after -', i + 1);
    }
  }
  const offset = start + 1;
  const ch = text[i];
  if (ch === '"') {
    const { value, end } = scanQuoted(text, i);
    return { clause: { kind: 'phrase', text: value, offset, negated }, end };
  }
  if (ch === '~') {
    const { value, end } = lexValue(text, i + 1, '~', REGEX_OPERATOR_CHARS);
    if (!value) throw new LqlSyntax('expected a regular expression after ~', i + 2);
    return { clause: { kind: 'regex', value, offset, negated }, end };
  }
  const wordEnd = scanBare(text, i, false);
  if (text[wordEnd] === '"') {
    throw new LqlSyntax('unexpected " inside a word: quote the whole phrase, or write \\" for a literal quote', wordEnd + 1);
  }
  if (text[wordEnd] !== ':') {
    return { clause: { kind: 'word', text: text.slice(i, wordEnd), offset, negated }, end: wordEnd };
  }
  const key = text.slice(i, wordEnd);
  for (let k = 0; k < key.length; k += 1) {
    if (!PATH_CHAR.test(key[k] as string)) {
      throw new LqlSyntax(`expected a field name (letters, digits, _ and .) before ':', found ${show(key[k] as string)}`, i + k + 1);
    }
  }
  if (key === '') throw new LqlSyntax(`expected a field name before ':'`, i + 1);
  const operator = OPERATORS.find((op) => text.startsWith(op, wordEnd)) as FilterOperatorText;
  const valueStart = wordEnd + operator.length;
  const { value, end } = lexValue(text, valueStart, operator, OPERATOR_CHARS);
  return { clause: { kind: 'keyed', key, operator, value, valueOffset: valueStart + 1, offset, negated }, end };
}

/** A value at `start`: quoted, bare, or none (whitespace or the end follows the operator). */
function lexValue(text: string, start: number, after: string, forbiddenFirst: ReadonlySet<string>): { value: ValueToken | undefined; end: number } {
  const ch = text[start];
  if (ch === undefined || isWhitespace(ch)) return { value: undefined, end: start };
  if (ch === '"') {
    const { value, end } = scanQuoted(text, start);
    return { value: { kind: 'quoted', text: value, offset: start + 1 }, end };
  }
  if (forbiddenFirst.has(ch)) {
    throw new LqlSyntax(`expected a value after ${after}, found ${show(ch)}`, start + 1);
  }
  const end = scanBare(text, start, true);
  if (text[end] === '"') {
    throw new LqlSyntax('unexpected " inside a value: quote the whole value, or write \\" for a literal quote', end + 1);
  }
  return { value: { kind: 'bare', text: text.slice(start, end), offset: start + 1 }, end };
}
