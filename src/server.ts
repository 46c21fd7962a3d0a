import type { Client } from '@elastic/elasticsearch';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Config } from '../shared/config.ts';
import type { Logger } from '../shared/logger.ts';
import { installErrorHandler } from './http/error-handler.ts';
import { healthPlugin } from './plugins/health.ts';

export interface ServerDependencies {
  config: Config;
  logger: Logger;
  elasticsearch: Client;
  kafkaBrokers: string[];
}

/** Sandboxed SQL arrives in the query string: accept URLs well beyond the 16 KiB clients send. */
const MAX_URL_BYTES = 64 * 1024;

export async function buildServer(deps: ServerDependencies): Promise<FastifyInstance> {
  const app: FastifyInstance = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    routerOptions: { maxParamLength: 512 },
    bodyLimit: 1024 * 1024,
    http: { maxHeaderSize: MAX_URL_BYTES + 16 * 1024 },
    requestIdHeader: 'x-request-id',
  });
  installErrorHandler(app);
  await app.register(healthPlugin, { elasticsearch: deps.elasticsearch, kafkaBrokers: deps.kafkaBrokers });
  return app;
}
