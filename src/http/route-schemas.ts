/**
 * Schema pieces the route schemas share: the error envelope every route answers a failure with, and
 * the security of the routes outside the API scope. The OpenAPI document is generated from them.
 */

/** `{"error":{"code","message"}}`: added once to the server (installErrorHandler), referenced as `Error#`. */
export const ERROR_SCHEMA = {
  $id: 'Error',
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: {
        code: { type: 'string', description: 'Stable snake_case code (docs/errors.md lists them)' },
        message: { type: 'string', description: 'What was wrong and how to fix it' },
      },
    },
  },
} as const;

/** The error envelope under each status a route answers a failure with, each described for the API docs. */
export function errorResponses(statuses: Readonly<Record<number, string>>): Record<number, { description: string; $ref: string }> {
  return Object.fromEntries(Object.entries(statuses).map(([status, description]) => [status, { description, $ref: 'Error#' }]));
}

/** Any caller: the route takes no credential. */
export const NO_CREDENTIAL: Record<string, string[]>[] = [];

/** Authorization: Bearer <OPS_TOKEN>, when one is configured. */
export const OPERATOR_TOKEN: Record<string, string[]>[] = [{ bearer: [] }];

export const INTERNAL_ERROR = 'Unexpected failure; the message names the request id the service log has the details under';
