import { ingestTargets } from './ingest-targets.ts';
import type { BenchRun, IngestRate, LoadPoint, QuerySeries } from './results.ts';

/**
 * The table `npm run bench` prints and docs/benchmarks.md shows: every figure next to what it is compared
 * with (the ceiling, the Kafka side, the peer, Elasticsearch sent directly, a bare fastify route),
 * computed from one run's results only. Pure: the same run always gives the same text.
 */

export type Table = { title: string; head: string[]; rows: string[][]; notes?: string[] };

const number = (value: number, digits = 0) => value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ratio = (value: number | undefined) => (value === undefined || !Number.isFinite(value) ? 'n/a' : `${value.toFixed(2)}x`);
const ms = (value: number) => (value < 10 ? value.toFixed(2) : value.toFixed(1));

function ingestTable(run: BenchRun): Table | undefined {
  const ingest = run.ingest;
  if (!ingest) return undefined;
  const ours = ingest.rates.find((rate) => rate.label === 'ours');
  const rows = ingest.rates.map((rate: IngestRate) => [
    rate.label,
    number(rate.eventsPerSecond),
    number(rate.megabytesPerSecond, 1),
    number(rate.seconds, 1),
    rate.cpuSecondsPer100k === undefined ? '' : number(rate.cpuSecondsPer100k, 2),
    rate.peakRssMb === undefined ? '' : number(rate.peakRssMb),
    // ours against each other side: above 1 we are faster
    ours && rate !== ours ? ratio(ours.eventsPerSecond / rate.eventsPerSecond) : '',
    rate.storeCpuSecondsPer100k === undefined ? '' : number(rate.storeCpuSecondsPer100k, 2),
    rate.machineIdle === undefined ? '' : `${Math.round(rate.machineIdle * 100)}%`,
    rate.note ?? '',
  ]);
  const notes = [`${number(ingest.events)} events, ${number(ingest.bytes / 1e6, 1)} MB of JSON, produced into Kafka before the clock starts`];
  if (ingest.peerSkipped) notes.push(`peer not measured: ${ingest.peerSkipped}`);
  for (const fresh of [ingest.freshnessSlow, ingest.freshness]) {
    if (fresh)
      notes.push(
        `produce-to-searchable at ${number(fresh.eventsPerSecond)} events/s: p50 ${number(fresh.p50Ms)} ms, p99 ${number(fresh.p99Ms)} ms (${number(fresh.samples)} markers)`,
      );
  }
  return {
    title: 'Ingest',
    head: ['side', 'events/s', 'MB/s', 'seconds', 'CPU s / 100k', 'peak RSS MB', 'ours / this', 'Elasticsearch CPU s / 100k', 'machine idle', 'note'],
    rows,
    notes,
  };
}

function ingestTargetsTable(run: BenchRun): Table | undefined {
  if (!run.ingest) return undefined;
  return {
    title: 'Ingest targets (issue 21)',
    head: ['target', 'this run', 'verdict'],
    rows: ingestTargets(run.ingest).map((target) => [target.target, target.figure, target.verdict]),
  };
}

const pointAt = (series: QuerySeries | undefined, concurrency: number): LoadPoint | undefined =>
  series?.points.find((point) => point.concurrency === concurrency);

/** The comparison series for `series`: same name and data set, the other side. */
function counterpart(all: QuerySeries[], series: QuerySeries, side: QuerySeries['side']): QuerySeries | undefined {
  return all.find((other) => other.side === side && other.name === series.name && other.events === series.events);
}

