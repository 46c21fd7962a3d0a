import type { IngestBenchResult } from './results.ts';

/** Issue 21's targets for the ingest worker, each read from one run's figures. */
export const INGEST_TARGETS = { ceilingRatio: 0.9, cpuSecondsPer100k: 1.5, freshnessP99Ms: 2000, peakRssMb: 256 };

export interface TargetRow {
  target: string;
  /** The run's figure, as printed; empty when the run did not measure it. */
  figure: string;
  /** met, not met, or not measured (with why). */
  verdict: string;
}

/**
 * Each ingest target beside the figure that decides it: ours against the ceiling of the same run,
 * ours' CPU per 100k events and peak RSS (uncompressed and zstd input), and produce-to-searchable
 * p99 at a tenth and at half of our rate. Pure: the same result always gives the same rows.
 */
export function ingestTargets(result: IngestBenchResult): TargetRow[] {
  const rate = (label: string) => result.rates.find((each) => each.label === label);
  const ours = rate('ours');
  const ceiling = rate('ceiling');
  const row = (target: string, value: number | undefined, format: (value: number) => string, met: (value: number) => boolean, missing: string) => ({
    target,
    figure: value === undefined ? '' : format(value),
    verdict: value === undefined ? missing : met(value) ? 'met' : 'not met',
  });
  const ratio = ours && ceiling ? ours.eventsPerSecond / ceiling.eventsPerSecond : undefined;
  const inputs = [
    { label: 'uncompressed input', figure: ours, missing: 'not measured' },
    { label: 'zstd input', figure: rate('ours-zstd'), missing: result.zstdSkipped ? `not measured: ${result.zstdSkipped}` : 'not measured' },
  ];
  return [
    row(
      `ingest at least ${INGEST_TARGETS.ceilingRatio}x the ceiling`,
      ratio,
      (value) => `${value.toFixed(2)}x`,
      (value) => value >= INGEST_TARGETS.ceilingRatio,
      'not measured',
    ),
    ...inputs.map(({ label, figure, missing }) =>
      row(
        `worker CPU at most ${INGEST_TARGETS.cpuSecondsPer100k} s per 100k events, ${label}`,
        figure?.cpuSecondsPer100k,
        (value) => value.toFixed(2),
        (value) => value <= INGEST_TARGETS.cpuSecondsPer100k,
        missing,
      ),
    ),
    ...[
      { label: 'a tenth', fresh: result.freshnessSlow },
      { label: 'half', fresh: result.freshness },
    ].map(({ label, fresh }) =>
      row(
        `produce-to-searchable p99 at most ${INGEST_TARGETS.freshnessP99Ms / 1000} s at ${label} of our rate${fresh ? ` (${Math.round(fresh.eventsPerSecond)} events/s)` : ''}`,
        fresh?.p99Ms,
        (value) => `${Math.round(value)} ms`,
        (value) => value <= INGEST_TARGETS.freshnessP99Ms,
        'not measured',
      ),
    ),
    ...inputs.map(({ label, figure, missing }) =>
      row(
        `worker peak RSS under ${INGEST_TARGETS.peakRssMb} MB, ${label}`,
        figure?.peakRssMb,
        (value) => `${Math.round(value)} MB`,
        (value) => value < INGEST_TARGETS.peakRssMb,
        missing,
      ),
    ),
  ];
}
