import type { FastifyPluginAsync } from 'fastify';
import type { EndpointDefinition } from '../../queries/endpoint.ts';
import { docsPage } from '../openapi/docs-page.ts';
import { openApiDocument } from '../openapi/document.ts';

export interface OpenApiOptions {
  endpoints: readonly EndpointDefinition[];
}

/** /openapi.json generated from the endpoint definitions, and /docs rendering it as HTML. */
export const openApiPlugin: FastifyPluginAsync<OpenApiOptions> = async (app, options) => {
  const document = openApiDocument(options.endpoints);
  const page = docsPage(document);
  app.get('/openapi.json', async () => document);
  app.get('/docs', async (_request, reply) => reply.type('text/html; charset=utf-8').send(page));
};
