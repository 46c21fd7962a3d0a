import type { Client, estypes } from '@elastic/elasticsearch';
import type { StoredEvent } from '../shared/event-index.ts';
import { bulkOperations } from './bulk.ts';
import type { IngestMetrics } from './metrics.ts';

interface Waiting {
  operations: unknown[];
  count: number;
  bytes: number;
  resolve(items: estypes.BulkResponseItem[]): void;
  reject(error: unknown): void;
}

/**
 * Partitions are processed side by side, each with a handful of events under a steady load; sending
 * each partition's events alone would mean many tiny bulk requests (each a translog sync per
 * shard). Writes that arrive within a few milliseconds of each other share one bulk request, within
 * the byte and count bounds; each caller gets back the item results for its own events.
 */
export class BulkCoalescer {
  private waiting: Waiting[] = [];
  private bytes = 0;
  private count = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: Client,
    private readonly metrics: IngestMetrics,
    private readonly limits: { maxBytes: number; maxEvents: number; lingerMs: number },
  ) {}

  write(indexOf: (event: StoredEvent) => string, events: StoredEvent[], approximateBytes: number): Promise<estypes.BulkResponseItem[]> {
    return new Promise((resolve, reject) => {
      if (this.waiting.length > 0 && (this.count + events.length > this.limits.maxEvents || this.bytes + approximateBytes > this.limits.maxBytes)) this.flush();
      this.waiting.push({ operations: bulkOperations(indexOf, events), count: events.length, bytes: approximateBytes, resolve, reject });
      this.count += events.length;
      this.bytes += approximateBytes;
      this.timer ??= setTimeout(() => this.flush(), this.limits.lingerMs);
    });
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.waiting;
    this.waiting = [];
    this.bytes = 0;
    this.count = 0;
    if (batch.length === 0) return;
    const timer = this.metrics.bulkDuration.startTimer();
    this.client.bulk({ operations: batch.flatMap((waiting) => waiting.operations), refresh: false }).then(
      (response) => {
        timer({ outcome: response.errors ? 'partial' : 'ok' });
        let start = 0;
        for (const waiting of batch) {
          waiting.resolve(response.items.slice(start, start + waiting.count).map((entry) => entry.index ?? Object.values(entry)[0]!));
          start += waiting.count;
        }
      },
      (error: unknown) => {
        timer({ outcome: 'failed' });
        for (const waiting of batch) waiting.reject(error);
      },
    );
  }
}
