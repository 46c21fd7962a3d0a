/**
 * What each phase of `npm run bench` hands to the report: the table, the JSON file and the chart are
 * all drawn from these shapes, so a phase never formats its own output for the whole run.
 */

/** A rate measured over one load; `cpuSecondsPer100k` and `peakRssMb` only where a process of ours (or the peer's) was measured. */
export interface IngestRate {
  /** ours | ceiling | consume | peer | peer-same-shape, or another label the phase explains in `note`. */
  label: string;
  eventsPerSecond: number;
  megabytesPerSecond: number;
  seconds: number;
  cpuSecondsPer100k?: number;
  peakRssMb?: number;
  /** Elasticsearch's CPU seconds per 100k events over the same span (its node stats), and the machine's idle share then. */
  storeCpuSecondsPer100k?: number;
  machineIdle?: number;
  /** Our worker's bulk requests while it drained: how many, events per request, requests in flight on average. */
  bulks?: { requests: number; eventsPerRequest: number; meanInFlight: number };
  note?: string;
}

export interface Freshness {
  eventsPerSecond: number;
  samples: number;
  p50Ms: number;
  p99Ms: number;
}

export interface IngestBenchResult {
  events: number;
  bytes: number;
  rates: IngestRate[];
  /** Produce-to-searchable latency at a steady rate (half our measured maximum). */
  freshness?: Freshness;
  /** The same at a tenth of our measured maximum: a slow stream, where bulks fill slowly. */
  freshnessSlow?: Freshness;
  /** Set when the peer could not run (for example rsyslog not installed), with the reason. */
  peerSkipped?: string;
  /** Set when the drains of zstd-compressed input (ours-zstd, ours-before-zstd) could not run, with the reason. */
  zstdSkipped?: string;
}

/** One load-generator run at one concurrency. */
export interface LoadPoint {
  concurrency: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  errors: number;
}

/** An endpoint (or its comparison) measured at several concurrencies over one data set. */
export interface QuerySeries {
  /** e.g. "usage.api-counts day uncached", "logs.all 1h", "sql example 7", "lql chart". */
  name: string;
  /** ours | direct (the same Elasticsearch request sent straight) | bare (a bare fastify route with the same bytes). */
  side: 'ours' | 'direct' | 'bare';
  /** Events in the data set the series ran over. */
  events: number;
  points: LoadPoint[];
}

export interface QueryBenchResult {
  /** Data set sizes measured, ascending (e.g. 1,000,000 and 10,000,000). */
  datasets: number[];
  series: QuerySeries[];
  /** How the data got there (for example "bulk-loaded directly, not through Kafka"). */
  loadNote: string;
  /**
   * Peak RSS of the query service per data set (the larger of its two processes: with and without
   * the result cache), for the run's `memory` readings.
   */
  serviceMemory?: { events: number; peakRssMb: number; cachedPeakRssMb?: number; uncachedPeakRssMb?: number }[];
}

/** Peak resident memory of each process in each phase. */
export interface MemoryReading {
  process: 'worker' | 'query-service';
  phase: string;
  peakRssMb: number;
}

export interface BenchRun {
  startedAt: string;
  quick: boolean;
  machine: { cpus: number; cpuModel: string; memoryGb: number; node: string; kafka: string; elasticsearch: string; peer?: string };
  ingest?: IngestBenchResult;
  queries?: QueryBenchResult;
  memory: MemoryReading[];
}
