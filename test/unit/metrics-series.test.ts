import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CountedCounter, CountedHistogram } from '../../src/metrics-series.ts';

const BOUNDS = [0.001, 0.01, 0.1, 1];

/** The same updates made to prom-client's own metrics and to ours, each in a registry of its own. */
function both() {
  const theirs = new Registry();
  const ours = new Registry();
  const counter = new Counter({ name: 'requests_total', help: 'Requests', labelNames: ['endpoint', 'status'], registers: [theirs] });
  const histogram = new Histogram({ name: 'request_seconds', help: 'Time', labelNames: ['endpoint'], buckets: BOUNDS, registers: [theirs] });
  const countedCounter = new CountedCounter('requests_total', 'Requests', ['endpoint', 'status']);
  const countedHistogram = new CountedHistogram('request_seconds', 'Time', ['endpoint'], BOUNDS);
  ours.registerMetric(countedCounter as never);
  ours.registerMetric(countedHistogram as never);
  return {
    theirs,
    ours,
    inc: (labels: Record<string, string>, by?: number) => {
      counter.inc(labels, by);
      countedCounter.inc(labels, by);
    },
    observe: (labels: Record<string, string>, value: number) => {
      histogram.observe(labels, value);
      countedHistogram.observe(labels, value);
    },
  };
}

describe('counted metrics', () => {
  it("print what prom-client's counter and histogram print for the same updates", async () => {
    const { theirs, ours, inc, observe } = both();
    inc({ endpoint: 'logs.all', status: '200' });
    inc({ endpoint: 'logs.all', status: '200' }, 3);
    inc({ endpoint: 'logs.all', status: '400' }, 0);
    inc({ endpoint: 'usage "a\\b"\n', status: '200' }, 2.5);
    for (const value of [0, 0.001, 0.0011, 0.5, 1, 7]) observe({ endpoint: 'logs.all' }, value);
    observe({ endpoint: 'other' }, 0.02);
    expect(await ours.metrics()).toBe(await theirs.metrics());
    // prom-client's values carry exemplar fields too, empty without exemplars
    const withoutExemplars = (metrics: Awaited<ReturnType<Registry['getMetricsAsJSON']>>) =>
      metrics.map((metric) => ({
        ...metric,
        values: metric.values.map((entry) => ({ labels: entry.labels, value: entry.value, metricName: (entry as { metricName?: string }).metricName })),
      }));
    expect(withoutExemplars(await ours.getMetricsAsJSON())).toEqual(withoutExemplars(await theirs.getMetricsAsJSON()));
  });

  it('keep a series per label set, whatever object carried the labels, and forget them on reset', async () => {
    const counter = new CountedCounter('c', 'C', ['endpoint', 'key_id']);
    const labels = { endpoint: 'a', key_id: 'k' };
    counter.inc(labels);
    labels.key_id = 'changed after counting';
    counter.inc({ key_id: 'k', endpoint: 'a' });
    counter.inc({ endpoint: 'a', key_id: 'k' }, Number.NaN);
    counter.inc({ endpoint: 'a', key_id: 'k' }, -1);
    expect((await counter.get()).values).toEqual([{ labels: { endpoint: 'a', key_id: 'k' }, value: 2 }]);
    counter.reset();
    expect((await counter.get()).values).toEqual([]);
  });
});
