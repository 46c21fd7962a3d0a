/**
 * `npm run endpoints -- usage`: the per-endpoint usage series of a query service's /metrics
 * (src/metrics.ts) read back from the Prometheus text format, one line per endpoint and key id.
 */
import { textTable } from '../../shared/text-table.ts';

/** One series of the exposition text: its name, labels and value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/y;

/** The samples of a Prometheus text exposition (comments and blank lines skipped); a line it cannot read is an error naming it. */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const [index, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`line ${index + 1} of the metrics is not a Prometheus sample: ${line.slice(0, 80)}`);
    samples.push({ name: match[1]!, labels: parseLabels(match[2] ?? '', index + 1), value: Number(match[3]) });
  }
  return samples;
}

function parseLabels(text: string, line: number): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const start = LABEL.lastIndex;
    const match = LABEL.exec(text);
    if (!match) throw new Error(`line ${line} of the metrics has labels it cannot read from: ${text.slice(start, start + 40)}`);
    labels[match[1]!] = match[2]!.replace(/\\(.)/g, (_, escaped: string) => (escaped === 'n' ? '\n' : escaped));
  }
  return labels;
}

/** One endpoint and key id's usage since the service started. */
export interface UsageRow {
  endpoint: string;
  keyId: string;
  requests: number;
  /** Responses with a status from 400, by status. */
  errors: Record<string, number>;
  /** Estimated from the histogram's buckets; undefined without requests. */
  p50Seconds?: number;
  p99Seconds?: number;
  meanSeconds?: number;
  rows: number;
  bytes: number;
}

/** The per-endpoint usage of an exposition, most requests first. */
export function usageRows(samples: readonly Sample[]): UsageRow[] {
  const rows = new Map<string, UsageRow>();
  const buckets = new Map<string, { le: number; count: number }[]>();
  const sums = new Map<string, number>();
  const rowOf = (labels: Record<string, string>) => {
    const id = JSON.stringify([labels.endpoint, labels.key_id]);
    let row = rows.get(id);
    if (!row) {
      row = { endpoint: labels.endpoint ?? '', keyId: labels.key_id ?? '', requests: 0, errors: {}, rows: 0, bytes: 0 };
      rows.set(id, row);
    }
    return { id, row };
  };
  for (const sample of samples) {
    if (!sample.name.startsWith('endpoint_')) continue;
    const { id, row } = rowOf(sample.labels);
    switch (sample.name) {
      case 'endpoint_requests_total': {
        row.requests += sample.value;
        const status = sample.labels.status ?? '';
        if (Number(status) >= 400 && sample.value > 0) row.errors[status] = (row.errors[status] ?? 0) + sample.value;
        break;
      }
      case 'endpoint_rows_returned_total':
        row.rows += sample.value;
        break;
      case 'endpoint_bytes_returned_total':
        row.bytes += sample.value;
        break;
      case 'endpoint_request_duration_seconds_bucket':
        buckets.set(id, [...(buckets.get(id) ?? []), { le: sample.labels.le === '+Inf' ? Infinity : Number(sample.labels.le), count: sample.value }]);
        break;
      case 'endpoint_request_duration_seconds_sum':
        sums.set(id, sample.value);
        break;
    }
  }
  for (const [id, row] of rows) {
    const histogram = (buckets.get(id) ?? []).sort((a, b) => a.le - b.le);
    const count = histogram.at(-1)?.count ?? 0;
    if (count === 0) continue;
    row.p50Seconds = quantile(histogram, 0.5);
    row.p99Seconds = quantile(histogram, 0.99);
    row.meanSeconds = (sums.get(id) ?? 0) / count;
  }
  return [...rows.values()].sort((a, b) => b.requests - a.requests || a.endpoint.localeCompare(b.endpoint) || a.keyId.localeCompare(b.keyId));
}

/**
 * A quantile of a cumulative histogram, interpolated inside its bucket as Prometheus's
 * histogram_quantile does; in the +Inf bucket it is the highest finite bound.
 */
function quantile(histogram: readonly { le: number; count: number }[], q: number): number {
  const total = histogram.at(-1)!.count;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const bucket of histogram) {
    if (bucket.count >= rank) {
      if (bucket.le === Infinity) return lower;
      const inside = bucket.count - below;
      return inside === 0 ? bucket.le : lower + ((bucket.le - lower) * (rank - below)) / inside;
    }
    lower = bucket.le;
    below = bucket.count;
  }
  return lower;
}

const milliseconds = (seconds: number | undefined) => (seconds === undefined ? '-' : `${(seconds * 1000).toFixed(1)}`);

function bytesText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** The usage table `npm run endpoints -- usage` prints. */
export function usageTable(rows: readonly UsageRow[]): string {
  if (rows.length === 0) return 'no query requests counted yet';
  const header = ['ENDPOINT', 'KEY', 'REQUESTS', 'ERRORS', 'P50 MS', 'P99 MS', 'MEAN MS', 'ROWS', 'BYTES'];
  const lines = rows.map((row) => {
    const errors = Object.entries(row.errors).sort(([a], [b]) => a.localeCompare(b));
    const total = errors.reduce((sum, [, count]) => sum + count, 0);
    return [
      row.endpoint,
      row.keyId,
      String(row.requests),
      total === 0 ? '0' : `${total} (${errors.map(([status, count]) => `${status}: ${count}`).join(', ')})`,
      milliseconds(row.p50Seconds),
      milliseconds(row.p99Seconds),
      milliseconds(row.meanSeconds),
      String(row.rows),
      bytesText(row.bytes),
    ];
  });
  // numbers align right, names left
  return textTable(header, lines, (column) => column >= 2 && column !== 3).join('\n');
}