function queryTable(run: BenchRun): Table | undefined {
  const queries = run.queries;
  if (!queries) return undefined;
  const rows: string[][] = [];
  for (const series of queries.series.filter((entry) => entry.side === 'ours')) {
    const direct = counterpart(queries.series, series, 'direct');
    const bare = counterpart(queries.series, series, 'bare');
    for (const point of series.points) {
      const directPoint = pointAt(direct, point.concurrency);
      const barePoint = pointAt(bare, point.concurrency);
      rows.push([
        series.name,
        number(series.events),
        String(point.concurrency),
        ms(point.p50Ms),
        ms(point.p99Ms),
        number(point.requestsPerSecond),
        String(point.errors),
        // latency: ours over direct (1.00x = no overhead); throughput: ours over bare (1.00x = as fast)
        directPoint ? `${ratio(point.p50Ms / directPoint.p50Ms)} p50, ${ratio(point.requestsPerSecond / directPoint.requestsPerSecond)} req/s` : '',
        barePoint ? ratio(point.requestsPerSecond / barePoint.requestsPerSecond) : '',
      ]);
    }
  }
  return {
    title: 'Queries',
    head: ['series', 'events', 'conc.', 'p50 ms', 'p99 ms', 'req/s', 'errors', 'ours / direct ES', 'ours / bare fastify (req/s)'],
    rows,
    notes: [queries.loadNote],
  };
}

/** Issue 20's targets for a sandboxed query against its direct pipeline: p50 at c=1 within 1.5x, req/s at c=16 at least 0.7x. */
export const PIPELINE_TARGETS = { p50Ratio: 1.5, rateRatio: 0.7 };

export interface PipelineComparison {
  name: string;
  events: number;
  /** p50 at c=1, ms; undefined where that point was not measured. */
  oursP50?: number;
  directP50?: number;
  /** req/s at c=16. */
  oursRate?: number;
  directRate?: number;
}

/** Each sandboxed series (ours) beside its direct pipeline: the figures the targets are about, from the points measured. */
export function pipelineComparisons(series: QuerySeries[]): PipelineComparison[] {
  return series
    .filter((entry) => entry.side === 'ours')
    .flatMap((ours) => {
      const direct = counterpart(series, ours, 'direct');
      if (!direct || !ours.name.startsWith('sql ')) return [];
      return [
        {
          name: ours.name,
          events: ours.events,
          oursP50: pointAt(ours, 1)?.p50Ms,
          directP50: pointAt(direct, 1)?.p50Ms,
          oursRate: pointAt(ours, 16)?.requestsPerSecond,
          directRate: pointAt(direct, 16)?.requestsPerSecond,
        },
      ];
    });
}

const quotient = (top: number | undefined, bottom: number | undefined) => (top === undefined || bottom === undefined ? undefined : top / bottom);
const verdict = (value: number | undefined, met: (value: number) => boolean) =>
  value === undefined || !Number.isFinite(value) ? '' : met(value) ? 'met' : 'not met';
const optional = (value: number | undefined, format: (value: number) => string) => (value === undefined ? '' : format(value));

/** The comparison as a table: p50 at c=1 and req/s at c=16, ours and direct, their ratios and whether each target is met. */
export function pipelineTable(series: QuerySeries[]): Table | undefined {
  const rows = pipelineComparisons(series).map((entry) => {
    const p50 = quotient(entry.oursP50, entry.directP50);
    const rate = quotient(entry.oursRate, entry.directRate);
    return [
      entry.name,
      number(entry.events),
      optional(entry.oursP50, ms),
      optional(entry.directP50, ms),
      p50 === undefined ? '' : `${ratio(p50)} (${verdict(p50, (value) => value <= PIPELINE_TARGETS.p50Ratio)})`,
      optional(entry.oursRate, (value) => number(value, 1)),
      optional(entry.directRate, (value) => number(value, 1)),
      rate === undefined ? '' : `${ratio(rate)} (${verdict(rate, (value) => value >= PIPELINE_TARGETS.rateRatio)})`,
    ];
  });
  if (rows.length === 0) return undefined;
  return {
    title: 'Sandboxed SQL against its direct pipeline',
    head: [
      'series',
      'events',
      'ours p50 ms c=1',
      'direct p50 ms c=1',
      `ours / direct p50 (target <= ${PIPELINE_TARGETS.p50Ratio}x)`,
      'ours req/s c=16',
      'direct req/s c=16',
      `ours / direct req/s (target >= ${PIPELINE_TARGETS.rateRatio}x)`,
    ],
    rows,
    notes: [
      "direct: the Elasticsearch requests of the query's plan sent straight with the client, then DuckDB in-process over their rows when the plan has a residual step",
    ],
  };
}

