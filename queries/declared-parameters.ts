import { z } from 'zod';
import { isoToNanosText } from '../shared/stored-timestamp.ts';
import type { ParameterDeclaration } from './endpoint-record.ts';

/**
 * The zod schema a stored endpoint validates its callers' parameters with, built from its declared
 * parameters. Every value comes out as text in a normal form (`007` -> `7`, `TRUE` -> `true`), as
 * the tables' scopes read it; the planner gives `@name` its declared type (EndpointDefinition.parameterTypes).
 */
export function declaredParametersSchema(declarations: readonly ParameterDeclaration[]): z.ZodType<Record<string, string | undefined>> {
  return z.object(Object.fromEntries(declarations.map((declaration) => [declaration.name, parameterSchema(declaration)])));
}

function parameterSchema(declaration: ParameterDeclaration): z.ZodType<string | undefined> {
  const { name } = declaration;
  const about = declaration.description ? ` (${declaration.description})` : '';
  const text = declaration.required ? z.string({ error: `${name} is required${about}` }) : z.string({ error: `${name} must be text` }).optional();
  return text.transform((value, context) => {
    const given = value === undefined || value.trim() === '' ? undefined : value.trim();
    const raw = given ?? (declaration.default === undefined ? undefined : String(declaration.default));
    if (raw === undefined) {
      if (declaration.required) context.addIssue({ code: 'custom', message: `${name} is required${about}` });
      return undefined;
    }
    const problem = problemWith(declaration, raw);
    if (problem !== undefined) {
      context.addIssue({ code: 'custom', message: `${name} ${problem}; got ${JSON.stringify(raw.length > 80 ? `${raw.slice(0, 80)}...` : raw)}` });
      return z.NEVER;
    }
    return normalForm(declaration.type, raw);
  });
}

/** What is wrong with a value of a declared parameter, or undefined when it is acceptable. */
export function problemWith(declaration: ParameterDeclaration, raw: string): string | undefined {
  const typeProblem = TYPE_CHECKS[declaration.type](raw);
  if (typeProblem !== undefined) return typeProblem;
  const value = normalForm(declaration.type, raw);
  if (declaration.allowedValues && !declaration.allowedValues.includes(value)) return `must be one of ${declaration.allowedValues.join(', ')}`;
  if (declaration.pattern && !new RegExp(`^(?:${declaration.pattern})$`, 'u').test(value)) return `must match the pattern ${declaration.pattern}`;
  return undefined;
}

const TYPE_CHECKS: Record<ParameterDeclaration['type'], (raw: string) => string | undefined> = {
  string: () => undefined,
  integer: (raw) => (/^[+-]?\d+$/.test(raw) && Number.isSafeInteger(Number(raw)) ? undefined : 'must be an integer'),
  number: (raw) => (raw !== '' && Number.isFinite(Number(raw)) ? undefined : 'must be a number'),
  boolean: (raw) => (/^(true|false)$/i.test(raw) ? undefined : 'must be true or false'),
  timestamp: (raw) => (isoToNanosText(raw) === undefined ? 'must be an ISO 8601 timestamp such as 2024-01-01T00:00:00.000Z' : undefined),
};

function normalForm(type: ParameterDeclaration['type'], raw: string): string {
  if (type === 'integer' || type === 'number') return String(Number(raw));
  if (type === 'boolean') return raw.toLowerCase();
  return raw;
}

const SAMPLES: Record<ParameterDeclaration['type'], string> = {
  string: 'sample',
  integer: '1',
  number: '1',
  boolean: 'true',
  timestamp: '2024-01-01T00:00:00.000Z',
};

/** A value each declared parameter accepts, for planning a saved query before it is stored. */
export function sampleValue(declaration: ParameterDeclaration): string {
  if (declaration.default !== undefined) return String(declaration.default);
  if (declaration.allowedValues) return declaration.allowedValues[0]!;
  return SAMPLES[declaration.type];
}
