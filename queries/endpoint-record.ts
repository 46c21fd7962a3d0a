import { z } from 'zod';

/**
 * A saved endpoint as operators write it (the management API's body, one stored version): its
 * saved SQL with `@name` parameters, the parameters it declares, and its settings. The planner
 * never reads a record; queries/stored-endpoint.ts turns one into an EndpointDefinition.
 */

export const PARAMETER_TYPES = ['string', 'integer', 'number', 'boolean', 'timestamp'] as const;
export type ParameterType = (typeof PARAMETER_TYPES)[number];

/** Names the query route reads itself: a declared parameter may not take them. */
const RESERVED_PARAMETERS = ['sql', 'lql', 'stats', 'format', 'cursor', 'page_size'];

const parameterName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'a parameter name is a letter or _ then letters, digits or _ (at most 64)')
  .refine(
    (name) => !RESERVED_PARAMETERS.includes(name.toLowerCase()),
    `${RESERVED_PARAMETERS.join(', ')} are read by the query route itself (the sandbox parameters, statistics and exports) and cannot be declared`,
  );

export const parameterDeclarationSchema = z
  .strictObject({
    name: parameterName,
    type: z.enum(PARAMETER_TYPES),
    required: z.boolean().default(false),
    /** Used when the caller sends nothing (or an empty value); its text must pass the checks below. */
    default: z.union([z.string(), z.number(), z.boolean()]).optional(),
    allowedValues: z.array(z.string().min(1)).min(1).max(100).optional(),
    /** A JavaScript regular expression the whole value must match. */
    pattern: z
      .string()
      .min(1)
      .max(500)
      .refine((pattern) => compiles(pattern), 'pattern is not a valid regular expression')
      .optional(),
    description: z.string().max(1000).default(''),
  })
  .refine((parameter) => !(parameter.required && parameter.default !== undefined), {
    message: 'a parameter is either required or has a default, not both',
    path: ['default'],
  });

export type ParameterDeclaration = z.infer<typeof parameterDeclarationSchema>;

function compiles(pattern: string): boolean {
  try {
    new RegExp(pattern, 'u');
    return true;
  } catch {
    return false;
  }
}

/** Dotted or hyphenated lower-case words (docs/design/SPEC.md 2.1): usage.api-counts, logs.all. */
export const ENDPOINT_NAME = /^[a-z0-9]+(?:[._-][a-z0-9]+)*$/;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What an operator sends: everything but the id and the version, which the store assigns. */
export const endpointInputSchema = z
  .strictObject({
    name: z
      .string()
      .max(100)
      .regex(ENDPOINT_NAME, 'a name is lower-case words of letters and digits joined by . _ or - (e.g. errors.per-function)')
      // the path takes a name or a UUID, and /api/endpoints/query is the query route
      .refine((name) => !UUID.test(name) && name !== 'query', 'a name may not be a UUID, nor "query"'),
    description: z.string().max(2000).default(''),
    sql: z.string().trim().min(1, 'sql must hold the saved query').max(100_000),
    parameters: z.array(parameterDeclarationSchema).max(50).default([]),
    maxRows: z.number().int().min(1).max(10_000).default(1000),
    /** 0 = results are not cached. */
    cacheSeconds: z.number().int().min(0).max(86_400).default(0),
    /** null = cached results are not warmed. */
    warmingSeconds: z.number().int().min(1).max(86_400).nullable().default(null),
    sandboxable: z.boolean().default(true),
    redactPii: z.boolean().default(false),
    enabled: z.boolean().default(true),
  })
  .superRefine((input, context) => {
    const seen = new Set<string>();
    input.parameters.forEach((parameter, index) => {
      if (seen.has(parameter.name)) {
        context.addIssue({ code: 'custom', path: ['parameters', index, 'name'], message: `parameter ${parameter.name} is declared twice` });
      }
      seen.add(parameter.name);
    });
    if (input.warmingSeconds !== null && input.cacheSeconds === 0) {
      context.addIssue({ code: 'custom', path: ['warmingSeconds'], message: 'warming needs caching: set cacheSeconds above 0, or warmingSeconds to null' });
    }
    if (input.warmingSeconds !== null && input.warmingSeconds > input.cacheSeconds) {
      const message = 'warmingSeconds must not exceed cacheSeconds: a result would expire before it is warmed';
      context.addIssue({ code: 'custom', path: ['warmingSeconds'], message });
    }
  });

export type EndpointInput = z.infer<typeof endpointInputSchema>;

/** One stored version of an endpoint. */
export interface EndpointRecord extends EndpointInput {
  id: string;
  /** 1 for the first save, one more for each later save (edit, restore, delete). */
  version: number;
  savedAt: string;
}

/** The first problems zod found, each, with where it is (`parameters.1.name: ...`). */
export function issuesText(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => (issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message))
    .join('; ');
}
