import { describe, expect, it } from 'vitest';
import { QueryTooBroad } from '../../src/errors.ts';
import { ScanBudget } from '../../src/executor/scan-budget.ts';

const edge = { table: '__scan_0', cte: 'edge_logs' };
const other = { table: '__scan_1', cte: 'edge_logs' };

/** Whether a promise has settled once every pending callback has run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('the scanned-event budget of one request', () => {
  it('reserves no more than one event past the total across pages in flight, and hands back what a page did not use', async () => {
    const budget = new ScanBudget(500);
    expect(await budget.reserve(10_000)).toBe(501);
    const second = budget.reserve(10_000);
    expect(await settled(second)).toBe(false);
    budget.settle(edge, 501, 300);
    expect(await second).toBe(201);
    budget.settle(other, 201, 0);
    expect(await budget.reserve(50)).toBe(50);
    expect(await budget.reserve(0)).toBe(0);
  });

  it('refuses the request at the first event past the total, stopping the pages that wait and those in flight', async () => {
    const budget = new ScanBudget(500);
    const granted = await budget.reserve(10_000);
    const waiting = budget.reserve(10_000);
    let refusal: unknown;
    try {
      budget.settle(edge, granted, 501);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(QueryTooBroad);
    expect((refusal as Error).message).toMatch(/^the query reads more than 500 events of edge_logs; narrow the time range/);
    await expect(waiting).rejects.toBe(refusal);
    expect(budget.signal.aborted).toBe(true);
    await expect(budget.reserve(1)).rejects.toBe(refusal);
  });

  it('names every table read and the number of scans when several together pass the total', async () => {
    const budget = new ScanBudget(10);
    budget.settle({ table: '__scan_0', cte: 'edge_logs' }, await budget.reserve(6), 6);
    const left = await budget.reserve(100);
    expect(left).toBe(5);
    expect(() => budget.settle({ table: '__scan_1', cte: 'auth_logs' }, left, 5)).toThrow(
      /more than 10 events of edge_logs, auth_logs in 2 scans together; .* or read each table once/,
    );
  });

  it('a failed page gives its reservation back; cancelling refuses every page still waiting', async () => {
    const budget = new ScanBudget(100);
    const granted = await budget.reserve(1000);
    const waiting = budget.reserve(10);
    budget.release(granted);
    expect(await waiting).toBe(10);
    const blocked = budget.reserve(1000).then(() => budget.reserve(1));
    await new Promise((resolve) => setImmediate(resolve));
    const failure = new Error('the store went away');
    budget.cancel(failure);
    await expect(blocked).rejects.toBe(failure);
  });
});
