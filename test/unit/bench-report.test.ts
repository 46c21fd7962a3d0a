import { describe, expect, it } from 'vitest';
import { benchChartSpec, latencyRows, renderBenchChart } from '../../bench/chart.ts';
import { formatBenchMarkdown, formatBenchText, growthRows, markdownTable, pipelineComparisons, pipelineTable } from '../../bench/report.ts';
import type { BenchRun, LoadPoint, QuerySeries } from '../../bench/results.ts';

const point = (concurrency: number, p50Ms: number, requestsPerSecond: number): LoadPoint => ({
  concurrency,
  p50Ms,
  p99Ms: p50Ms * 2,
  requestsPerSecond,
  requests: 1000,
  errors: 0,
});

function sampleRunWith(series: QuerySeries[]): BenchRun {
  const run = sampleRun();
  return { ...run, queries: { ...run.queries!, series } };
}

function sampleRun(): BenchRun {
  return {
    startedAt: '2026-11-21T19:00:00.000Z',
    quick: true,
    machine: { cpus: 2, cpuModel: 'test cpu', memoryGb: 24, node: 'v20.0.0', kafka: '3.9.2', elasticsearch: '8.19.21', peer: 'rsyslog 8.2302' },
    ingest: {
      events: 100_000,
      bytes: 70e6,
      rates: [
        { label: 'ours', eventsPerSecond: 30_000, megabytesPerSecond: 21, seconds: 3.3, cpuSecondsPer100k: 1.5, peakRssMb: 200 },
        { label: 'ceiling', eventsPerSecond: 40_000, megabytesPerSecond: 28, seconds: 2.5 },
        { label: 'consume', eventsPerSecond: 300_000, megabytesPerSecond: 210, seconds: 0.33 },
        { label: 'peer', eventsPerSecond: 24_000, megabytesPerSecond: 17, seconds: 4.2 },
      ],
      freshness: { eventsPerSecond: 15_000, samples: 200, p50Ms: 400, p99Ms: 1200 },
    },
    queries: {
      datasets: [100_000, 1_000_000],
      loadNote: 'bulk-loaded directly',
      series: [
        { name: 'logs.all', side: 'ours', events: 100_000, points: [point(1, 10, 100), point(16, 40, 400)] },
        { name: 'logs.all', side: 'direct', events: 100_000, points: [point(1, 8, 125), point(16, 32, 500)] },
        { name: 'logs.all', side: 'ours', events: 1_000_000, points: [point(1, 15, 66), point(16, 60, 266)] },
        { name: 'usage cached', side: 'ours', events: 100_000, points: [point(16, 1, 8000)] },
        { name: 'usage cached', side: 'bare', events: 100_000, points: [point(16, 0.8, 10_000)] },
        { name: 'sql example 1', side: 'ours', events: 100_000, points: [point(1, 5, 200)] },
        { name: 'sql example 2', side: 'ours', events: 100_000, points: [point(1, 9, 110)] },
        { name: 'sql example 3', side: 'ours', events: 100_000, points: [point(1, 7, 140)] },
      ],
    },
    memory: [{ process: 'worker', phase: 'ingest', peakRssMb: 200 }],
  };
}

describe('bench report', () => {
  it('puts each figure next to its comparison, computed from the run', () => {
    const text = formatBenchText(sampleRun());
    const line = (start: string) => text.split('\n').find((row) => row.startsWith(start))!;
    expect(line('ceiling')).toMatch(/40,000\s+28\.0\s+2\.5\s+0\.75x/);
    expect(line('peer')).toMatch(/1\.25x/);
    expect(line('consume')).toMatch(/0\.10x/);
    // 10 / 8 = 1.25x the direct latency, 100 / 125 = 0.80x its throughput
    expect(text).toMatch(/logs\.all\s+100,000\s+1\s+10\.0\s+20\.0\s+100\s+0\s+1\.25x p50, 0\.80x req\/s/);
    expect(text).toMatch(/usage cached\s+100,000\s+16\s+1\.00\s+2\.00\s+8,000\s+0\s+0\.80x/);
    expect(text).toContain('p50 400 ms, p99 1,200 ms');
    expect(text).toContain('2 CPU (test cpu), 24 GB');
  });

  it('divides the largest data set p50 by the smallest for each endpoint and concurrency', () => {
    expect(growthRows(sampleRun())).toEqual([
      { name: 'logs.all', concurrency: 1, small: 10, large: 15, ratio: 1.5 },
      { name: 'logs.all', concurrency: 16, small: 40, large: 60, ratio: 1.5 },
    ]);
  });

  it('writes Markdown tables whose rows have as many cells as the head', () => {
    const markdown = formatBenchMarkdown(sampleRun());
    for (const block of markdown.split('\n\n').filter((part) => part.startsWith('| '))) {
      const widths = block
        .split('\n')
        .filter(Boolean)
        .map((row) => row.split(/(?<!\\)\|/).length);
      expect(new Set(widths).size).toBe(1);
    }
    expect(markdown).toContain('(`--quick`)');
  });
});

