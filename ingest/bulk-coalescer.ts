import type { Client, estypes } from '@elastic/elasticsearch';
import type { BulkEntry } from './bulk.ts';
import type { IngestMetrics } from './metrics.ts';

interface Waiting {
  entries: readonly BulkEntry[];
  resolve(items: estypes.BulkResponseItem[]): void;
  reject(error: unknown): void;
}

/** Only what classifyItem reads comes back: the per-item `_id`, `_index`, `_version` ... of a 5,000-event bulk are most of its response. */
const BULK_RESPONSE_FILTER = 'errors,items.*.status,items.*.error';

/**
 * Partitions are processed side by side, each with a handful of events under a steady load; sending
 * each partition's events alone would mean many tiny bulk requests (each a translog sync per
 * shard). Writes that arrive within a few milliseconds of each other share one bulk request, within
 * the byte and count bounds; each caller gets back the item results for its own events.
 *
 * At most `maxInFlight` bulk requests are in flight: under load, writes go on filling the next bulk
 * while Elasticsearch works on the current ones, so it gets a few full bulks rather than many small
 * ones queueing in its write pool.
 */
export class BulkCoalescer {
  private waiting: Waiting[] = [];
  private bytes = 0;
  private count = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly sealed: Waiting[][] = [];
  private inFlight = 0;

  constructor(
    private readonly client: Client,
    private readonly metrics: IngestMetrics,
    private readonly limits: { maxBytes: number; maxEvents: number; lingerMs: number; maxInFlight: number },
  ) {}

  write(entries: readonly BulkEntry[]): Promise<estypes.BulkResponseItem[]> {
    let bytes = 0;
    for (const entry of entries) bytes += entry.length;
    return new Promise((resolve, reject) => {
      if (this.waiting.length > 0 && (this.count + entries.length > this.limits.maxEvents || this.bytes + bytes > this.limits.maxBytes)) this.seal();
      this.waiting.push({ entries, resolve, reject });
      this.count += entries.length;
      this.bytes += bytes;
      // with every slot taken the bulk keeps filling; the next completion seals it
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        if (this.inFlight < this.limits.maxInFlight) this.seal();
      }, this.limits.lingerMs);
    });
  }

  private seal(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.waiting.length > 0) this.sealed.push(this.waiting);
    this.waiting = [];
    this.bytes = 0;
    this.count = 0;
    this.send();
  }

  private send(): void {
    while (this.inFlight < this.limits.maxInFlight && this.sealed.length > 0) {
      const batch = this.sealed.shift()!;
      this.inFlight += 1;
      const timer = this.metrics.bulkDuration.startTimer();
      const body = bodyOf(batch);
      this.client.bulk({ body, refresh: false, filter_path: BULK_RESPONSE_FILTER } as estypes.BulkRequest).then(
        (response) => {
          timer({ outcome: response.errors ? 'partial' : 'ok' });
          let start = 0;
          for (const waiting of batch) {
            waiting.resolve(response.items.slice(start, start + waiting.entries.length).map((entry) => entry.index ?? Object.values(entry)[0]!));
            start += waiting.entries.length;
          }
          this.completed();
        },
        (error: unknown) => {
          timer({ outcome: 'failed' });
          for (const waiting of batch) waiting.reject(error);
          this.completed();
        },
      );
    }
  }

  private completed(): void {
    this.inFlight -= 1;
    if (this.sealed.length === 0 && this.waiting.length > 0) this.seal();
    else this.send();
  }
}

/** The entries' bytes one after the other: nothing is serialised again. */
function bodyOf(batch: readonly Waiting[]): Buffer {
  let length = 0;
  for (const waiting of batch) for (const entry of waiting.entries) length += entry.length;
  const body = Buffer.allocUnsafe(length);
  let at = 0;
  for (const waiting of batch) for (const entry of waiting.entries) at += entry.copyTo(body, at);
  return body;
}
