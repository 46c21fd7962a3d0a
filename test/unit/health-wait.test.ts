import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { waitForHealth } from '../../scripts/health-wait.ts';

describe("npm start's wait for a service's health", () => {
  it('says why it got no answer: fetch refuses a bad port, an unhealthy service answers its status', async () => {
    await expect(waitForHealth('http://127.0.0.1:4190/health', 'query service', { timeoutMs: 300 })).rejects.toThrow(
      'query service did not answer http://127.0.0.1:4190/health within 0.3 s (last: fetch failed: bad port)',
    );
    const server = createServer((_, response) => response.writeHead(503).end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/health`;
    try {
      await expect(waitForHealth(url, 'ingest worker', { timeoutMs: 300 })).rejects.toThrow(`(last: answered 503)`);
    } finally {
      server.close();
    }
  });

  it('returns once the service answers 2xx', async () => {
    const server = createServer((_, response) => response.writeHead(200).end('{}'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      await expect(
        waitForHealth(`http://127.0.0.1:${(server.address() as AddressInfo).port}/health`, 'query service', { timeoutMs: 5000 }),
      ).resolves.toBeUndefined();
    } finally {
      server.close();
    }
  });
});
