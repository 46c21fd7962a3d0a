import type { Client } from '@elastic/elasticsearch';
import { describe, expect, it } from 'vitest';
import { bulkEntry, type BulkEntry } from '../../ingest/bulk.ts';
import { BulkCoalescer } from '../../ingest/bulk-coalescer.ts';
import { createIngestMetrics } from '../../ingest/metrics.ts';
import { ManualClock } from '../support/manual-clock.ts';

/** The NDJSON lines of a bulk body, parsed. */
function operationsOf(body: Buffer): unknown[] {
  const text = body.toString('utf8');
  expect(text.endsWith('\n')).toBe(true);
  return text
    .slice(0, -1)
    .split('\n')
    .map((line) => JSON.parse(line) as unknown);
}

/** Records bulk requests (their operations) and answers each document with its id as the result, status 201. */
function recordingClient(): { client: Client; requests: unknown[][] } {
  const requests: unknown[][] = [];
  const client = {
    bulk: async ({ body }: { body: Buffer }) => {
      const operations = operationsOf(body);
      requests.push(operations);
      const actions = operations.filter((_, position) => position % 2 === 0) as { index: { _index: string; _id: string } }[];
      return { errors: false, items: actions.map(({ index }) => ({ index: { _index: index._index, _id: index._id, status: 201 } })) };
    },
  } as unknown as Client;
  return { client, requests };
}

const entries = (index: string, ...ids: string[]): BulkEntry[] =>
  ids.map((id) => bulkEntry(index, { id, timestamp: '2024-01-01T00:00:00.000000Z', event_message: id }));

