import { afterEach, describe, expect, it } from 'vitest';
import { metricsRegistry } from '../../src/metrics.ts';
import { RequestCounts } from '../../src/plugins/metrics.ts';

/** The request path's series as /metrics prints them. */
async function requestSeries(): Promise<string[]> {
  return (await metricsRegistry.metrics()).split('\n').filter((line) => /^(http_request|endpoint_)/.test(line));
}

describe("the cached lane's kept series (RequestCounts.answered)", () => {
  afterEach(() => metricsRegistry.resetMetrics());

  it('count what request and usage count for a 200, series for series', async () => {
    metricsRegistry.resetMetrics();
    const counts = new RequestCounts(10, 10);
    for (const seconds of [0.0004, 0.03, 2]) {
      counts.request('usage.api-counts', '200', seconds);
      counts.usage('usage.api-counts', 'k1', '200', seconds, 7, 311);
    }
    const viaCalls = await requestSeries();
    metricsRegistry.resetMetrics();
    const answered = new RequestCounts(10, 10).answered('usage.api-counts', 'k1');
    for (const seconds of [0.0004, 0.03, 2]) answered.count(seconds, 7, 311);
    expect(viaCalls).toContain('endpoint_rows_returned_total{endpoint="usage.api-counts",key_id="k1"} 21');
    expect(await requestSeries()).toEqual(viaCalls);
  });

  it('label an endpoint or key past the bound as the calls do', async () => {
    metricsRegistry.resetMetrics();
    const counts = new RequestCounts(1, 1);
    counts.usage('first', 'k0', '200', 0.01, 1, 1);
    counts.answered('second', 'k1').count(0.01, 1, 1);
    expect(await requestSeries()).toContain('endpoint_requests_total{endpoint="other",key_id="other",status="200"} 1');
  });

  it('move the series /metrics prints after a reset, not the ones it dropped', async () => {
    const answered = new RequestCounts(10, 10).answered('usage.api-counts', 'k1');
    answered.count(0.01, 1, 10);
    metricsRegistry.resetMetrics();
    answered.count(0.01, 1, 10);
    expect(await requestSeries()).toContain('http_requests_total{endpoint="usage.api-counts",status="200"} 1');
    expect(await requestSeries()).toContain('endpoint_bytes_returned_total{endpoint="usage.api-counts",key_id="k1"} 10');
  });
});
