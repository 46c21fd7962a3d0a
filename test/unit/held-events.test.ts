import { describe, expect, it } from 'vitest';
import { QueryTimeout, QueryTooBroad, StoreUnavailable } from '../../src/errors.ts';
import { HeldEvents, IN_FLIGHT_FACTOR } from '../../src/executor/held-events.ts';
import { ScanBudget } from '../../src/executor/scan-budget.ts';

const later = () => performance.now() + 60_000;

describe('the events sandboxed queries hold together (SANDBOX_MAX_HELD_EVENTS)', () => {
  it('grants up to the capacity, then what is left, and takes back what a query gives', async () => {
    const pool = new HeldEvents(100);
    const first = pool.open(later());
    expect(await first.take(70)).toBe(70);
    const second = pool.open(later());
    expect(await second.take(70)).toBe(30);
    expect(pool.count).toBe(100);
    second.giveBack(10);
    expect(pool.count).toBe(90);
    first.close();
    second.close();
    expect(pool.count).toBe(0);
  });

  it('a query finding nothing left waits while another is at work, and goes on once it ends', async () => {
    const pool = new HeldEvents(50);
    const events: string[] = [];
    const working = pool.open(later());
    await working.take(50);
    const waiting = pool.open(later());
    const taken = waiting.take(20).then((granted) => events.push(`waiting query took ${granted}`));
    await Promise.resolve();
    events.push('working query ends');
    working.close();
    await taken;
    expect(events).toEqual(['working query ends', 'waiting query took 20']);
    waiting.close();
  });

  it('refuses with 503 the query that would make every holder wait for another; the waiting one then goes on', async () => {
    const pool = new HeldEvents(100);
    const a = pool.open(later());
    const b = pool.open(later());
    await a.take(60);
    await b.take(40);
    const aMore = a.take(10);
    const refusal = await b.take(10).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(StoreUnavailable);
    expect((refusal as StoreUnavailable).retryAfterSeconds).toBe(1);
    expect((refusal as Error).message).toMatch(/holds 100 events for sandboxed queries in flight \(SANDBOX_MAX_HELD_EVENTS\)/);
    b.close();
    expect(await aMore).toBe(10);
    a.close();
    expect(pool.count).toBe(0);
  });

  it('a wait ends at the query deadline with QueryTimeout, and at an abort with its reason', async () => {
    const pool = new HeldEvents(10);
    const working = pool.open(later());
    await working.take(10);
    const late = pool.open(performance.now() + 5);
    await expect(late.take(1)).rejects.toBeInstanceOf(QueryTimeout);
    const stop = new AbortController();
    const aborted = pool.open(later()).take(1, stop.signal);
    stop.abort(new Error('another scan failed'));
    await expect(aborted).rejects.toThrow('another scan failed');
    working.close();
    expect(pool.count).toBe(0);
  });

  it("a request's scan budget takes its pages from the pool and returns what a short page did not use", async () => {
    const pool = new HeldEvents(1_000);
    const hold = pool.open(later());
    const budget = new ScanBudget(500, hold);
    const granted = await budget.reserve(200);
    expect(granted).toBe(200);
    expect(pool.count).toBe(200);
    budget.settle({ table: 'edge_logs', cte: 'edge_logs' }, granted, 120);
    expect(pool.count).toBe(120);
    const failed = await budget.reserve(50);
    budget.release(failed);
    expect(pool.count).toBe(120);
    hold.close();
    expect(pool.count).toBe(0);
  });

  it('a budget page is no larger than what the pool has left', async () => {
    const pool = new HeldEvents(30);
    const hold = pool.open(later());
    expect(await new ScanBudget(500, hold).reserve(200)).toBe(30);
    hold.close();
  });
});

describe('the bytes the scanned rows of sandboxed queries take together (SANDBOX_MAX_HELD_BYTES)', () => {
  const edge = { table: 'edge_logs', cte: 'edge_logs' };

  it('grants a page against its bytes as reckoned from the pages weighed before, and charges each page what it weighs', async () => {
    const pool = new HeldEvents(1_000_000, 100_000);
    const hold = pool.open(later());
    const budget = new ScanBudget(1_000_000, hold);
    // nothing weighed yet: an event is reckoned at 4096 bytes, twice that in flight, so 12 fit
    const first = await budget.reserve(1_000);
    expect(first).toBe(12);
    expect(pool.bytes).toBe(12 * 4096 * IN_FLIGHT_FACTOR);
    budget.settle(edge, first, first, 12_000);
    expect(pool.bytes).toBe(12_000);
    // its own pages weigh 1000 bytes an event, 2000 in flight: what is left (88,000 bytes) is 44 events
    expect(await budget.reserve(1_000)).toBe(44);
    expect(pool.bytes).toBe(100_000);
    hold.close();
    expect(pool.bytes).toBe(0);
    expect(pool.count).toBe(0);
  });

  it('a query over the bytes finds nothing left and waits while another is at work, then goes on once it ends', async () => {
    const pool = new HeldEvents(1_000_000, 10_000);
    const events: string[] = [];
    const working = pool.open(later());
    const workingBudget = new ScanBudget(1_000_000, working);
    workingBudget.settle(edge, await workingBudget.reserve(5), 5, 9_000);
    const waiting = new ScanBudget(1_000_000, pool.open(later()));
    const taken = waiting.reserve(100).then((granted) => events.push(`waiting query took ${granted}`));
    await Promise.resolve();
    events.push('working query ends');
    working.close();
    await taken;
    // the last page weighed 1,800 bytes an event, 3,600 in flight: 2 fit in 10,000
    expect(events).toEqual(['working query ends', 'waiting query took 2']);
  });

  it('refuses as too broad, naming the bytes, the query whose own rows pass them, and gives every event and byte back', async () => {
    const pool = new HeldEvents(1_000_000, 10_000);
    const hold = pool.open(later());
    const budget = new ScanBudget(1_000_000, hold);
    const granted = await budget.reserve(2);
    const refusal = (() => {
      try {
        budget.settle(edge, granted, granted, 12_000);
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toBeInstanceOf(QueryTooBroad);
    expect((refusal as Error).message).toMatch(/more than the 10000 bytes the query service holds for sandboxed queries \(SANDBOX_MAX_HELD_BYTES\)/);
    expect(budget.signal.aborted).toBe(true);
    hold.close();
    expect(pool.bytes).toBe(0);
    expect(pool.count).toBe(0);
  });

  it('refuses as too broad (not 503: no other query holds anything) the next page of a query alone whose one more event in flight would pass the bytes', async () => {
    const pool = new HeldEvents(1_000_000, 10_000);
    const hold = pool.open(later());
    const budget = new ScanBudget(1_000_000, hold);
    // 3,000 bytes an event, 6,000 in flight: 6,000 + 6,000 pass 10,000
    budget.settle(edge, await budget.reserve(2), 2, 6_000);
    await expect(budget.reserve(10)).rejects.toBeInstanceOf(QueryTooBroad);
    hold.close();
    expect(pool.bytes).toBe(0);
  });
});
