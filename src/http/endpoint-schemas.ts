import { z } from 'zod';
import { endpointInputSchema } from '../../queries/endpoint-record.ts';

/** A zod schema as JSON Schema for the route schemas (draft-07, which fastify's validator and serializer speak). */
function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): ObjectSchema {
  const { $schema: _draft, ...json } = z.toJSONSchema(schema, { io, target: 'draft-7', unrepresentable: 'any' }) as ObjectSchema & { $schema: string };
  return json;
}

interface ObjectSchema {
  type: 'object';
  properties: Record<string, unknown>;
  required: string[];
  [keyword: string]: unknown;
}

/** The body of POST and PUT /api/endpoints: what an operator writes (queries/endpoint-record.ts). */
export const ENDPOINT_INPUT_SCHEMA = { ...jsonSchemaOf(endpointInputSchema, 'input'), description: 'The endpoint; left-out fields take their defaults' };

/** The body of PATCH: the fields to change, each as in a whole endpoint. */
export const ENDPOINT_PATCH_SCHEMA = {
  type: 'object',
  description: 'The fields to change; the result is checked as a whole endpoint',
  properties: ENDPOINT_INPUT_SCHEMA.properties,
};

const output = jsonSchemaOf(endpointInputSchema, 'output');

/** One stored version of an endpoint, as the management routes answer it. */
export const ENDPOINT_RECORD_SCHEMA = {
  type: 'object',
  properties: {
    ...output.properties,
    id: { type: 'string', format: 'uuid' },
    version: { type: 'integer', minimum: 1, description: '1 for the first save, one more for each later save (edit, restore, delete)' },
    savedAt: { type: 'string', format: 'date-time' },
  },
  required: [...output.required, 'id', 'version', 'savedAt'],
};

/** A version in an endpoint's history: the record, and whether that save deleted the endpoint. */
export const ENDPOINT_VERSION_SCHEMA = {
  ...ENDPOINT_RECORD_SCHEMA,
  properties: { ...ENDPOINT_RECORD_SCHEMA.properties, deleted: { type: 'boolean' } },
  required: [...ENDPOINT_RECORD_SCHEMA.required, 'deleted'],
};