describe('bulk coalescing', () => {
  it('sends writes that arrive together as one request and gives each caller its own results', async () => {
    const { client, requests } = recordingClient();
    const coalescer = new BulkCoalescer(client, createIngestMetrics(), { maxBytes: 1_000_000, maxEvents: 100, lingerMs: 5, maxInFlight: 2 });
    const [first, second] = await Promise.all([coalescer.write(entries('a', '1', '2')), coalescer.write(entries('b', '3'))]);
    expect(requests).toHaveLength(1);
    expect(first.map((item) => [item._index, item._id])).toEqual([
      ['a', '1'],
      ['a', '2'],
    ]);
    expect(second.map((item) => [item._index, item._id])).toEqual([['b', '3']]);
  });

  it("sends the entries' bytes as the body, action and document lines in order", async () => {
    const { client, requests } = recordingClient();
    const coalescer = new BulkCoalescer(client, createIngestMetrics(), { maxBytes: 1_000_000, maxEvents: 100, lingerMs: 5, maxInFlight: 2 });
    await coalescer.write([bulkEntry('logs-a', { id: 'x"1', timestamp: '2024-01-01T00:00:00.000000Z', event_message: 'São Paulo\n', metadata: { n: 1 } })]);
    expect(requests).toEqual([
      [{ index: { _index: 'logs-a', _id: 'x"1' } }, { id: 'x"1', timestamp: '2024-01-01T00:00:00.000000Z', event_message: 'São Paulo\n', metadata: { n: 1 } }],
    ]);
  });

  it('starts a new request rather than exceed the count or byte bound', async () => {
    const { client, requests } = recordingClient();
    // each entry is 108 bytes: two fit in 300, a third does not
    const coalescer = new BulkCoalescer(client, createIngestMetrics(), { maxBytes: 300, maxEvents: 3, lingerMs: 5, maxInFlight: 2 });
    await Promise.all([coalescer.write(entries('a', '1', '2')), coalescer.write(entries('a', '3', '4')), coalescer.write(entries('a', '5'))]);
    expect(requests.map((operations) => operations.length / 2)).toEqual([2, 2, 1]);
  });

  it("writes the next bulk into an answered bulk's body, never into one whose request failed", async () => {
    const backings: ArrayBuffer[] = [];
    let failNext = false;
    const client = {
      bulk: async ({ body }: { body: Buffer }) => {
        backings.push(body.buffer as ArrayBuffer);
        const actions = operationsOf(body).filter((_, position) => position % 2 === 0) as { index: { _index: string; _id: string } }[];
        if (failNext) {
          failNext = false;
          throw new Error('connect ECONNREFUSED');
        }
        return { errors: false, items: actions.map(({ index }) => ({ index: { _index: index._index, _id: index._id, status: 201 } })) };
      },
    } as unknown as Client;
    const coalescer = new BulkCoalescer(client, createIngestMetrics(), { maxBytes: 4096, maxEvents: 100, lingerMs: 1, maxInFlight: 1 });
    await coalescer.write(entries('a', '1', '2'));
    // a shorter bulk in the same bytes: its body is exactly its own entries, whatever the spare held
    const second = await coalescer.write(entries('a', '3'));
    expect(second.map((item) => item._id)).toEqual(['3']);
    failNext = true;
    await expect(coalescer.write(entries('a', '4'))).rejects.toThrow('ECONNREFUSED');
    await coalescer.write(entries('a', '5'));
    expect(backings[1]).toBe(backings[0]);
    expect(backings[2]).toBe(backings[0]);
    // the failed request's body may still be on its way out: the next bulk gets new bytes
    expect(backings[3]).not.toBe(backings[2]);
  });

  it('fails every caller of a failed request, so each retries its own events', async () => {
    const client = { bulk: async () => Promise.reject(new Error('connect ECONNREFUSED')) } as unknown as Client;
    const coalescer = new BulkCoalescer(client, createIngestMetrics(), { maxBytes: 1000, maxEvents: 10, lingerMs: 5, maxInFlight: 2 });
    const results = await Promise.allSettled([coalescer.write(entries('a', '1')), coalescer.write(entries('b', '2'))]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected']);
  });

  it('keeps at most maxInFlight requests open and fills the next one meanwhile', async () => {
    const started: { operations: unknown[]; answer(): void }[] = [];
    const client = {
      bulk: ({ body }: { body: Buffer }) =>
        new Promise((resolve) => {
          const operations = operationsOf(body);
          const actions = operations.filter((_, position) => position % 2 === 0) as { index: { _index: string; _id: string } }[];
          started.push({
            operations,
            answer: () => resolve({ errors: false, items: actions.map(({ index }) => ({ index: { _id: index._id, status: 201 } })) }),
          });
        }),
    } as unknown as Client;
    const coalescer = new BulkCoalescer(client, createIngestMetrics(), { maxBytes: 1_000_000, maxEvents: 2, lingerMs: 1, maxInFlight: 1 });
    const writes = [coalescer.write(entries('a', '1', '2')), coalescer.write(entries('a', '3'))];
    await new Promise((resolve) => setTimeout(resolve, 20));
    writes.push(coalescer.write(entries('a', '4')));
    await new Promise((resolve) => setTimeout(resolve, 20));
    // the first bulk is open: events 3 and 4 wait together instead of going out alone
    expect(started.map(({ operations }) => operations.length / 2)).toEqual([2]);
    started[0]!.answer();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(started.map(({ operations }) => operations.length / 2)).toEqual([2, 2]);
    started[1]!.answer();
    const results = await Promise.all(writes);
    expect(results.map((items) => items.map((item) => item._id))).toEqual([['1', '2'], ['3'], ['4']]);
  });

  describe('on a slow stream (a manual clock)', () => {
    /** A client whose requests stay open until answered, and the sizes of the requests sent so far. */
    function heldClient(): { client: Client; sent: () => number[]; answer(request: number): void } {
      const started: { events: number; answer(): void }[] = [];
      const client = {
        bulk: ({ body }: { body: Buffer }) =>
          new Promise((resolve) => {
            const actions = operationsOf(body).filter((_, position) => position % 2 === 0) as { index: { _id: string } }[];
            started.push({
              events: actions.length,
              answer: () => resolve({ errors: false, items: actions.map(({ index }) => ({ index: { _id: index._id, status: 201 } })) }),
            });
          }),
      } as unknown as Client;
      return { client, sent: () => started.map((request) => request.events), answer: (request) => started[request]!.answer() };
    }
    const settle = () => new Promise((resolve) => setImmediate(resolve));

    it('sends a partial bulk once the linger has passed, not before', async () => {
      const clock = new ManualClock();
      const { client, sent, answer } = heldClient();
      const coalescer = new BulkCoalescer(client, createIngestMetrics(), { maxBytes: 1_000_000, maxEvents: 100, lingerMs: 5, maxInFlight: 2 }, clock);
      const first = coalescer.write(entries('a', '1'));
      await clock.advance(4);
      const second = coalescer.write(entries('b', '2', '3'));
      await clock.advance(0);
      expect(sent()).toEqual([]);
      await clock.advance(1);
      expect(sent()).toEqual([3]);
      answer(0);
      expect((await Promise.all([first, second])).map((items) => items.map((item) => item._id))).toEqual([['1'], ['2', '3']]);
    });

    it('sends a full bulk at once, without waiting for the linger', async () => {
      const clock = new ManualClock();
      const { client, sent } = heldClient();
      const coalescer = new BulkCoalescer(client, createIngestMetrics(), { maxBytes: 1_000_000, maxEvents: 2, lingerMs: 5, maxInFlight: 2 }, clock);
      void coalescer.write(entries('a', '1', '2'));
      void coalescer.write(entries('a', '3'));
      await settle();
      expect(sent()).toEqual([2]);
      await clock.advance(5);
      expect(sent()).toEqual([2, 1]);
    });

    it('holds a lingered bulk while every request slot is taken and sends it when one completes', async () => {
      const clock = new ManualClock();
      const { client, sent, answer } = heldClient();
      const coalescer = new BulkCoalescer(client, createIngestMetrics(), { maxBytes: 1_000_000, maxEvents: 100, lingerMs: 5, maxInFlight: 1 }, clock);
      void coalescer.write(entries('a', '1'));
      await clock.advance(5);
      void coalescer.write(entries('a', '2'));
      void coalescer.write(entries('b', '3'));
      await clock.advance(50);
      expect(sent()).toEqual([1]);
      answer(0);
      await settle();
      expect(sent()).toEqual([1, 2]);
      expect(clock.scheduled).toBe(0);
    });

    it('counts the time full bulks wait for a slot and the time no bulk is in flight', async () => {
      const clock = new ManualClock(0);
      const { client, sent, answer } = heldClient();
      const metrics = createIngestMetrics();
      const seconds = async (counter: 'bulkSlotWait' | 'bulkSlotsIdle') => (await metrics[counter].get()).values[0]?.value ?? 0;
      const coalescer = new BulkCoalescer(client, metrics, { maxBytes: 1_000_000, maxEvents: 2, lingerMs: 5, maxInFlight: 1 }, clock);
      await clock.advance(1000);
      void coalescer.write(entries('a', '1', '2'));
      void coalescer.write(entries('a', '3', '4'));
      await clock.advance(2);
      // (times from the first write) the second bulk is full at 2 ms and waits for the only slot until the first is answered at 20 ms
      void coalescer.write(entries('a', '5'));
      await clock.advance(18);
      answer(0);
      await settle();
      expect(sent()).toEqual([2, 2]);
      expect(await seconds('bulkSlotWait')).toBeCloseTo(0.018, 9);
      // nothing was in flight only in the second before the first write, which is not counted
      expect(await seconds('bulkSlotsIdle')).toBe(0);
      answer(1);
      await settle();
      await clock.advance(30);
      answer(2);
      await settle();
      // the last request ended at 50 ms; the next write at 100 ms lingers 5 ms: 55 ms with nothing in flight
      await clock.advance(50);
      void coalescer.write(entries('a', '6'));
      await clock.advance(5);
      expect(sent()).toEqual([2, 2, 1, 1]);
      expect(await seconds('bulkSlotsIdle')).toBeCloseTo(0.055, 9);
      expect(await seconds('bulkSlotWait')).toBeCloseTo(0.018, 9);
    });
  });
});
