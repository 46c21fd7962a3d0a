/** LQL, Logflare's log query language: text to syntax tree and back. Pure: no I/O, no clock. */
export { parseLql } from './parser.ts';
export { printLql } from './printer.ts';
export { MAX_LQL_BYTES, MAX_LQL_CLAUSES } from './lexer.ts';
export type * from './syntax.ts';
