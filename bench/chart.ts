import { createRequire } from 'node:module';
import path from 'node:path';
import { Resvg } from '@resvg/resvg-js';
import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import type { BenchRun, QuerySeries } from './results.ts';

/**
 * The chart of one `npm run bench`: ingest events/s for ours, the ceiling and the peer (the bare
 * consumer is left to the table: ten times the others, it would flatten their bars), and p50
 * latency against concurrency for every query series, one panel per data set, Elasticsearch sent
 * directly and the bare fastify route dashed. Drawn with Vega-Lite to SVG, then to PNG by resvg with a
 * font shipped in an npm package, so nothing depends on fonts or a canvas installed on the machine.
 */

const SQL_EXAMPLE = /^sql example\b/;

interface LatencyRow {
  series: string;
  side: QuerySeries['side'];
  events: string;
  /** The data set size as a number, to order the panels. */
  size: number;
  concurrency: number;
  p50: number;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!;

/** One row per series point; the example SQL queries are folded into their median so twenty lines do not hide the rest. */
export function latencyRows(run: BenchRun): LatencyRow[] {
  const rows: LatencyRow[] = [];
  const examples = new Map<string, number[]>();
  for (const series of run.queries?.series ?? []) {
    for (const point of series.points) {
      const events = `${series.events.toLocaleString('en-US')} events`;
      if (SQL_EXAMPLE.test(series.name)) {
        const key = JSON.stringify([series.side, events, series.events, point.concurrency]);
        examples.set(key, [...(examples.get(key) ?? []), point.p50Ms]);
      } else {
        rows.push({ series: series.name, side: series.side, events, size: series.events, concurrency: point.concurrency, p50: point.p50Ms });
      }
    }
  }
  for (const [key, values] of examples) {
    const [side, events, size, concurrency] = JSON.parse(key) as [QuerySeries['side'], string, number, number];
    rows.push({ series: `sql examples (median of ${values.length})`, side, events, size, concurrency, p50: median(values) });
  }
  return rows;
}

export function benchChartSpec(run: BenchRun): TopLevelSpec {
  const ingest = (run.ingest?.rates ?? [])
    .filter((rate) => rate.label !== 'consume')
    .map((rate) => ({ side: rate.label, eventsPerSecond: Math.round(rate.eventsPerSecond) }));
  const panels: object[] = [];
  if (ingest.length > 0) {
    panels.push({
      title: `Ingest: events/s, ${(run.ingest!.events).toLocaleString('en-US')} events, Kafka to searchable`,
      data: { values: ingest },
      width: 520,
      height: 24 * ingest.length,
      layer: [
        {
          mark: { type: 'bar', color: '#4c78a8' },
          encoding: {
            y: { field: 'side', type: 'nominal', sort: null, title: null },
            x: { field: 'eventsPerSecond', type: 'quantitative', title: 'events/s' },
          },
        },
        {
          mark: { type: 'text', align: 'left', dx: 4 },
          encoding: {
            y: { field: 'side', type: 'nominal', sort: null },
            x: { field: 'eventsPerSecond', type: 'quantitative' },
            text: { field: 'eventsPerSecond', type: 'quantitative', format: ',' },
          },
        },
      ],
    });
  }
  const latency = latencyRows(run);
  if (latency.length > 0) {
    panels.push({
      title: 'Queries: p50 latency against concurrency (solid: ours; dashed: Elasticsearch directly, bare fastify)',
      data: { values: latency },
      facet: { column: { field: 'events', type: 'nominal', title: null, sort: { field: 'size', op: 'min' } } },
      spec: {
        width: 300,
        height: 260,
        mark: { type: 'line', point: true },
        encoding: {
          x: { field: 'concurrency', type: 'quantitative', scale: { type: 'log' }, axis: { values: [1, 4, 16, 64] }, title: 'concurrency' },
          y: { field: 'p50', type: 'quantitative', scale: { type: 'log' }, title: 'p50 ms' },
          color: { field: 'series', type: 'nominal', legend: { columns: 1, labelLimit: 320 } },
          strokeDash: { field: 'side', type: 'nominal', sort: ['ours', 'direct', 'bare'], legend: { symbolType: 'stroke', symbolStrokeColor: '#333' } },
          detail: { field: 'side' },
        },
      },
    });
  }
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: `npm run bench${run.quick ? ' --quick' : ''}, ${run.startedAt.slice(0, 16).replace('T', ' ')} UTC, ${run.machine.cpus} CPU`,
    background: 'white',
    padding: 12,
    vconcat: panels,
    config: { font: 'DejaVu Sans' },
  } as TopLevelSpec;
}

export async function renderBenchChart(run: BenchRun): Promise<Buffer> {
  const view = new vega.View(vega.parse(compile(benchChartSpec(run)).spec), { renderer: 'none' });
  const svg = await view.toSVG();
  view.finalize();
  const fontDir = path.join(path.dirname(createRequire(import.meta.url).resolve('dejavu-fonts-ttf/package.json')), 'ttf');
  const fonts = ['DejaVuSans.ttf', 'DejaVuSans-Bold.ttf'].map((file) => path.join(fontDir, file));
  return new Resvg(svg, {
    font: { fontFiles: fonts, loadSystemFonts: false, defaultFontFamily: 'DejaVu Sans' },
    background: 'white',
    fitTo: { mode: 'zoom', value: 1.5 },
  })
    .render()
    .asPng();
}
