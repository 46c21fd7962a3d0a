import { describe, expect, it } from 'vitest';
import type { BulkCoalescer } from '../../ingest/bulk-coalescer.ts';
import { bulkEntry } from '../../ingest/bulk.ts';
import { createIngestMetrics } from '../../ingest/metrics.ts';
import { writeEvents } from '../../ingest/writer.ts';
import { createLogger } from '../../shared/logger.ts';

describe('ingest writer: a slow bulk request', () => {
  it('heartbeats while Elasticsearch takes its time, so the group does not drop the worker', async () => {
    const heartbeats: string[] = [];
    let answerBulk: () => void = () => undefined;
    // as a bulk waiting for a shard's primary on a cluster: answered only after the worker heartbeated four times
    const slowBulk = {
      write: async (events: unknown[]) => {
        await new Promise<void>((resolve) => (answerBulk = resolve));
        return events.map(() => ({ status: 201, _index: 'i', _id: 'x', result: 'created' }));
      },
    } as unknown as BulkCoalescer;
    let bulkAnswered = false;
    const written = writeEvents(
      {
        bulk: slowBulk,
        source: 'edge_logs',
        metrics: createIngestMetrics(),
        logger: createLogger('writer-test', 'silent'),
        retryInitialMs: 10,
        retryMaxMs: 10,
        keepGoing: () => true,
        heartbeat: async () => {
          heartbeats.push(bulkAnswered ? 'after the bulk' : 'during the bulk');
          if (heartbeats.length === 4) {
            bulkAnswered = true;
            answerBulk();
          }
          // a heartbeat refused mid-request (a rebalance began) must not fail the write
          if (heartbeats.length === 2) throw new Error('REBALANCE_IN_PROGRESS');
        },
        onHold: () => undefined,
      },
      [{ entry: bulkEntry('i', { id: 'x', timestamp: '2024-01-01T00:00:00.000000Z', event_message: 'm' }) }],
    );
    expect(await written).toEqual([]);
    expect(heartbeats.slice(0, 4)).toEqual(Array(4).fill('during the bulk'));
    // none once the write returned, even a few heartbeat periods later
    const countAtEnd = heartbeats.length;
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(heartbeats.length).toBe(countAtEnd);
  });
});
