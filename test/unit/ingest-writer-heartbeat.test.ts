import { describe, expect, it } from 'vitest';
import type { BulkCoalescer } from '../../ingest/bulk-coalescer.ts';
import type { EventPartitioning } from '../../ingest/event-partition.ts';
import { createIngestMetrics } from '../../ingest/metrics.ts';
import { writeEvents } from '../../ingest/writer.ts';
import { createLogger } from '../../shared/logger.ts';

describe('ingest writer: a slow bulk request', () => {
  it('heartbeats while Elasticsearch takes its time, so the group does not drop the worker', async () => {
    const heartbeats: number[] = [];
    const started = Date.now();
    // as a bulk waiting for a shard's primary on a cluster: answered, but only after seconds
    const slowBulk = {
      write: async (_indexOf: unknown, events: unknown[]) => {
        await new Promise((resolve) => setTimeout(resolve, 2600));
        return events.map(() => ({ status: 201, _index: 'i', _id: 'x', result: 'created' }));
      },
    } as unknown as BulkCoalescer;
    const rejected = await writeEvents(
      {
        bulk: slowBulk,
        partitioning: { indexOf: () => 'i' } as unknown as EventPartitioning,
        source: 'edge_logs',
        metrics: createIngestMetrics(),
        logger: createLogger('writer-test', 'silent'),
        retryInitialMs: 10,
        retryMaxMs: 10,
        keepGoing: () => true,
        heartbeat: async () => {
          heartbeats.push(Date.now() - started);
          // a heartbeat refused mid-request (a rebalance began) must not fail the write
          if (heartbeats.length === 2) throw new Error('REBALANCE_IN_PROGRESS');
        },
        onHold: () => undefined,
      },
      [{ event: { id: 'x', timestamp: '2024-01-01T00:00:00.000000Z', event_message: 'm' }, bytes: 10 }],
    );
    expect(rejected).toEqual([]);
    // every half second of the 2.6 s request, none after it ended
    expect(heartbeats.length).toBeGreaterThanOrEqual(4);
    expect(heartbeats.every((at) => at < 2600 + 100)).toBe(true);
    const countAtEnd = heartbeats.length;
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(heartbeats.length).toBe(countAtEnd);
  });
});
