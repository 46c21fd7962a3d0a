import { describe, expect, it } from 'vitest';
import { WritePipeline } from '../../ingest/write-pipeline.ts';

const tick = (ms = 5) => new Promise((resolve) => setTimeout(resolve, ms));

/** A unit of work that finishes when told to, recording when it started. */
function gate(log: string[], name: string) {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return {
    open,
    work: async () => {
      log.push(`start ${name}`);
      await opened;
      log.push(`end ${name}`);
    },
  };
}

describe('write pipeline', () => {
  it("runs a partition's chunks one after the other and other partitions' alongside", async () => {
    const log: string[] = [];
    const pipeline = new WritePipeline(1_000_000, (error) => {
      throw error;
    });
    const [a1, a2, b1] = [gate(log, 'a1'), gate(log, 'a2'), gate(log, 'b1')];
    pipeline.enqueue('a', 10, a1.work);
    pipeline.enqueue('a', 10, a2.work);
    pipeline.enqueue('b', 10, b1.work);
    await tick();
    expect(log).toEqual(['start a1', 'start b1']);
    a1.open();
    await tick();
    expect(log).toEqual(['start a1', 'start b1', 'end a1', 'start a2']);
    a2.open();
    b1.open();
    await pipeline.drain();
    expect(pipeline.bytes).toBe(0);
  });

  it('holds the fetch loop while more than the bound is queued, heartbeating meanwhile', async () => {
    const log: string[] = [];
    const pipeline = new WritePipeline(15, () => undefined);
    const [first, second] = [gate(log, '1'), gate(log, '2')];
    pipeline.enqueue('a', 10, first.work);
    pipeline.enqueue('a', 10, second.work);
    let admitted = false;
    let heartbeats = 0;
    const admission = pipeline.admit(async () => void (heartbeats += 1)).then(() => (admitted = true));
    await tick();
    expect(admitted).toBe(false);
    first.open();
    await tick();
    // one chunk (10 bytes) left queued: under the bound of 15
    expect(admitted).toBe(true);
    expect(heartbeats).toBe(1);
    second.open();
    await Promise.all([admission, pipeline.drain()]);
  });

  it('drops queued chunks of the old assignment after a rebalance, and later chunks of a failed partition', async () => {
    const ran: string[] = [];
    const pipeline = new WritePipeline(1_000_000, () => undefined);
    const first = gate([], 'x');
    pipeline.enqueue('a', 1, async (chunk) => {
      await first.work();
      ran.push(`a1 may commit: ${chunk.mayCommit()}`);
    });
    pipeline.enqueue('a', 1, async () => void ran.push('a2'));
    pipeline.enqueue('b', 1, async () => void ran.push('b1'));
    await tick();
    pipeline.reassigned();
    first.open();
    await tick();
    pipeline.enqueue('a', 1, async () => void ran.push('a3 (new assignment)'));
    pipeline.enqueue('c', 1, async () => {
      pipeline.failed('c');
    });
    pipeline.enqueue('c', 1, async () => void ran.push('c2'));
    await tick();
    await pipeline.drain();
    expect(ran).toEqual(['b1', 'a1 may commit: false', 'a3 (new assignment)']);
  });

  it('reports work that throws, and goes on with the next chunk after a failure', async () => {
    const errors: unknown[] = [];
    const pipeline = new WritePipeline(1_000_000, (error) => errors.push(error));
    pipeline.enqueue('a', 1, async () => {
      throw new Error('defect');
    });
    await tick();
    const ran: string[] = [];
    pipeline.enqueue('a', 1, async () => void ran.push('a2'));
    await pipeline.drain().then(() => tick());
    expect(errors.map((error) => (error as Error).message)).toEqual(['defect']);
    // drain stops new work: a chunk queued behind a stop is not started
    expect(ran).toEqual([]);
  });
  it("lets a partition's later input join its queued work until that work starts, never work that started or belongs to an old assignment", async () => {
    const log: string[] = [];
    const pipeline = new WritePipeline(1_000_000, (error) => {
      throw error;
    });
    const first = gate(log, 'first');
    const written: string[][] = [];
    const gates = new Map<string, ReturnType<typeof gate>>();
    const run = async (items: string[]) => {
      const name = items.join('+');
      const running = gate(log, name);
      gates.set(name, running);
      await running.work();
      written.push([...items]);
    };
    const joinInto = (next: string) => (queued: string[]) => (queued.push(next), true);
    pipeline.enqueue('a', 10, first.work);
    // queued behind the running chunk: the next two join it
    pipeline.enqueueJoining('a', 10, ['x'], joinInto('x'), run);
    pipeline.enqueueJoining('a', 10, ['y'], joinInto('y'), run);
    pipeline.enqueueJoining('a', 10, ['z'], joinInto('z'), run);
    expect(pipeline.bytes).toBe(40);
    first.open();
    await tick();
    expect(log).toEqual(['start first', 'end first', 'start x+y+z']);
    // x+y+z has started: new input queues behind it, and the queued work still takes joins
    pipeline.enqueueJoining('a', 10, ['p'], joinInto('p'), run);
    pipeline.enqueueJoining('a', 10, ['q'], () => false, run);
    gates.get('x+y+z')!.open();
    await tick();
    expect(log.at(-1)).toBe('start p');
    // a rebalance: the queued q belongs to the old assignment and takes no more input
    pipeline.reassigned();
    pipeline.enqueueJoining('a', 10, ['r'], joinInto('r'), run);
    gates.get('p')!.open();
    await tick();
    gates.get('r')!.open();
    await pipeline.drain();
    expect(written).toEqual([['x', 'y', 'z'], ['p'], ['r']]);
    expect(pipeline.bytes).toBe(0);
  });
});
