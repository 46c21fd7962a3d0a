import { z } from 'zod';
import type { EndpointDefinition, ParameterDoc } from '../../queries/endpoint.ts';
import type { ParameterType } from '../../queries/endpoint-record.ts';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../export/export-request.ts';
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';

/** The OpenAPI document as @fastify/swagger generates it from the route schemas, as far as this module reads it. */
export interface OpenApiDocument {
  paths?: Record<string, Record<string, Operation>>;
  [field: string]: unknown;
}

export interface Parameter {
  name: string;
  in: 'query' | 'header' | 'path';
  required: boolean;
  description: string;
  schema: Record<string, unknown>;
}

export interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Parameter[];
  requestBody?: { required: boolean; content: Record<string, { schema: Record<string, unknown> }> };
  responses: Record<string, { description: string; headers?: Record<string, unknown>; content?: Record<string, { schema: unknown }> }>;
}

/** @fastify/swagger's options: the document's frame; its paths are generated from the route schemas. */
export const SWAGGER_OPTIONS: FastifyDynamicSwaggerOptions = {
  openapi: {
    openapi: '3.1.0',
    info: {
      title: 'Log query endpoints',
      version: '1.0.0',
      description: 'Saved, parameterised queries over the log store. Every /api/ route needs an API key (X-API-KEY or Authorization: Bearer).',
    },
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'X-API-KEY' },
        bearer: { type: 'http', scheme: 'bearer' },
      },
    },
    security: [{ apiKey: [] }, { bearer: [] }],
  },
  // shared schemas keep their own names (#/components/schemas/Error), not def-0
  refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
};

/** The query route in the generated document: it stands for every stored endpoint, each documented with its own parameters. */
const QUERY_ROUTE_PATH = '/api/endpoints/query/{endpoint}';

type JsonSchema = { properties?: Record<string, Record<string, unknown>>; required?: string[] };

const SANDBOX_PARAMETERS: Parameter[] = [
  { name: 'sql', in: 'query', required: false, description: "Ad-hoc SQL restricted to the endpoint's CTE names.", schema: { type: 'string' } },
  {
    name: 'lql',
    in: 'query',
    required: false,
    description: "Ad-hoc query in the log query language, restricted to the endpoint's CTE names.",
    schema: { type: 'string' },
  },
];

const STATS_DESCRIPTION = '`true` adds a `stats` object beside `result`: what this request read and where it ran.';

const STATS_PARAMETER: Parameter = { name: 'stats', in: 'query', required: false, description: STATS_DESCRIPTION, schema: { type: 'boolean' } };

/** The `stats` object (src/endpoints/query-stats.ts). */
const STATS_SCHEMA = {
  type: 'object',
  description: 'Present only when asked (stats=true or SVC-ENDPOINT-STATS: true)',
  properties: {
    elapsed_ms: { type: 'number', description: 'Milliseconds from receiving the request to building this object' },
    rows_returned: { type: 'integer' },
    events_scanned: {
      type: 'object',
      additionalProperties: { type: 'integer' },
      description: 'By source: the events in scope of an aggregation the store ran (its hits total), the events fetched by a search',
    },
    bytes_read: { type: 'integer', description: "Bytes of the store's response bodies this request read" },
    cache: { type: 'object', properties: { hit: { type: 'boolean' }, age_seconds: { type: 'integer' } } },
    pushed_down: { type: 'array', items: { type: 'string', enum: ['filters', 'aggregation', 'sort', 'limit'] }, description: 'What the store ran' },
    engine: { type: 'object', properties: { ran: { type: 'boolean', description: 'Whether a residual query ran in the embedded engine' } } },
    partitions: { type: 'array', items: { type: 'string' }, description: 'Index expressions searched (the time partitions of each source)' },
  },
};

function rowSchema(endpoint: EndpointDefinition): Record<string, unknown> {
  const selection = endpoint.selection;
  if (selection.kind === 'events') {
    const columns: Record<string, unknown> = {
      id: { type: 'string' },
      timestamp: { type: 'integer', description: 'Microseconds since the Unix epoch' },
      event_message: { type: 'string' },
      metadata: { type: 'array', items: { type: 'object' }, description: 'Records; every nested record is itself an array of records' },
    };
    return { type: 'object', properties: Object.fromEntries(selection.columns.map((column) => [column, columns[column]])) };
  }
  // saved SQL's columns are known only once it runs
  if (selection.kind === 'sql') return { type: 'object', description: 'The columns the saved SQL selects' };
  const counts = endpoint.ctes.find((cte) => cte.name === selection.from);
  const countColumns = counts?.kind === 'request_counts' ? Object.keys(counts.pathColumns) : [];
  return {
    type: 'object',
    properties: {
      timestamp: { type: 'string', description: 'Bucket start in UTC, YYYY-MM-DDTHH:MM:SS' },
      ...Object.fromEntries(countColumns.map((column) => [column, { type: 'integer', minimum: 0 }])),
    },
  };
}

/**
 * The endpoint's declared parameters as query parameters: a stored endpoint's from their
 * declarations (type, default, allowed values, pattern), the rest from its zod schema.
 */
export function declaredParameters(endpoint: EndpointDefinition): Parameter[] {
  const schema = z.toJSONSchema(endpoint.parameters, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {}).map(([name, property]) => {
    const doc = endpoint.parameterDocs.find((parameter) => parameter.name === name);
    if (doc?.type) return { name, in: 'query', required: doc.required, description: doc.description, schema: declaredSchema(doc, doc.type) };
    return { name, in: 'query', required: required.has(name), description: doc?.description ?? '', schema: property };
  });
}

