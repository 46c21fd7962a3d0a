import type { FastifyPluginAsync } from 'fastify';
import type { EndpointDefinition } from '../../queries/endpoint.ts';
import { docsPage } from '../openapi/docs-page.ts';
import { openApiDocument } from '../openapi/document.ts';

export interface OpenApiOptions {
  /** The endpoints served now: operators add and change them while the service runs. */
  endpoints: () => Promise<readonly EndpointDefinition[]>;
}

/** /openapi.json generated from the endpoint definitions, and /docs rendering it as HTML. */
export const openApiPlugin: FastifyPluginAsync<OpenApiOptions> = async (app, options) => {
  app.get('/openapi.json', async () => openApiDocument(await options.endpoints()));
  app.get('/docs', async (_request, reply) => reply.type('text/html; charset=utf-8').send(docsPage(openApiDocument(await options.endpoints()))));
};
