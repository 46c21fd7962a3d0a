import type { Client } from '@elastic/elasticsearch';
import type { FastifyPluginAsync } from 'fastify';
import { eventIndexTemplateName } from '../../shared/event-index.ts';
import { NotReady, StoreUnavailable } from '../errors.ts';

export interface ReadyOptions {
  elasticsearch: Client;
  indexPrefix: string;
}

const CHECK_TIMEOUT_MS = 2000;

/**
 * Readiness: Elasticsearch answers and the event index template is installed, else 503 naming what
 * is missing. Partitions come and go with time and retention, so none of them is required: a
 * source without any answers empty.
 */
export const readyPlugin: FastifyPluginAsync<ReadyOptions> = async (app, options) => {
  const template = eventIndexTemplateName(options.indexPrefix);

  app.get('/ready', async () => {
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
