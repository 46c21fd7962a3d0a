/**
 * A small scanner over BigQuery SQL text, used before and around the real parser: it bounds what the
 * parser is handed (operators, see `countOperators`) and explains parse failures (statement kind,
 * several statements). It never decides that a query is acceptable; only the parser and the
 * validator do.
 */

export type TokenKind = 'word' | 'quoted_identifier' | 'string' | 'number' | 'symbol';

export interface Token {
  kind: TokenKind;
  /** The token as written (strings and quoted identifiers with their quotes). */
  text: string;
}

const WORD_START = /[A-Za-z_@]/;
const WORD_PART = /[A-Za-z0-9_@]/;
const DIGIT = /[0-9]/;

/** Splits the text into tokens, skipping whitespace and comments (`--`, `#`, `/* *\/`). */
export function scanTokens(text: string): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  while (at < text.length) {
    const char = text[at]!;
    const next = text[at + 1];
    if (/\s/.test(char)) {
      at++;
    } else if ((char === '-' && next === '-') || char === '#') {
      const end = text.indexOf('\n', at);
      at = end < 0 ? text.length : end + 1;
    } else if (char === '/' && next === '*') {
      const end = text.indexOf('*/', at + 2);
      at = end < 0 ? text.length : end + 2;
    } else if (char === '`') {
      const end = closingQuote(text, at, '`', false);
      tokens.push({ kind: 'quoted_identifier', text: text.slice(at, end) });
      at = end;
    } else if (char === "'" || char === '"' || (/[rRbB]/.test(char) && stringStartsAfterPrefix(text, at))) {
      const start = at;
      let raw = false;
      // every prefix letter is stepped over (rb'..' once looped here for ever: raw ||= skipped the step)
      for (; /[rRbB]/.test(text[at]!); at++) if (/[rR]/.test(text[at]!)) raw = true;
      const end = closingQuote(text, at, text[at]!, raw);
      tokens.push({ kind: 'string', text: text.slice(start, end) });
      at = end;
    } else if (WORD_START.test(char)) {
      const start = at;
      while (at < text.length && WORD_PART.test(text[at]!)) at++;
      tokens.push({ kind: 'word', text: text.slice(start, at) });
    } else if (DIGIT.test(char) || (char === '.' && next !== undefined && DIGIT.test(next))) {
      const start = at;
      while (at < text.length && /[0-9.eE]/.test(text[at]!)) at++;
      tokens.push({ kind: 'number', text: text.slice(start, at) });
    } else {
      tokens.push({ kind: 'symbol', text: char });
      at++;
    }
  }
  return tokens;
}

/** `r'..'`, `b"..."`, `rb'..'`: one or two prefix letters directly followed by a quote. */
function stringStartsAfterPrefix(text: string, at: number): boolean {
  const first = text[at + 1];
  if (first === "'" || first === '"') return true;
  return /[rRbB]/.test(first ?? '') && (text[at + 2] === "'" || text[at + 2] === '"');
}

/** The offset just past the literal that opens at `at` (single or triple quotes); the text end if unterminated. */
function closingQuote(text: string, at: number, quote: string, raw: boolean): number {
  const triple = quote !== '`' && text.startsWith(quote.repeat(3), at);
  const closing = triple ? quote.repeat(3) : quote;
  let position = at + closing.length;
  while (position < text.length) {
    // A backslash escapes the next character, in raw strings too as far as finding the end goes.
    if (text[position] === '\\') position += raw ? 1 : 2;
    else if (text.startsWith(closing, position)) return position + closing.length;
    else position++;
  }
  return text.length;
}

/** Keywords that join two operands (or follow one), so that a run of them builds a deeper tree. */
const OPERATOR_KEYWORDS = new Set([
  'and',
  'or',
  'not',
  'is',
  'in',
  'like',
  'ilike',
  'rlike',
  'regexp',
  'similar',
  'between',
  'escape',
  'collate',
  'at',
  'div',
  'xor',
  'overlaps',
  'union',
  'intersect',
  'except',
  'minus',
  'distinct',
  'over',
  'member',
  'sounds',
]);
/** Brackets and separators nest through the parser's own recursion limit, not through operator chains. */
const NON_OPERATOR_SYMBOLS = new Set(['(', ')', '[', ']', ',', '.', ';', '{', '}']);

