import type { Client } from '@elastic/elasticsearch';
import type { FastifyPluginAsync } from 'fastify';
import { eventIndexTemplateName } from '../../shared/event-index.ts';
import { NotReady, StoreUnavailable } from '../errors.ts';
import { errorResponses, NO_CREDENTIAL } from '../http/route-schemas.ts';

export interface ReadyOptions {
  elasticsearch: Client;
  indexPrefix: string;
}

const CHECK_TIMEOUT_MS = 2000;

const READY_SCHEMA = {
  summary: 'Readiness',
  description: 'Elasticsearch answers and the event index template is installed.',
  tags: ['operations'],
  security: NO_CREDENTIAL,
  response: {
    200: {
      description: 'Ready to answer queries',
      type: 'object',
      required: ['status', 'template'],
      properties: { status: { type: 'string', enum: ['ready'] }, template: { type: 'string', description: 'The event index template found' } },
    },
    ...errorResponses({ 503: 'Not ready: Elasticsearch unreachable (store_unavailable) or the index template missing (not_ready)' }),
  },
};

/**
 * Readiness: Elasticsearch answers and the event index template is installed, else 503 naming what
 * is missing. Partitions come and go with time and retention, so none of them is required: a
 * source without any answers empty.
 */
export const readyPlugin: FastifyPluginAsync<ReadyOptions> = async (app, options) => {
  const template = eventIndexTemplateName(options.indexPrefix);

  app.get('/ready', { schema: READY_SCHEMA }, async () => {
    let installed: boolean;
    try {
      installed = await options.elasticsearch.indices.existsIndexTemplate({ name: template }, { requestTimeout: CHECK_TIMEOUT_MS });
    } catch (error) {
      throw new StoreUnavailable(`not ready: Elasticsearch is unreachable (${(error as Error).message})`);
    }
    if (!installed) {
      throw new NotReady(`not ready: the index template ${template} is not installed; the ingest worker installs it when it starts`);
    }
    return { status: 'ready', template };
  });
};
