/** Shared by the benchmarks, so every table computes its percentiles the same way. */

/** Nearest-rank percentile of ascending latencies. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) throw new Error('no samples');
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export interface HttpLoad {
  /** The i-th request's URL (1-based), so a run can give each request its own cache key. */
  url: (i: number) => string;
  headers: Record<string, string>;
  requests: number;
  concurrency: number;
}

/** Sends the requests from `concurrency` loops at once; any non-200 ends the run. Returns ascending milliseconds. */
export async function measureHttp(load: HttpLoad): Promise<number[]> {
  const latencies: number[] = [];
  let next = 0;
  const loop = async () => {
    while (next < load.requests) {
      next += 1;
      const url = load.url(next);
      const started = process.hrtime.bigint();
      const response = await fetch(url, { headers: load.headers });
      const body = await response.text();
      if (response.status !== 200) throw new Error(`${url}: status ${response.status}: ${body.slice(0, 300)}`);
      latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  };
  await Promise.all(Array.from({ length: load.concurrency }, loop));
  return latencies.sort((a, b) => a - b);
}
