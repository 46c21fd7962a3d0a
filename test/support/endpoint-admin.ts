import { endpointIndexName } from '../../src/endpoints/store.ts';
import type { StoredEvent } from '../../shared/event-index.ts';
import { edgeEvent, startEndpointServer, storedTimestamp, type EndpointTestServer } from './endpoint-server.ts';

/**
 * A query service whose management API takes `opsToken`, refreshing its endpoint view every 0.2 s,
 * with three edge events of project p1 a minute apart before `now` (two /rest/, one /auth/) and
 * any `extra` beside them.
 */
export async function startEndpointAdminServer(now: number, opsToken: string, extra: StoredEvent[] = []): Promise<EndpointTestServer> {
  const server = await startEndpointServer({ now, overrides: { OPS_TOKEN: opsToken, ENDPOINT_REFRESH_SECONDS: '0.2' } });
  await server.index('edge_logs', [
    edgeEvent('e1', storedTimestamp(now - 60_000), 'p1', { url: 'https://x.test/rest/v1/a', path: '/rest/v1/a' }),
    edgeEvent('e2', storedTimestamp(now - 120_000), 'p1', { url: 'https://x.test/auth/v1/b', path: '/auth/v1/b' }),
    edgeEvent('e3', storedTimestamp(now - 180_000), 'p1', { url: 'https://x.test/rest/v1/c', path: '/rest/v1/c' }),
    ...extra,
  ]);
  return server;
}

/** How many endpoint versions (and name claims) the store holds, after a refresh. */
export async function storedDocumentCount(server: EndpointTestServer): Promise<number> {
  const index = endpointIndexName(server.config.INDEX_PREFIX);
  await server.elasticsearch.indices.refresh({ index });
  return (await server.elasticsearch.count({ index })).count;
}