const JSON_TYPES: Readonly<Record<ParameterType, Record<string, unknown>>> = {
  string: { type: 'string' },
  integer: { type: 'integer' },
  number: { type: 'number' },
  boolean: { type: 'boolean' },
  timestamp: { type: 'string', format: 'date-time' },
};

function declaredSchema(doc: ParameterDoc, type: ParameterType): Record<string, unknown> {
  return {
    ...JSON_TYPES[type],
    ...(doc.default === undefined ? {} : { default: doc.default }),
    ...(doc.allowedValues ? { enum: doc.allowedValues } : {}),
    ...(doc.pattern ? { pattern: `^(?:${doc.pattern})$` } : {}),
  };
}

const EXPORT_PARAMETERS: Parameter[] = [
  {
    name: 'format',
    in: 'query',
    required: false,
    description:
      'json (default): the `{"result": [...]}` answer; ndjson or csv: the rows as JSON lines or RFC 4180 CSV. A raw-event export (logs.all\'s saved selection) is paged.',
    schema: { type: 'string', enum: ['json', 'ndjson', 'csv'] },
  },
  {
    name: 'cursor',
    in: 'query',
    required: false,
    description: "The previous page's X-Next-Cursor header, unchanged, with the same parameters (paged exports only).",
    schema: { type: 'string' },
  },
  {
    name: 'page_size',
    in: 'query',
    required: false,
    description: `Rows per page of a paged export (default ${DEFAULT_PAGE_SIZE}).`,
    schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE },
  },
];

/**
 * One stored endpoint's GET or POST: the query route's generated operation (its headers and
 * failures) with the endpoint's own parameters, description and rows.
 */
function operation(endpoint: EndpointDefinition, method: 'get' | 'post', route: Operation): Operation {
  const query = [...declaredParameters(endpoint), ...(endpoint.sandboxable ? SANDBOX_PARAMETERS : []), STATS_PARAMETER, ...EXPORT_PARAMETERS];
  const caching = endpoint.cache
    ? `Cached for ${endpoint.cache.ttlSeconds} s${endpoint.cache.warmEverySeconds ? `, warmed every ${endpoint.cache.warmEverySeconds} s` : ''}.`
    : 'Not cached.';
  const description = `${endpoint.description} Also served at /api/endpoints/query/${endpoint.id}. At most ${endpoint.maxRows} rows. ${caching}`;
  const ok = {
    description: 'The result rows',
    headers: {
      'X-Cache': { description: 'HIT, MISS or BYPASS', schema: { type: 'string', enum: ['HIT', 'MISS', 'BYPASS'] } },
      Age: { description: 'Seconds since a cached result was computed', schema: { type: 'integer' } },
      'X-RateLimit-Limit': {
        description: 'Most requests the API key may make at once (its burst); absent when rate limiting is off',
        schema: { type: 'integer' },
      },
      'X-RateLimit-Remaining': {
        description: 'Requests the API key may still make at once; one more is earned every 60 / RATE_LIMIT_PER_MINUTE s',
        schema: { type: 'integer' },
      },
      'X-Next-Cursor': { description: 'Paged exports: the cursor of the next page, absent on the last', schema: { type: 'string' } },
    },
    content: {
      'application/json': {
        schema: {
          type: 'object',
          required: ['result'],
          properties: { result: { type: 'array', maxItems: endpoint.maxRows, items: rowSchema(endpoint) }, stats: STATS_SCHEMA },
        },
      },
      'application/x-ndjson': { schema: { type: 'string', description: 'format=ndjson: one row per line, as a JSON object' } },
      'text/csv': { schema: { type: 'string', description: 'format=csv: a header row of the columns, then one record per row; nested values as JSON text' } },
    },
  };
  const { '200': _none, ...failures } = route.responses;
  const headers = (route.parameters ?? []).filter((parameter) => parameter.in === 'header');
  const common = {
    ...route,
    operationId: `${endpoint.name.replace(/[^A-Za-z0-9]+/g, '_')}_${method}`,
    summary: endpoint.name,
    description,
    responses: { '200': ok, ...failures },
  };
  if (method === 'get') return { ...common, parameters: [...query, ...headers] };
  return {
    ...common,
    parameters: headers,
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            properties: Object.fromEntries(query.map((parameter) => [parameter.name, { ...parameter.schema, description: parameter.description }])),
            required: query.filter((parameter) => parameter.required).map((parameter) => parameter.name),
          },
        },
      },
    },
  };
}

/**
 * The generated document with the query route replaced, in its place, by one path per stored
 * endpoint (by name). Built per request from the generated document, which @fastify/swagger caches:
 * endpoints are created and changed while the service runs.
 */
export function withStoredEndpoints<T extends OpenApiDocument>(generated: T, endpoints: readonly EndpointDefinition[]): T {
  const paths: Record<string, Record<string, Operation>> = {};
  for (const [path, methods] of Object.entries(generated.paths ?? {})) {
    if (path !== QUERY_ROUTE_PATH) {
      paths[path] = methods;
      continue;
    }
    for (const endpoint of endpoints) {
      paths[`/api/endpoints/query/${endpoint.name}`] = { get: operation(endpoint, 'get', methods.get!), post: operation(endpoint, 'post', methods.post!) };
    }
  }
  return { ...generated, paths };
}
