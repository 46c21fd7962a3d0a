import type { EventEmitter } from 'node:events';
import autocannon from 'autocannon';
import { percentile } from './latency.ts';
import type { LoadPoint } from './results.ts';

/** One series' requests: every request the same, or each its own (distinct cache keys, distinct Elasticsearch bodies). */
export interface LoadTarget {
  /** Origin, e.g. http://127.0.0.1:4000 */
  origin: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  /** The i-th request's path (and body), 1-based. */
  request: (i: number) => { path: string; body?: string };
  /** What the response must hold to count as answered, beyond a 2xx status (checked on a first request). */
  expect?: (body: string) => string | undefined;
}

export interface LoadSettings {
  concurrency: number;
  seconds: number;
  /** Requests each connection completes at least: a slow series runs by count instead of time so it still yields latencies. */
  minPerConnection: number;
  /** Requests per second measured for the same series at a lower concurrency, to choose count over time. */
  knownRate?: number;
}

/** Sends one request and checks it; the body is returned so a caller can reuse it (the bare route's bytes). */
export async function probe(target: LoadTarget, i = 1): Promise<string> {
  const { path, body } = target.request(i);
  const response = await fetch(`${target.origin}${path}`, { method: target.method, headers: target.headers, body });
  const text = await response.text();
  if (response.status < 200 || response.status > 299)
    throw new Error(`${target.method} ${path.slice(0, 200)}: status ${response.status}: ${text.slice(0, 300)}`);
  const problem = target.expect?.(text);
  if (problem) throw new Error(`${target.method} ${path.slice(0, 200)}: ${problem}`);
  return text;
}

/**
 * Runs autocannon against the target at one concurrency; latencies are taken from every 2xx
 * response at full precision (autocannon's own histogram rounds to whole milliseconds, too coarse
 * for a cached answer). Errors are connection errors, timeouts and non-2xx answers.
 */
export async function runLoad(target: LoadTarget, settings: LoadSettings, counter = { next: 1 }): Promise<LoadPoint> {
  const latencies: number[] = [];
  const slow = settings.knownRate !== undefined && settings.knownRate * settings.seconds < settings.concurrency * settings.minPerConnection;
  const started = performance.now();
  // without a callback autocannon returns its tracker (an emitter) made thenable; the types say Promise only
  const instance = autocannon({
    url: target.origin,
    connections: settings.concurrency,
    ...(slow ? { amount: settings.concurrency * settings.minPerConnection } : { duration: settings.seconds }),
    timeout: 120,
    method: target.method,
    headers: target.headers,
    requests: [
      {
        setupRequest: (request) => {
          const next = target.request(counter.next);
          counter.next += 1;
          return { ...request, path: next.path, ...(next.body !== undefined ? { body: next.body } : {}) };
        },
      },
    ],
  }) as unknown as EventEmitter & PromiseLike<autocannon.Result>;
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
    if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
  });
  const result = await instance;
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const requests = latencies.length + result.non2xx;
  return {
    concurrency: settings.concurrency,
    requestsPerSecond: latencies.length / seconds,
    p50Ms: latencies.length > 0 ? percentile(latencies, 50) : NaN,
    p99Ms: latencies.length > 0 ? percentile(latencies, 99) : NaN,
    requests,
    errors: result.errors + result.non2xx,
  };
}
