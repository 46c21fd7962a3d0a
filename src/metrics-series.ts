/**
 * Counters and histograms for the request path, counted in plain objects per label set and read by
 * prom-client only when /metrics is scraped. prom-client's own inc and observe check and hash the
 * labels on every call: the six updates of each answer were 16 us of a cached answer's CPU. Each
 * series is found by its label values joined, and its labels object is kept from its first update.
 * Registered with registerMetric, they print exactly as prom-client's Counter and Histogram do.
 */
type Labels = Record<string, string>;

interface MetricValue {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

interface MetricData {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  values: MetricValue[];
}

// a character no label value of ours holds (endpoint names, routes, key ids, status codes)
const SEPARATOR = '\u0000';

/** Resets of any counted metric so far: a series a caller kept (seriesFor) is no longer its metric's once this moves. */
let resets = 0;
export const seriesResets = (): number => resets;

/** The series key of `labels`: their values in the metric's label order. */
function seriesKey(labelNames: readonly string[], labels: Labels): string {
  let key = '';
  for (const name of labelNames) key += `${labels[name]}${SEPARATOR}`;
  return key;
}

abstract class CountedMetric<Series> {
  readonly aggregator = 'sum';
  protected readonly series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {}

  protected seriesOf(labels: Labels, make: () => Series): Series {
    const key = seriesKey(this.labelNames, labels);
    let found = this.series.get(key);
    if (found === undefined) {
      found = make();
      this.series.set(key, found);
    }
    return found;
  }

  reset(): void {
    this.series.clear();
    resets += 1;
  }
}

/** A Prometheus counter: `inc` adds to the series of `labels`. */
export class CountedCounter extends CountedMetric<{ labels: Labels; value: number }> {
  readonly type = 'counter';

  /** Adds `by` (default 1); a negative or non-finite amount is no count and is left out. */
  inc(labels: Labels, by = 1): void {
    this.addIn(this.seriesFor(labels), by);
  }

  /** Adds `by` to a series seriesFor gave; a negative or non-finite amount is no count and is left out. */
  addIn(series: { value: number }, by: number): void {
    if (by >= 0 && by < Infinity) series.value += by;
  }

  /** The series of `labels` itself, for a caller that adds to it on every request: kept until seriesResets() moves. */
  seriesFor(labels: Labels): { labels: Labels; value: number } {
    return this.seriesOf(labels, () => ({ labels: { ...labels }, value: 0 }));
  }

  async get(): Promise<MetricData> {
    const values = [...this.series.values()].map((series) => ({ labels: series.labels, value: series.value }));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

export interface HistogramSeries {
  labels: Labels;
  /** Observations per bucket, not cumulative; the last one past every bound. */
  counts: number[];
  sum: number;
  count: number;
}

/** A Prometheus histogram over fixed upper bounds: `observe` counts a value in the series of `labels`. */
export class CountedHistogram extends CountedMetric<HistogramSeries> {
  readonly type = 'histogram';

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    private readonly bounds: readonly number[],
  ) {
    super(name, help, labelNames);
  }

  observe(labels: Labels, value: number): void {
    if (Number.isFinite(value)) this.observeIn(this.seriesFor(labels), value);
  }

  /** The series of `labels` itself, for observeIn: kept until seriesResets() moves. */
  seriesFor(labels: Labels): HistogramSeries {
    return this.seriesOf(labels, () => ({ labels: { ...labels }, counts: new Array<number>(this.bounds.length + 1).fill(0), sum: 0, count: 0 }));
  }

  /** Counts a finite `value` in a series seriesFor gave. */
  observeIn(series: HistogramSeries, value: number): void {
    let bucket = 0;
    while (bucket < this.bounds.length && value > this.bounds[bucket]!) bucket += 1;
    series.counts[bucket]! += 1;
    series.sum += value;
    series.count += 1;
  }

  async get(): Promise<MetricData> {
    const values: MetricValue[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const series of this.series.values()) {
      let cumulative = 0;
      this.bounds.forEach((bound, position) => {
        cumulative += series.counts[position]!;
        values.push({ metricName: bucketName, labels: { le: bound, ...series.labels }, value: cumulative });
      });
      values.push({ metricName: bucketName, labels: { le: '+Inf', ...series.labels }, value: series.count });
      values.push({ metricName: `${this.name}_sum`, labels: series.labels, value: series.sum });
      values.push({ metricName: `${this.name}_count`, labels: series.labels, value: series.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
