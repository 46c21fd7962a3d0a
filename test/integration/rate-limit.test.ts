import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsRegistry } from '../../src/metrics.ts';
import { BOOTSTRAP_KEY, edgeEvent, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';

const request = { url: 'https://abc.supabase.co/rest/v1/t', path: '/rest/v1/t' };

async function rateLimitedCount(endpoint: string): Promise<number> {
  const metric = await metricsRegistry.getSingleMetric('http_rate_limited_total')!.get();
  return metric.values.find((value) => value.labels.endpoint === endpoint)?.value ?? 0;
}

describe('per-key rate limit on the real query route', () => {
  let server: EndpointTestServer;
  let otherKey: string;

  // 6 per minute = one token every 10 s, 3 at once
  beforeAll(async () => {
    server = await startEndpointServer({ now: Date.UTC(2024, 0, 2), overrides: { RATE_LIMIT_PER_MINUTE: '6', RATE_LIMIT_BURST: '3' } });
    await server.index('edge_logs', [edgeEvent('only', '2024-01-01T00:00:00.000000Z', 'abc', request)]);
    otherKey = await server.createKey({});
  });

  afterAll(async () => {
    await server.close();
  });

  const logs = (key: string) =>
    server.app.inject({ method: 'GET', url: '/api/endpoints/query/logs.all', query: { project: 'abc' }, headers: { 'x-api-key': key } });

  it('passes the burst, refuses the next with 429, leaves other keys alone, and lets the key through once time has passed', async () => {
    const before = await rateLimitedCount('logs.all');
    for (const remaining of ['2', '1', '0']) {
      const response = await logs(BOOTSTRAP_KEY);
      expect(response.statusCode).toBe(200);
      expect(response.json().result.map((row: { id: string }) => row.id)).toEqual(['only']);
      expect(response.headers['x-ratelimit-limit']).toBe('3');
      expect(response.headers['x-ratelimit-remaining']).toBe(remaining);
    }

    const refused = await logs(BOOTSTRAP_KEY);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('10');
    expect(refused.headers['content-type']).toMatch(/^application\/json/);
    expect(refused.json()).toEqual({
      error: { code: 'rate_limited', message: 'rate limit exceeded for this API key: 6 requests per minute with bursts of 3; retry in 10 s' },
    });
    expect(await rateLimitedCount('logs.all')).toBe(before + 1);

    const other = await logs(otherKey);
    expect(other.statusCode).toBe(200);
    expect(other.headers['x-ratelimit-remaining']).toBe('2');

    await server.clock.advance(4_000);
    const stillRefused = await logs(BOOTSTRAP_KEY);
    expect(stillRefused.statusCode).toBe(429);
    expect(stillRefused.headers['retry-after']).toBe('6');

    await server.clock.advance(6_000);
    const again = await logs(BOOTSTRAP_KEY);
    expect(again.statusCode).toBe(200);
    expect(again.json().result).toHaveLength(1);
    expect((await logs(BOOTSTRAP_KEY)).statusCode).toBe(429);
  });

  it('never limits /health, /ready, /metrics or the docs, even for a spent key', async () => {
    while ((await logs(otherKey)).statusCode !== 429);
    for (const url of ['/health', '/ready', '/metrics', '/openapi.json', '/docs']) {
      for (let i = 0; i < 5; i += 1) {
        const response = await server.app.inject({ method: 'GET', url, headers: { 'x-api-key': otherKey } });
        expect(response.statusCode, url).not.toBe(429);
        expect(response.headers['x-ratelimit-limit'], url).toBeUndefined();
      }
    }
  });
});
