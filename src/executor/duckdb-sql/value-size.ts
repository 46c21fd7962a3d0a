/**
 * Size guards for the functions whose output grows with a number the query chooses (REPEAT, LPAD,
 * RPAD, GENERATE_ARRAY) or with the sizes of their inputs together (CONCAT and ||, REPLACE,
 * REGEXP_REPLACE, ARRAY_TO_STRING). DuckDB's memory limit does not cover one value being built:
 * repeat('x', 1500000000) grew the engine process by gigabytes before the result's byte cap could
 * refuse it. Each guard works out the size of the value from its arguments (without building it) and
 * fails the query with DuckDB's error() when it would pass the largest result a query may return
 * (SANDBOX_MAX_RESULT_BYTES), a value that could never be answered anyway. A guard is the first WHEN
 * of the function's CASE; its arithmetic is in DOUBLE, so no size overflows, and a NULL size (a NULL
 * argument) passes it, leaving BigQuery's NULL to the function.
 */
import { bindOnce } from './bind.ts';
import type { SqlBudget } from './budget.ts';

/** Bytes one element of a list takes in the engine, at least: GENERATE_ARRAY's BIGINTs. */
const LIST_ELEMENT_BYTES = 8;
const LIMIT_NAME = 'SANDBOX_MAX_RESULT_BYTES';
/** The message of a guard, as DuckDB reports it: the part after the prefix is the client's answer. */
const REFUSAL = new RegExp(`^Invalid Input Error: ([A-Z_]+ would build an? (?:string|array) of more than [^\\n]*\\(${LIMIT_NAME}\\))`);

/** A string's size in bytes, as a DOUBLE. */
export function bytes(sql: string): string {
  return `CAST(strlen(${sql}) AS DOUBLE)`;
}

/** The WHEN branch that refuses a string of `size` bytes (DuckDB SQL) over `maxBytes`. */
export function stringGuard(name: string, size: string, maxBytes: number): string {
  return `WHEN ${size} > ${maxBytes} THEN error('${name} would build a string of more than ${maxBytes} bytes, the most a result may hold (${LIMIT_NAME})')`;
}

/** The WHEN branch that refuses a list of `elements` (DuckDB SQL) whose elements would pass `maxBytes` together. */
export function listGuard(name: string, elements: string, maxBytes: number): string {
  const most = Math.floor(maxBytes / LIST_ELEMENT_BYTES);
  return `WHEN ${elements} > ${most} THEN error('${name} would build an array of more than ${most} elements, ${LIST_ELEMENT_BYTES} bytes each, more than the ${maxBytes} bytes a result may hold (${LIMIT_NAME})')`;
}

/** `values` (strings) joined as BigQuery's CONCAT and || do (NULL if any is NULL), refused past `maxBytes` together; each printed once. */
export function concatenation(values: readonly string[], budget: SqlBudget, maxBytes: number): string {
  return bindOnce(
    budget,
    values,
    (refs) => `(CASE ${stringGuard('CONCAT', budget.join(refs.map(bytes), ' + '), maxBytes)} ELSE (${budget.join(refs, ' || ')}) END)`,
  );
}

/** The client's message when an engine error is one of these guards refusing a value; undefined for any other error. */
export function valueTooLargeMessage(engineMessage: string): string | undefined {
  return REFUSAL.exec(engineMessage)?.[1];
}
