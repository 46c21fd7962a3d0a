import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { OPS_TOKEN_REQUIRED, type OpsAccess } from '../shared/ops-access.ts';

export interface HealthReport {
  status: 'consuming' | 'starting' | 'stopping' | 'failed';
  heldPartitions: number;
}

/**
 * GET /health (200 only while consuming) and GET /metrics (Prometheus text). With an operator token
 * configured, /metrics needs it and /health tells others only its status.
 */
export async function startStatusServer(
  host: string,
  port: number,
  health: () => HealthReport,
  registry: Registry,
  allowed: OpsAccess,
): Promise<{ server: Server; port: number }> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET') {
      response
        .writeHead(405, { 'content-type': 'application/json; charset=utf-8', allow: 'GET' })
        .end(JSON.stringify({ error: { code: 'method_not_allowed', message: 'only GET is served here' } }));
    } else if (path === '/health') {
      const report = health();
      const body = allowed(request.headers.authorization) ? report : { status: report.status };
      response.writeHead(report.status === 'consuming' ? 200 : 503, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));
    } else if (path === '/metrics' && !allowed(request.headers.authorization)) {
      response
        .writeHead(401, { 'content-type': 'application/json; charset=utf-8', 'www-authenticate': 'Bearer' })
        .end(JSON.stringify({ error: { code: 'unauthorized', message: OPS_TOKEN_REQUIRED } }));
    } else if (path === '/metrics') {
      registry.metrics().then(
        (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
        (error: Error) => response.writeHead(500, { 'content-type': 'text/plain' }).end(error.message),
      );
    } else {
      response
        .writeHead(404, { 'content-type': 'application/json; charset=utf-8' })
        .end(JSON.stringify({ error: { code: 'not_found', message: 'the ingest worker serves GET /health and GET /metrics' } }));
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return { server, port: (server.address() as AddressInfo).port };
}