describe('sandboxed SQL against its direct pipeline', () => {
  const series: QuerySeries[] = [
    { name: 'sql example 1', side: 'ours', events: 50_000, points: [point(1, 12, 80), point(16, 100, 140)] },
    { name: 'sql example 1', side: 'direct', events: 50_000, points: [point(1, 6, 160), point(16, 80, 200)] },
    // within both targets: 1.4x the p50, 0.75x the req/s
    { name: 'sql example 2', side: 'ours', events: 50_000, points: [point(1, 7, 140), point(16, 60, 300)] },
    { name: 'sql example 2', side: 'direct', events: 50_000, points: [point(1, 5, 200), point(16, 50, 400)] },
    // no direct side: not compared
    { name: 'sql example 3', side: 'ours', events: 50_000, points: [point(1, 7, 140)] },
    // measured at c=16 only: its p50 cells stay empty
    { name: 'sql example 4', side: 'ours', events: 50_000, points: [point(16, 30, 500)] },
    { name: 'sql example 4', side: 'direct', events: 50_000, points: [point(16, 10, 1000)] },
    // a saved endpoint's direct request is not a pipeline
    { name: 'logs.all', side: 'ours', events: 50_000, points: [point(1, 10, 100)] },
    { name: 'logs.all', side: 'direct', events: 50_000, points: [point(1, 8, 125)] },
  ];

  it('pairs each sandboxed series with its direct pipeline: p50 at c=1, req/s at c=16', () => {
    expect(pipelineComparisons(series)).toEqual([
      { name: 'sql example 1', events: 50_000, oursP50: 12, directP50: 6, oursRate: 140, directRate: 200 },
      { name: 'sql example 2', events: 50_000, oursP50: 7, directP50: 5, oursRate: 300, directRate: 400 },
      { name: 'sql example 4', events: 50_000, oursP50: undefined, directP50: undefined, oursRate: 500, directRate: 1000 },
    ]);
  });

  it('prints the ratios and whether each target is met', () => {
    const table = pipelineTable(series)!;
    expect(table.rows).toEqual([
      ['sql example 1', '50,000', '12.0', '6.00', '2.00x (not met)', '140.0', '200.0', '0.70x (met)'],
      ['sql example 2', '50,000', '7.00', '5.00', '1.40x (met)', '300.0', '400.0', '0.75x (met)'],
      ['sql example 4', '50,000', '', '', '', '500.0', '1,000.0', '0.50x (not met)'],
    ]);
    expect(
      markdownTable(table)
        .split('\n')
        .filter((row) => row.startsWith('| '))
        .map((row) => row.split(/(?<!\\)\|/).length),
    ).toEqual([10, 10, 10, 10]);
  });

  it('is left out when no sandboxed series has a direct side', () => {
    expect(pipelineTable(series.filter((entry) => entry.side === 'ours'))).toBeUndefined();
    expect(formatBenchText({ ...sampleRunWith(series) })).toContain('Sandboxed SQL against its direct pipeline');
  });
});

describe('bench chart', () => {
  it('folds the example SQL series into their median and leaves the consumer out of the ingest bars', () => {
    const rows = latencyRows(sampleRun());
    expect(rows.filter((row) => row.series.startsWith('sql'))).toEqual([
      { series: 'sql examples (median of 3)', side: 'ours', events: '100,000 events', size: 100_000, concurrency: 1, p50: 7 },
    ]);
    const spec = JSON.stringify(benchChartSpec(sampleRun()));
    expect(spec).toContain('"side":"ceiling"');
    expect(spec).not.toContain('"side":"consume"');
  });

  it('renders a PNG', { timeout: 30_000 }, async () => {
    const png = await renderBenchChart(sampleRun());
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    const width = png.readUInt32BE(16);
    const height = png.readUInt32BE(20);
    expect(width).toBeGreaterThan(600);
    expect(height).toBeGreaterThan(300);
  });
});
