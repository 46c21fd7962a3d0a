/**
 * Loaded into a benchmarked service with `--import` (see service-memory.ts): samples the process's
 * memory every 100 ms and keeps the peak of each figure, written as JSON to
 * <tmpdir>/service-memory-<pid>.json, so the benchmark reads the service's own view (heap, external,
 * array buffers) beside its RSS. Plain JavaScript: worker threads inherit `--import` without the
 * TypeScript loader; in them (other isolates) it does nothing.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { getHeapSpaceStatistics } from 'node:v8';
import { isMainThread } from 'node:worker_threads';

function sample() {
  const usage = process.memoryUsage();
  const spaces = getHeapSpaceStatistics();
  const space = (name) => spaces.find((each) => each.space_name === name) ?? { space_size: 0, space_used_size: 0 };
  return {
    rss: usage.rss,
    heapTotal: usage.heapTotal,
    heapUsed: usage.heapUsed,
    external: usage.external,
    arrayBuffers: usage.arrayBuffers,
    newSpace: space('new_space').space_size,
    oldSpace: space('old_space').space_size,
    oldSpaceUsed: space('old_space').space_used_size,
    largeObjects: space('lo_space').space_size,
  };
}

if (isMainThread) {
  let peak = sample();
  let atPeakRss = peak;
  const file = path.join(tmpdir(), `service-memory-${process.pid}.json`);
  // the benchmark resets the peaks between phases with SIGUSR2
  process.on('SIGUSR2', () => {
    peak = sample();
    atPeakRss = peak;
  });
  setInterval(() => {
    const now = sample();
    if (now.rss > atPeakRss.rss) atPeakRss = now;
    peak = Object.fromEntries(Object.entries(now).map(([name, value]) => [name, Math.max(value, peak[name])]));
    // written aside and renamed, so the benchmark never reads half a file
    writeFileSync(`${file}.tmp`, JSON.stringify({ now, peak, atPeakRss }));
    renameSync(`${file}.tmp`, file);
  }, 100).unref();
}
