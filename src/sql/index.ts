/**
 * The sandboxed SQL front end: text to a validated syntax tree. Call `initSqlParser()` once at
 * start-up; `parseSandboxQuery` is synchronous and throws only SqlSyntax, SandboxViolation,
 * UnknownTable or InvalidQuery.
 */
import { SandboxViolation } from '../errors.ts';
import { convertStatements, ONLY_SELECT } from './convert.ts';
import { parseStatements } from './parse.ts';
import type { Query } from './syntax.ts';
import { bracketDepth, countOperators, hasPositionCall, hasRawBytesLiteral, hasSeveralStatements, otherStatementKeyword, scanTokens } from './tokens.ts';
import { DEFAULT_SANDBOX_LIMITS, validateSandboxQuery, type SandboxLimits } from './validate.ts';

export { initSqlParser } from './parse.ts';
export { SANDBOX_FUNCTION_NAMES, sandboxFunction, type FunctionKind, type SandboxFunction, type SandboxFunctionName } from './functions.ts';
export { DEFAULT_SANDBOX_LIMITS, tableKey, type SandboxLimits } from './validate.ts';

export interface SandboxQueryOptions {
  /** The endpoint's CTE names: the only tables the query may read besides its own CTEs. */
  allowedTables: readonly string[];
  /** The endpoint's declared parameters, without `@`. */
  parameterNames?: readonly string[];
  limits?: Partial<SandboxLimits>;
}

/** The first check, cheap enough to run before any other work (and before handing the text to the parser thread). */
export function assertQuerySize(text: string, options: Pick<SandboxQueryOptions, 'limits'>): void {
  const maxQueryBytes = options.limits?.maxQueryBytes ?? DEFAULT_SANDBOX_LIMITS.maxQueryBytes;
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxQueryBytes) {
    throw new SandboxViolation(`the query is ${bytes} bytes long, more than ${maxQueryBytes} (limit maxQueryBytes)`);
  }
}

export function parseSandboxQuery(text: string, options: SandboxQueryOptions): Query {
  const limits: SandboxLimits = { ...DEFAULT_SANDBOX_LIMITS, ...options.limits };
  assertQuerySize(text, options);
  const tokens = scanTokens(text);
  const operators = countOperators(tokens);
  if (operators > limits.maxOperators) {
    throw new SandboxViolation(`the query has ${operators} operators, more than ${limits.maxOperators} (limit maxOperators)`);
  }
  const depth = bracketDepth(tokens);
  if (depth > limits.maxBracketDepth) {
    throw new SandboxViolation(`the query nests parentheses, brackets and CASE ${depth} deep, more than ${limits.maxBracketDepth} (limit maxBracketDepth)`);
  }
  if (hasPositionCall(tokens)) throw new SandboxViolation('POSITION(.. IN ..) is not allowed in a sandboxed query; use strpos');
  if (hasRawBytesLiteral(tokens)) throw new SandboxViolation("raw bytes literals (rb'..') are not supported; write b'..' with escapes");
  let statements;
  try {
    statements = parseStatements(text);
  } catch (error) {
    // A statement the parser cannot read may still be plainly something other than one query
    // (INSTALL, ATTACH, `select 1; install x`): say so rather than point at the syntax.
    const keyword = otherStatementKeyword(tokens);
    if (keyword) throw new SandboxViolation(`${ONLY_SELECT}, not ${keyword.toUpperCase()}`);
    if (hasSeveralStatements(tokens)) throw new SandboxViolation(`${ONLY_SELECT}; the text holds several statements`);
    throw error;
  }
  const query = convertStatements(statements);
  validateSandboxQuery(query, options.allowedTables, limits, options.parameterNames ?? []);
  return query;
}
