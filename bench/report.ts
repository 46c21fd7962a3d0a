import type { BenchRun, IngestRate, LoadPoint, QuerySeries } from './results.ts';

/**
 * The table `npm run bench` prints and docs/benchmarks.md shows: every figure next to what it is compared
 * with (the ceiling, the Kafka side, the peer, Elasticsearch sent directly, a bare fastify route),
 * computed from one run's results only. Pure: the same run always gives the same text.
 */

type Table = { title: string; head: string[]; rows: string[][]; notes?: string[] };

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
    rate.note ?? '',
  ]);
  const notes = [`${number(ingest.events)} events, ${number(ingest.bytes / 1e6, 1)} MB of JSON, produced into Kafka before the clock starts`];
  if (ingest.peerSkipped) notes.push(`peer not measured: ${ingest.peerSkipped}`);
  for (const fresh of [ingest.freshnessSlow, ingest.freshness]) {
    if (fresh) notes.push(`produce-to-searchable at ${number(fresh.eventsPerSecond)} events/s: p50 ${number(fresh.p50Ms)} ms, p99 ${number(fresh.p99Ms)} ms (${number(fresh.samples)} markers)`);
  }
  return { title: 'Ingest', head: ['side', 'events/s', 'MB/s', 'seconds', 'CPU s / 100k', 'peak RSS MB', 'ours / this', 'note'], rows, notes };
}

const pointAt = (series: QuerySeries | undefined, concurrency: number): LoadPoint | undefined => series?.points.find((point) => point.concurrency === concurrency);

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
  return { title: 'Memory', head: ['process', 'phase', 'peak RSS MB'], rows: run.memory.map((reading) => [reading.process, reading.phase, number(reading.peakRssMb)]) };
}

function tables(run: BenchRun): Table[] {
  return [ingestTable(run), queryTable(run), growthTable(run), memoryTable(run)].filter((table): table is Table => table !== undefined);
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
    const line = (cells: string[]) => cells.map((cell, column) => cell.padEnd(widths[column]!)).join('  ').trimEnd();
    lines.push('', table.title, line(table.head), line(widths.map((width) => '-'.repeat(width))), ...table.rows.map(line), ...(table.notes ?? []).map((note) => `  ${note}`));
  }
  return `${lines.join('\n')}\n`;
}

/** The same tables as Markdown, for docs/benchmarks.md. */
export function formatBenchMarkdown(run: BenchRun): string {
  const escape = (cell: string) => cell.replace(/\|/g, '\\|');
  const lines = [`Run of ${run.startedAt.slice(0, 10)}${run.quick ? ' (`--quick`)' : ''} on ${describeMachine(run)}.`];
  for (const table of tables(run)) {
    lines.push('', `**${table.title}**`, '', `| ${table.head.map(escape).join(' | ')} |`, `|${table.head.map(() => '---').join('|')}|`, ...table.rows.map((row) => `| ${row.map(escape).join(' | ')} |`));
    for (const note of table.notes ?? []) lines.push('', note);
  }
  return `${lines.join('\n')}\n`;
}
