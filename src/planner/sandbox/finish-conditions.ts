import { pushdownOf } from '../../sql/functions.ts';
import type { Expr } from '../../sql/syntax.ts';
import type { FinishCondition, FinishLiteral, FinishOperand, ValuePath } from '../plan.ts';
import { jsonValueCall } from './json-paths.ts';
import { operands } from './predicates.ts';

type Comparison = Extract<FinishCondition, { kind: 'compare' }>['operator'];

const FLIPPED: Record<Comparison, Comparison> = { '=': '=', '!=': '!=', '<': '>', '<=': '>=', '>': '<', '>=': '<=' };

/** RE2's metacharacters: a pattern with none of them is its own text, which RE2 and a substring search find alike. */
const REGEX_METACHARACTERS = /[\\.+*?()|[\]{}^$]/;

/** Text the engine may store or compare otherwise: a lone surrogate or a NUL character. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is the character looked for
const UNSAFE_TEXT = /[\p{Cs}\u0000]/u;

/**
 * A WHERE condition as one the service evaluates exactly as the engine does, or undefined when it
 * is anything else: AND, OR and NOT of comparisons (=, !=, <, <=, >, >=, BETWEEN, IN) of a value
 * with literals, IS [NOT] NULL, REGEXP_CONTAINS with a pattern of plain text, and LIKE with % as its
 * only wildcard. A value is a path `read` resolves, a CAST of one to INT64, or JSON_VALUE of one. Pure.
 */
export function finishCondition(expr: Expr, read: (expr: Expr) => ValuePath | undefined): FinishCondition | undefined {
  const all = (parts: Expr[], kind: 'and' | 'or'): FinishCondition | undefined => {
    const compiled = parts.map((part) => finishCondition(part, read));
    return compiled.every((part) => part !== undefined) ? { kind, operands: compiled as FinishCondition[] } : undefined;
  };
  const negated = (condition: FinishCondition | undefined, negate: boolean): FinishCondition | undefined =>
    condition && negate ? { kind: 'not', operand: condition } : condition;
  switch (expr.kind) {
    case 'binary': {
      if (expr.operator === 'and' || expr.operator === 'or') return all(operands(expr, expr.operator), expr.operator);
      if (!(expr.operator in FLIPPED)) return undefined;
      const operator = expr.operator as Comparison;
      const left = operandOf(expr.left, read);
      const right = literalOf(expr.right);
      if (left && right !== undefined) return { kind: 'compare', operator, left, right };
      const flippedLeft = operandOf(expr.right, read);
      const flippedRight = literalOf(expr.left);
      return flippedLeft && flippedRight !== undefined ? { kind: 'compare', operator: FLIPPED[operator], left: flippedLeft, right: flippedRight } : undefined;
    }
    case 'unary':
      return expr.operator === 'not' ? negated(finishCondition(expr.operand, read), true) : undefined;
    case 'between': {
      const operand = operandOf(expr.expr, read);
      const low = literalOf(expr.low);
      const high = literalOf(expr.high);
      if (!operand || low === undefined || high === undefined) return undefined;
      const range: FinishCondition = {
        kind: 'and',
        operands: [
          { kind: 'compare', operator: '>=', left: operand, right: low },
          { kind: 'compare', operator: '<=', left: operand, right: high },
        ],
      };
      return negated(range, expr.negated);
    }
    case 'in_list': {
      const operand = operandOf(expr.expr, read);
      const values = expr.list.map(literalOf);
      if (!operand || values.length === 0 || values.some((value) => value === undefined)) return undefined;
      const any: FinishCondition = {
        kind: 'or',
        operands: values.map((value) => ({ kind: 'compare', operator: '=', left: operand, right: value! })),
      };
      return negated(any, expr.negated);
    }
    case 'is': {
      const operand = expr.test === 'null' ? operandOf(expr.expr, read) : undefined;
      return operand && negated({ kind: 'is_null', operand }, expr.negated);
    }
    case 'like': {
      const operand = operandOf(expr.expr, read);
      const pattern = literalOf(expr.pattern);
      // _ is one character and \ escapes: only % is read here, as the gaps between literal pieces
      if (!operand || typeof pattern !== 'string' || /[_\\]/.test(pattern)) return undefined;
      return negated({ kind: 'like', operand, pieces: pattern.split('%') }, expr.negated);
    }
    case 'call': {
      if (pushdownOf(expr) !== 'regexp_condition' || expr.args.length !== 2 || expr.distinct || expr.star) return undefined;
      const operand = operandOf(expr.args[0]!, read);
      const pattern = literalOf(expr.args[1]!);
      if (!operand || typeof pattern !== 'string' || REGEX_METACHARACTERS.test(pattern)) return undefined;
      return { kind: 'contains', operand, text: pattern };
    }
    default:
      return undefined;
  }
}

/** A path, a CAST of one to INT64 (SAFE_CAST is NULL where CAST fails: left to the engine), or JSON_VALUE of one at `$.a.b`. */
export function operandOf(expr: Expr, read: (expr: Expr) => ValuePath | undefined): FinishOperand | undefined {
  const json = jsonValueCall(expr);
  if (json) {
    const value = json.text.kind === 'identifier' ? read(json.text) : undefined;
    return value && { value, json: json.steps };
  }
  if (expr.kind === 'cast') {
    const value = !expr.safe && expr.type === 'INT64' && expr.expr.kind === 'identifier' ? read(expr.expr) : undefined;
    return value && { value, cast: 'int64' };
  }
  const value = expr.kind === 'identifier' ? read(expr) : undefined;
  return value && { value };
}

/**
 * A literal as the engine reads it: text (with no character it may store otherwise), TRUE or FALSE,
 * or a number whose JavaScript value is the engine's exactly (an integer within 2^53, or a decimal,
 * which is a FLOAT64 either way). NULL is left to the engine.
 */
export function literalOf(expr: Expr): FinishLiteral | undefined {
  switch (expr.kind) {
    case 'string':
      return UNSAFE_TEXT.test(expr.value) ? undefined : expr.value;
    case 'boolean':
      return expr.value;
    case 'number':
      return numberOf(expr.text);
    case 'unary': {
      const value = expr.operator === '-' && expr.operand.kind === 'number' ? numberOf(expr.operand.text) : undefined;
      return value === undefined ? undefined : -value;
    }
    default:
      return undefined;
  }
}

function numberOf(text: string): number | undefined {
  if (/^\d+$/.test(text)) {
    const value = Number(text);
    return Number.isSafeInteger(value) ? value : undefined;
  }
  if (!/^(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}