/**
 * How many operators the text holds. The parser builds `a + b + c ...` and `x and y and ...`
 * without recursion but its tree then nests one level per operator, and serialising a tree some
 * thousands of levels deep overflows the WebAssembly stack, which leaves the parser instance
 * unusable. Bounding this count before parsing bounds that depth.
 */
export function countOperators(tokens: readonly Token[]): number {
  let count = 0;
  for (const token of tokens) {
    if (token.kind === 'symbol' && !NON_OPERATOR_SYMBOLS.has(token.text)) count++;
    else if (token.kind === 'word' && OPERATOR_KEYWORDS.has(token.text.toLowerCase())) count++;
  }
  return count;
}

/** Keywords that open a statement other than a query, in BigQuery, DuckDB and the SQL standard. */
const OTHER_STATEMENTS = new Set([
  'insert',
  'update',
  'delete',
  'merge',
  'upsert',
  'replace',
  'truncate',
  'create',
  'drop',
  'alter',
  'rename',
  'grant',
  'revoke',
  'set',
  'reset',
  'pragma',
  'call',
  'execute',
  'exec',
  'prepare',
  'deallocate',
  'declare',
  'attach',
  'detach',
  'use',
  'copy',
  'export',
  'import',
  'load',
  'install',
  'force',
  'unload',
  'show',
  'describe',
  'desc',
  'explain',
  'summarize',
  'analyze',
  'vacuum',
  'checkpoint',
  'begin',
  'start',
  'commit',
  'rollback',
  'abort',
  'end',
  'savepoint',
  'release',
  'assert',
  'raise',
  'return',
  'if',
  'loop',
  'while',
  'repeat',
  'for',
  'lock',
  'unlock',
  'comment',
  'refresh',
  'cache',
  'uncache',
  'kill',
  'flush',
  'optimize',
  'msck',
]);

/** The first keyword, lower-cased, when it opens a statement other than a query. */
export function otherStatementKeyword(tokens: readonly Token[]): string | undefined {
  const first = tokens[0];
  const keyword = first?.kind === 'word' ? first.text.toLowerCase() : undefined;
  return keyword !== undefined && OTHER_STATEMENTS.has(keyword) ? keyword : undefined;
}

/** Whether a `;` is followed by anything but more `;`: a second statement, parsable or not. */
export function hasSeveralStatements(tokens: readonly Token[]): boolean {
  const separator = tokens.findIndex((token) => token.kind === 'symbol' && token.text === ';');
  return separator >= 0 && tokens.slice(separator + 1).some((token) => !(token.kind === 'symbol' && token.text === ';'));
}

/**
 * How deeply parentheses, brackets, CASE ... END and INTERVAL nest in the text, counted before
 * parsing. The parser retries several constructs (CAST, CASE, INTERVAL, ARRAY[...], SUBSTRING,
 * CEIL) another way when they fail, so an unfinished nest of them costs time exponential in its
 * depth (16 unterminated CASEs take half a second, 16 CASTs as long); bounding the depth bounds it.
 */
export function bracketDepth(tokens: readonly Token[]): number {
  let depth = 0;
  let deepest = 0;
  // INTERVAL has no closing token: it nests only what directly follows it.
  let openIntervals = 0;
  for (const token of tokens) {
    const text = token.kind === 'word' ? token.text.toLowerCase() : token.kind === 'symbol' ? token.text : '';
    if (text === '(' || text === '[' || text === 'case') depth++;
    else if (text === ')' || text === ']' || text === 'end') depth = Math.max(0, depth - 1);
    if (text === 'interval') openIntervals++;
    else if (text !== '(' && text !== '[' && text !== 'case' && text !== 'cast' && text !== 'safe_cast') openIntervals = 0;
    deepest = Math.max(deepest, depth + openIntervals);
  }
  return deepest;
}

/** `POSITION(a IN b)` is not BigQuery, and the parser's retries make each nested one cost three times the last. */
export function hasPositionCall(tokens: readonly Token[]): boolean {
  return tokens.some((token, index) => token.kind === 'word' && token.text.toLowerCase() === 'position' && tokens[index + 1]?.text === '(');
}

/** A raw bytes literal (`rb'..'`, `br'..'`), which the parser would read as a name followed by an alias. */
export function hasRawBytesLiteral(tokens: readonly Token[]): boolean {
  return tokens.some((token) => token.kind === 'string' && /^(rb|br)/i.test(token.text));
}