/** Each endpoint's p50 at the largest data set over its p50 at the smallest, per concurrency. */
export function growthRows(run: BenchRun): Array<{ name: string; concurrency: number; small: number; large: number; ratio: number }> {
  const queries = run.queries;
  if (!queries || queries.datasets.length < 2) return [];
  const small = queries.datasets[0]!;
  const large = queries.datasets[queries.datasets.length - 1]!;
  const out: Array<{ name: string; concurrency: number; small: number; large: number; ratio: number }> = [];
  for (const series of queries.series.filter((entry) => entry.side === 'ours' && entry.events === small)) {
    const bigger = queries.series.find((entry) => entry.side === 'ours' && entry.name === series.name && entry.events === large);
    for (const point of series.points) {
      const other = pointAt(bigger, point.concurrency);
      if (other) out.push({ name: series.name, concurrency: point.concurrency, small: point.p50Ms, large: other.p50Ms, ratio: other.p50Ms / point.p50Ms });
    }
  }
  return out;
}

function growthTable(run: BenchRun): Table | undefined {
  const rows = growthRows(run);
  if (rows.length === 0) return undefined;
  const [small, large] = [run.queries!.datasets[0]!, run.queries!.datasets[run.queries!.datasets.length - 1]!];
  return {
    title: `Growth: p50 at ${number(large)} events over p50 at ${number(small)}`,
    head: ['series', 'conc.', `p50 ms @${number(small)}`, `p50 ms @${number(large)}`, 'growth'],
    rows: rows.map((row) => [row.name, String(row.concurrency), ms(row.small), ms(row.large), ratio(row.ratio)]),
  };
}

function memoryTable(run: BenchRun): Table | undefined {
  if (run.memory.length === 0) return undefined;
  return {
    title: 'Memory',
    head: ['process', 'phase', 'peak RSS MB'],
    rows: run.memory.map((reading) => [reading.process, reading.phase, number(reading.peakRssMb)]),
  };
}

function tables(run: BenchRun): Table[] {
  return [
    ingestTable(run),
    ingestTargetsTable(run),
    queryTable(run),
    run.queries ? pipelineTable(run.queries.series) : undefined,
    growthTable(run),
    memoryTable(run),
  ].filter((table): table is Table => table !== undefined);
}

export function describeMachine(run: BenchRun): string {
  const machine = run.machine;
  return `${machine.cpus} CPU (${machine.cpuModel}), ${number(machine.memoryGb)} GB, Node ${machine.node}, Kafka ${machine.kafka}, Elasticsearch ${machine.elasticsearch}${machine.peer ? `, peer ${machine.peer}` : ''}`;
}

/** Fixed-width text for a terminal. */
export function formatBenchText(run: BenchRun): string {
  const lines = [`npm run bench${run.quick ? ' -- --quick' : ''}, ${run.startedAt}`, describeMachine(run)];
  for (const table of tables(run)) {
    const widths = table.head.map((cell, column) => Math.max(cell.length, ...table.rows.map((row) => (row[column] ?? '').length)));
    const line = (cells: string[]) =>
      cells
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd();
    lines.push(
      '',
      table.title,
      line(table.head),
      line(widths.map((width) => '-'.repeat(width))),
      ...table.rows.map(line),
      ...(table.notes ?? []).map((note) => `  ${note}`),
    );
  }
  return `${lines.join('\n')}\n`;
}

/** The same tables as Markdown, for docs/benchmarks.md. */
export function formatBenchMarkdown(run: BenchRun): string {
  return `${[`Run of ${run.startedAt.slice(0, 10)}${run.quick ? ' (`--quick`)' : ''} on ${describeMachine(run)}.`, ...tables(run).map(markdownTable)].join('\n\n')}\n`;
}

/** One table as Markdown: its title in bold, the table, then its notes. */
export function markdownTable(table: Table): string {
  const escape = (cell: string) => cell.replace(/\|/g, '\\|');
  const lines = [
    `**${table.title}**`,
    '',
    `| ${table.head.map(escape).join(' | ')} |`,
    `|${table.head.map(() => '---').join('|')}|`,
    ...table.rows.map((row) => `| ${row.map(escape).join(' | ')} |`),
  ];
  for (const note of table.notes ?? []) lines.push('', note);
  return lines.join('\n');
}
