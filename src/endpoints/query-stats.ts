import { SOURCE_NAMES } from '../../shared/sources.ts';
import { BadParameter } from '../errors.ts';
import type { PushedPart, StoreReads } from '../executor/store-reads.ts';

/** The header asking for statistics, as the `stats` parameter does. */
export const STATS_HEADER = 'SVC-ENDPOINT-STATS';

/**
 * Whether the caller asked for a `stats` object: the `stats` parameter (query string or JSON body)
 * or the SVC-ENDPOINT-STATS header, each exactly true or false (letter case and surrounding spaces
 * ignored; a JSON boolean in a body). Anything else is refused by name, and so are the two sent
 * with different values.
 */
export function statsRequested(parameters: Record<string, unknown>, header: string | string[] | undefined): boolean {
  const sent: { name: string; value: boolean }[] = [];
  if (parameters.stats !== undefined) sent.push({ name: 'stats', value: flag('the stats parameter', parameters.stats) });
  if (header !== undefined) sent.push({ name: STATS_HEADER, value: flag(`the ${STATS_HEADER} header`, header) });
  if (sent.length === 2 && sent[0]!.value !== sent[1]!.value) {
    const shown = `stats=${sent[0]!.value} and ${STATS_HEADER}: ${sent[1]!.value}`;
    throw new BadParameter(`${shown} disagree; send one of them, or both with the same value`, 'bad_request');
  }
  return sent[0]?.value ?? false;
}

function flag(what: string, value: unknown): boolean {
  const allowed = `${what} must be exactly true or false (letter case and surrounding spaces ignored), sent once`;
  if (typeof value === 'boolean') return value;
  if (Array.isArray(value)) throw new BadParameter(`${allowed}; it was sent ${value.length} times`, 'bad_request');
  if (typeof value !== 'string') throw new BadParameter(`${allowed}; got ${value === null ? 'null' : typeof value}`, 'bad_request');
  const text = value.trim().toLowerCase();
  if (text === 'true') return true;
  if (text === 'false') return false;
  const shown = value.length > 40 ? `${JSON.stringify(value.slice(0, 40))}...` : JSON.stringify(value);
  throw new BadParameter(`${allowed}; got ${shown}`, 'bad_request');
}

/** The `stats` object beside `result` (README: Query statistics). */
export interface QueryStats {
  elapsed_ms: number;
  rows_returned: number;
  /** By source: an aggregation's events in scope (its hits total), a search's events fetched. */
  events_scanned: Record<string, number>;
  bytes_read: number;
  cache: { hit: boolean; age_seconds: number };
  pushed_down: PushedPart[];
  engine: { ran: boolean };
  /** Index expressions searched, without the deployment's index prefix. */
  partitions: string[];
}

const PUSHED_ORDER: readonly PushedPart[] = ['filters', 'aggregation', 'sort', 'limit'];

export interface AnsweredRun {
  elapsedMs: number;
  rows: number;
  cache: 'HIT' | 'MISS' | 'BYPASS';
  ageSeconds: number;
  /** What this request's own run read; a cache hit ran nothing, and reads nothing. */
  reads: StoreReads;
  indexPrefix: string;
}

export function queryStats(run: AnsweredRun): QueryStats {
  const { reads, indexPrefix } = run;
  const unprefixed = (expression: string) => {
    const excluded = expression.startsWith('-');
    const name = excluded ? expression.slice(1) : expression;
    return name.startsWith(indexPrefix) ? `${excluded ? '-' : ''}${name.slice(indexPrefix.length)}` : expression;
  };
  const events: Record<string, number> = {};
  for (const [index, count] of reads.scannedByIndex) {
    const source = sourceOf(unprefixed(index));
    events[source] = (events[source] ?? 0) + count;
  }
  const partitions = new Set(reads.searches.flatMap((search) => search.indices.map(unprefixed)));
  return {
    elapsed_ms: Math.round(run.elapsedMs * 10) / 10,
    rows_returned: run.rows,
    events_scanned: events,
    bytes_read: reads.searches.reduce((total, search) => total + search.bytes, 0),
    cache: { hit: run.cache === 'HIT', age_seconds: run.cache === 'HIT' ? run.ageSeconds : 0 },
    pushed_down: PUSHED_ORDER.filter((part) => reads.pushed.has(part)),
    engine: { ran: reads.engineRan },
    partitions: [...partitions].sort(),
  };
}

/** The source an index expression reads (the longest source name it starts with; no source name starts with another's). */
function sourceOf(expression: string): string {
  const source = [...SOURCE_NAMES].sort((a, b) => b.length - a.length).find((name) => expression.startsWith(name));
  return source ?? expression;
}

/** The answer's `{"result":[...]}` bytes with `"stats":{...}` added beside result; the given body (perhaps cached) is not changed. */
export function withStats(body: Buffer, stats: QueryStats): Buffer {
  // the body ends with the object's closing brace: stats go in before it
  return Buffer.concat([body.subarray(0, body.length - 1), Buffer.from(`,"stats":${JSON.stringify(stats)}}`)]);
}
