import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { describe, expect, it } from 'vitest';
import { claimPort } from '../../stack/ports.ts';

const ephemeralStart = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);

describe('claimPort', () => {
  it('picks "any free port" below the ephemeral range, where no outgoing connection takes it during a restart in place', async () => {
    const claimed = new Set<number>();
    const ports = [];
    for (let i = 0; i < 10; i += 1) ports.push(await claimPort(0, 'test', 'NONE', claimed));
    expect(new Set(ports).size).toBe(10);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(20_000);
      expect(port).toBeLessThan(Math.min(32_768, ephemeralStart));
    }
  });

  it('names the variable when a configured port is taken', async () => {
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen({ port: 0, host: '127.0.0.1' }, resolve));
    const port = (holder.address() as { port: number }).port;
    try {
      await expect(claimPort(port, 'elasticsearch http', 'STACK_ELASTICSEARCH_PORT', new Set())).rejects.toThrow(/already in use.*STACK_ELASTICSEARCH_PORT/);
    } finally {
      holder.close();
    }
  });
});
