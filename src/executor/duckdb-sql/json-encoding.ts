/**
 * BigQuery's JSON encoding (TO_JSON_STRING) where DuckDB's to_json writes another text: a TIMESTAMP
 * is `"2024-01-01T00:00:00Z"` and a DATETIME `"2024-01-01T00:00:00"` (DuckDB writes the cast text),
 * and an INT64 outside [-2^53, 2^53] is a string of its digits (as a number, most JSON readers would
 * lose digits). Values of other types, and records and arrays that hold none of these, go to to_json
 * as they are. The encoding follows the value's type, known when the query is translated.
 */
import type { SqlType } from '../../sql/types.ts';
import { civilText } from './civil-text.ts';
import { LAMBDA_PARAMETER, quoteIdentifier, quoteString } from './literals.ts';

const EXACT_INTEGER = 2 ** 53;

export function needsEncoding(type: SqlType): boolean {
  switch (type.kind) {
    case 'timestamp':
    case 'datetime':
    case 'int64':
      return true;
    case 'array':
      return needsEncoding(type.element);
    case 'struct':
      return type.fields.some((field) => needsEncoding(field.type));
    default:
      return false;
  }
}

/**
 * `value` as a DuckDB JSON value in BigQuery's encoding. `value` is read several times: pass a column,
 * a literal, a lambda parameter or a bound value (bind.ts).
 */
export function jsonEncoded(value: string, type: SqlType): string {
  switch (type.kind) {
    case 'timestamp':
    case 'datetime':
      return `to_json(${civilText(value, type.kind, 'json')})`;
    case 'int64':
      return `(CASE WHEN ${value} BETWEEN -${EXACT_INTEGER} AND ${EXACT_INTEGER} THEN to_json(${value}) ELSE to_json(CAST(${value} AS VARCHAR)) END)`;
    case 'array':
      if (!needsEncoding(type.element)) break;
      return `to_json(list_transform(${value}, lambda ${LAMBDA_PARAMETER}: ${jsonEncoded(LAMBDA_PARAMETER, type.element)}))`;
    case 'struct': {
      if (!needsEncoding(type)) break;
      const fields = type.fields.map((field) => {
        const inner = jsonEncoded(`struct_extract(${value}, ${quoteString(field.name)})`, field.type);
        return `${quoteIdentifier(field.name)} := ${inner}`;
      });
      // a NULL record is null, not a record of nulls
      return `(CASE WHEN ${value} IS NULL THEN NULL ELSE to_json(struct_pack(${fields.join(', ')})) END)`;
    }
  }
  return `to_json(${value})`;
}

/** DuckDB's json_pretty indents by four spaces, BigQuery's pretty-printed JSON by two: each line's indent halved. */
export function twoSpaceIndent(pretty: string): string {
  const line = LAMBDA_PARAMETER;
  const halved = `repeat(' ', (length(${line}) - length(ltrim(${line}, ' '))) // 2) || ltrim(${line}, ' ')`;
  return `array_to_string(list_transform(string_split(${pretty}, chr(10)), lambda ${line}: ${halved}), chr(10))`;
}
