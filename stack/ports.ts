import { readFileSync } from 'node:fs';
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

/** Ports a free one is picked from: below Linux's ephemeral range (32768-60999 by default). */
const PICKED_PORTS = { from: 20_000, below: 32_768 };

/**
 * The first port of the kernel's ephemeral range, from which it also takes outgoing connections'
 * local ports (undefined where /proc does not say).
 */
function ephemeralStart(): number | undefined {
  try {
    const start = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(start) && start > 0 ? start : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A port to try for "any free port": picked below the ephemeral range, where no outgoing connection
 * can take it while its server is stopped for a restart in place (the fault suites stop and start
 * Elasticsearch and Kafka on the same ports); 0 (the kernel's choice) where that range is unknown or low.
 */
function candidatePort(): number {
  const below = Math.min(PICKED_PORTS.below, ephemeralStart() ?? 0);
  if (below - PICKED_PORTS.from < 1000) return 0;
  return PICKED_PORTS.from + Math.floor(Math.random() * (below - PICKED_PORTS.from));
}

/**
 * Fails with the variable to change when a configured port is taken; port 0 picks a free one,
 * different from the ports already in `claimed`.
 */
export async function claimPort(port: number, purpose: string, variable: string, claimed: Set<number>): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const bound = await tryListen(port === 0 ? candidatePort() : port);
    if (bound === null) {
      // a picked port someone else holds: pick again
      if (port === 0) continue;
      throw new StackError(`port ${port} on 127.0.0.1 (${purpose}) is already in use: stop what holds it or set ${variable} to another port`);
    }
    if (!claimed.has(bound)) {
      claimed.add(bound);
      return bound;
    }
    if (port !== 0) break;
  }
  throw new StackError(
    port === 0 ? `no free port found for ${purpose} in 20 tries` : `port ${port} (${purpose}) is configured twice: give ${variable} its own port`,
  );
}
