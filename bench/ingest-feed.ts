import { readFileSync } from 'node:fs';
import type { Client } from '@elastic/elasticsearch';

/**
 * Who limits a drain, the store or the worker: Elasticsearch's CPU (its node stats, so the process
 * is found whatever runs it), the machine's idle CPU, and the worker's own feed counters (time with
 * no bulk in flight, full bulks waiting for a slot, the fetch loop held back by queued chunks).
 * Elasticsearch and the machine are shared: their figures include whatever else ran meanwhile.
 */
export interface FeedReading {
  elasticsearchCpuSeconds: number;
  machine: { busySeconds: number; totalSeconds: number };
  /** Undefined for a worker from before the feed counters. */
  worker: WorkerFeed | undefined;
  bulkRequests: number;
  bulkSeconds: number;
}

interface WorkerFeed {
  slotsIdleSeconds: number;
  slotWaitSeconds: number;
  fetchWaitSeconds: number;
}

export async function readFeed(client: Client, port: number): Promise<FeedReading> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const series = (name: string) => [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)`, 'gm'))].map((match) => Number(match[1]));
  const total = (name: string) => series(name).reduce((sum, value) => sum + value, 0);
  const feedCounters = ['ingest_bulk_slots_idle_seconds_total', 'ingest_bulk_slot_wait_seconds_total', 'ingest_fetch_wait_seconds_total'];
  return {
    elasticsearchCpuSeconds: await elasticsearchCpuSeconds(client),
    machine: machineCpu(),
    worker: feedCounters.every((name) => series(name).length > 0)
      ? { slotsIdleSeconds: total(feedCounters[0]!), slotWaitSeconds: total(feedCounters[1]!), fetchWaitSeconds: total(feedCounters[2]!) }
      : undefined,
    bulkRequests: total('ingest_bulk_duration_seconds_count'),
    bulkSeconds: total('ingest_bulk_duration_seconds_sum'),
  };
}

/** The write pool's active threads and queue now (sampled through a drain for their mean). */
export async function writePool(client: Client): Promise<{ active: number; queue: number; threads: number }> {
  const stats = await client.nodes.stats({ node_id: '_local', metric: 'thread_pool' });
  const node = Object.values(stats.nodes)[0];
  const pool = node?.thread_pool?.write;
  return { active: pool?.active ?? 0, queue: pool?.queue ?? 0, threads: pool?.threads ?? 0 };
}

/** Elasticsearch's own CPU seconds so far (its node stats: found whatever runs it, local or not). */
export async function elasticsearchCpuSeconds(client: Client): Promise<number> {
  const stats = await client.nodes.stats({ node_id: '_local', metric: 'process' });
  const node = Object.values(stats.nodes)[0];
  return (node?.process?.cpu?.total_in_millis ?? 0) / 1000;
}

/**
 * Elasticsearch's CPU and the machine's idle share over one span, from a mark at its start: on a machine the
 * store shares with the contenders, what the store spent per event and what was left over.
 */
export async function storeSpan(client: Client): Promise<(events: number) => Promise<{ storeCpuSecondsPer100k: number; machineIdle: number }>> {
  const cpuAtStart = await elasticsearchCpuSeconds(client);
  const machineAtStart = machineCpu();
  return async (events) => {
    const cpu = (await elasticsearchCpuSeconds(client)) - cpuAtStart;
    const machine = machineCpu();
    const total = machine.totalSeconds - machineAtStart.totalSeconds;
    const busy = machine.busySeconds - machineAtStart.busySeconds;
    return { storeCpuSecondsPer100k: (cpu / events) * 100_000, machineIdle: total > 0 ? 1 - busy / total : 0 };
  };
}

/** All cores: busy and total seconds from /proc/stat's first line (ticks of 1/100 s; idle and iowait count as idle). */
export function machineCpu(): { busySeconds: number; totalSeconds: number } {
  const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const totalTicks = ticks.reduce((sum, value) => sum + value, 0);
  return { busySeconds: (totalTicks - ticks[3]! - ticks[4]!) / 100, totalSeconds: totalTicks / 100 };
}

/** One drain's feed, from the readings at its start and end, as the cells of one table row. */
export function feedCells(
  start: FeedReading,
  end: FeedReading,
  seconds: number,
  workerCpuSeconds: number,
  pool: { active: number; queue: number; samples: number; threads: number },
): string[] {
  const percent = (share: number) => `${Math.round(share * 100)}%`;
  const machineBusy = (end.machine.busySeconds - start.machine.busySeconds) / (end.machine.totalSeconds - start.machine.totalSeconds);
  const bulks = end.bulkRequests - start.bulkRequests;
  const worker = start.worker && end.worker ? { start: start.worker, end: end.worker } : undefined;
  return [
    percent(workerCpuSeconds / seconds),
    percent((end.elasticsearchCpuSeconds - start.elasticsearchCpuSeconds) / seconds),
    percent(1 - machineBusy),
    ((end.bulkSeconds - start.bulkSeconds) / seconds).toFixed(2),
    pool.samples > 0 ? `${(pool.active / pool.samples).toFixed(2)} of ${pool.threads}, queue ${(pool.queue / pool.samples).toFixed(1)}` : '',
    worker ? percent((worker.end.slotsIdleSeconds - worker.start.slotsIdleSeconds) / seconds) : 'n/a',
    worker && bulks > 0 ? `${Math.round(((worker.end.slotWaitSeconds - worker.start.slotWaitSeconds) / bulks) * 1000)} ms` : 'n/a',
    worker ? percent((worker.end.fetchWaitSeconds - worker.start.fetchWaitSeconds) / seconds) : 'n/a',
  ];
}

export const FEED_HEADER =
  '| worker | worker CPU (of one core) | Elasticsearch CPU | machine idle | bulks in flight, mean | ES write threads active, mean sampled |' +
  ' no bulk in flight | slot wait per bulk | fetch loop held back (summed over partitions) |';
