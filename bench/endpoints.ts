import type { QueryBenchResult, QuerySeries } from './results.ts';
import { runQueryPhase } from './query-phase.ts';
import { markdownTable, pipelineTable } from './report.ts';
import { answerHelp } from '../shared/command-help.ts';

answerHelp(`Usage: npm run bench:endpoints [-- --events 1000000,10000000] [--seconds 10] [--quick] [--only <regexp>] [--cpu-prof <dir>]
                              [--keep-data | --data-prefix <prefix printed by --keep-data>] [--json]
The query half of npm run bench on its own: every series at concurrency 1, 16 and 64 over each data set,
beside the same Elasticsearch request sent directly and a bare fastify route; prints a table with the ratios.
  --quick   100,000 and 1,000,000 events, 1 s a point, the sandboxed queries at 1 and 16 only
Uses KAFKA_BROKERS and ELASTICSEARCH_URL when both are set, else starts its own stack.`);

/**
 * The query half of `npm run bench` on its own: every series at concurrency 1, 16 and 64 over each
 * data set, ours next to the same Elasticsearch request sent directly and the cached path next to a
 * bare fastify route sending the same bytes; prints a table with the ratios.
 *
 *   npm run bench:endpoints [-- --events 1000000,10000000] [--seconds 10] [--quick] [--only <regexp>] [--cpu-prof <dir>]
 *                           [--keep-data | --data-prefix <prefix printed by --keep-data>] [--baseline <checkout>]
 *
 * --quick: 100,000 and 1,000,000 events, 1 s a point, the sandboxed queries at 1 and 16 only.
 * --baseline: a checkout of the code before a change (with node_modules); the saved endpoints' and the
 * sandboxed queries' series are measured against its service too, as "<name> [before]", for before and
 * after from one run.
 * Starts its own Kafka and Elasticsearch unless KAFKA_BROKERS and ELASTICSEARCH_URL are set.
 */
const flag = (name: string) => {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : undefined;
};
const quick = process.argv.includes('--quick');
const datasets = (flag('--events') ?? (quick ? '100000,1000000' : '1000000,10000000')).split(',').map(Number);
const seconds = Number(flag('--seconds') ?? (quick ? 1 : 10));
const only = flag('--only');

const side = (result: QueryBenchResult, name: string, events: number, which: QuerySeries['side']) =>
  result.series.find((series) => series.name === name && series.events === events && series.side === which);

function table(result: QueryBenchResult): string {
  const lines = [
    '| events | series | c | ours req/s | ours p50 ms | ours p99 ms | errors | vs | their req/s | their p50 ms | req/s ratio | p50 ratio |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const ours of result.series.filter((series) => series.side === 'ours')) {
    const other = side(result, ours.name, ours.events, 'direct') ?? side(result, ours.name, ours.events, 'bare');
    for (const point of ours.points) {
      const theirs = other?.points.find((candidate) => candidate.concurrency === point.concurrency);
      const cells = theirs
        ? [
            other!.side,
            theirs.requestsPerSecond.toFixed(0),
            theirs.p50Ms.toFixed(2),
            (point.requestsPerSecond / theirs.requestsPerSecond).toFixed(2),
            (point.p50Ms / theirs.p50Ms).toFixed(2),
          ]
        : ['', '', '', '', ''];
      lines.push(
        `| ${ours.events.toLocaleString('en')} | ${ours.name} | ${point.concurrency} | ${point.requestsPerSecond.toFixed(0)} | ${point.p50Ms.toFixed(2)} | ${point.p99Ms.toFixed(2)} | ${point.errors} | ${cells.join(' | ')} |`,
      );
    }
  }
  const [small, large] = [result.datasets[0], result.datasets[result.datasets.length - 1]];
  if (small !== undefined && large !== undefined && large !== small) {
    lines.push('', `| series | c | p50 at ${large.toLocaleString('en')} / p50 at ${small.toLocaleString('en')} |`, '|---|---|---|');
    for (const ours of result.series.filter((series) => series.side === 'ours' && series.events === large)) {
      const before = side(result, ours.name, small, 'ours');
      for (const point of ours.points) {
        const base = before?.points.find((candidate) => candidate.concurrency === point.concurrency);
        if (base) lines.push(`| ${ours.name} | ${point.concurrency} | ${(point.p50Ms / base.p50Ms).toFixed(2)} |`);
      }
    }
  }
  lines.push('', '| events | query service peak RSS MB (with cache / without) |', '|---|---|');
  for (const reading of result.serviceMemory ?? [])
    lines.push(`| ${reading.events.toLocaleString('en')} | ${reading.peakRssMb} (${reading.cachedPeakRssMb} / ${reading.uncachedPeakRssMb}) |`);
  return lines.join('\n');
}

async function main(): Promise<void> {
  const started = Date.now();
  const result = await runQueryPhase({
    datasets,
    secondsPerPoint: seconds,
    sandboxConcurrencies: quick ? [1, 16] : undefined,
    only: only ? new RegExp(only) : undefined,
    cpuProfileDir: flag('--cpu-prof'),
    keepData: process.argv.includes('--keep-data'),
    dataPrefix: flag('--data-prefix'),
    baseline: flag('--baseline'),
  });
  console.log(`\n${result.loadNote}; ${seconds} s a point; ran ${Math.round((Date.now() - started) / 1000)} s\n`);
  console.log(table(result));
  const comparison = pipelineTable(result.series);
  if (comparison) console.log(`\n${markdownTable(comparison)}`);
  if (process.argv.includes('--json')) console.log(JSON.stringify(result));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.stack : error);
  process.exit(1);
});
