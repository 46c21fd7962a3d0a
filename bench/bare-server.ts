import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

/**
 * The ceiling for a cached answer: a fastify route with no hooks that sends fixed bytes, one route
 * per file given (`GET /bare/<position>`). Run as its own process by the query benchmark.
 *
 *   tsx bench/bare-server.ts <body file>...
 */
const bodies = process.argv.slice(2).map((file) => readFileSync(file));
const app = Fastify({ logger: false });
bodies.forEach((body, position) => {
  app.get(`/bare/${position}`, (_request, reply) => {
    void reply.header('content-type', 'application/json; charset=utf-8').send(body);
  });
});
const address = await app.listen({ host: '127.0.0.1', port: 0 });
console.log(`bare: ${address}`);
const close = () => void app.close().then(() => process.exit(0));
process.once('SIGTERM', close);
process.once('SIGINT', close);
