import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface HealthReport {
  status: 'consuming' | 'starting' | 'stopping' | 'failed';
  heldPartitions: number;
}

/** GET /health (200 only while consuming) and GET /metrics (Prometheus text). */
export async function startStatusServer(host: string, port: number, health: () => HealthReport, registry: Registry): Promise<{ server: Server; port: number }> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET') {
      response.writeHead(405, { 'content-type': 'application/json; charset=utf-8', allow: 'GET' }).end(JSON.stringify({ error: { code: 'method_not_allowed', message: 'only GET is served here' } }));
    } else if (path === '/health') {
      const report = health();
      response.writeHead(report.status === 'consuming' ? 200 : 503, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(report));
    } else if (path === '/metrics') {
      registry.metrics().then(
        (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
        (error: Error) => response.writeHead(500, { 'content-type': 'text/plain' }).end(error.message),
      );
    } else {
      response.writeHead(404, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify({ error: { code: 'not_found', message: 'the ingest worker serves GET /health and GET /metrics' } }));
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return { server, port: (server.address() as AddressInfo).port };
}
