import type { Client } from '@elastic/elasticsearch';
import type { FastifyPluginAsync } from 'fastify';
import { SOURCE_NAMES, indexName } from '../../shared/sources.ts';
import { NotReady, StoreUnavailable } from '../errors.ts';

export interface ReadyOptions {
  elasticsearch: Client;
  indexPrefix: string;
}

const CHECK_TIMEOUT_MS = 2000;

/** Readiness: Elasticsearch answers and every source index exists, else 503 naming what is missing. */
export const readyPlugin: FastifyPluginAsync<ReadyOptions> = async (app, options) => {
  const indices = SOURCE_NAMES.map((source) => indexName({ indexPrefix: options.indexPrefix }, source));

  app.get('/ready', async () => {
    let present: boolean[];
    try {
      present = await Promise.all(
        indices.map((index) => options.elasticsearch.indices.exists({ index }, { requestTimeout: CHECK_TIMEOUT_MS })),
      );
    } catch (error) {
      throw new StoreUnavailable(`not ready: Elasticsearch is unreachable (${(error as Error).message})`);
    }
    const missing = indices.filter((_, position) => !present[position]);
    if (missing.length > 0) {
      throw new NotReady(`not ready: missing source indices ${missing.join(', ')}; the ingest worker creates them when it starts`);
    }
    return { status: 'ready', indices };
  });
};
