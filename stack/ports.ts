import { createServer } from 'node:net';
import { StackError } from './server-process.ts';

function tryListen(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(null));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => {
      const address = server.address();
      const bound = typeof address === 'object' && address ? address.port : null;
      server.close(() => resolve(bound));
    });
  });
}

/**
 * Fails with the variable to change when a configured port is taken; port 0 picks a free one,
 * different from the ports already in `claimed`.
 */
export async function claimPort(port: number, purpose: string, variable: string, claimed: Set<number>): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const bound = await tryListen(port);
    if (bound === null) {
      throw new StackError(`port ${port} on 127.0.0.1 (${purpose}) is already in use: stop what holds it or set ${variable} to another port`);
    }
    if (!claimed.has(bound)) {
      claimed.add(bound);
      return bound;
    }
    if (port !== 0) break;
  }
  throw new StackError(`port ${port} (${purpose}) is configured twice: give ${variable} its own port`);
}
