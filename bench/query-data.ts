import type { Client } from '@elastic/elasticsearch';
import type { StoredEvent } from '../shared/event-index.ts';
import { eventShape } from '../shared/event-shape.ts';
import { partitionIndexName } from '../shared/partitions.ts';
import { SOURCE_NAMES, type SourceName } from '../shared/sources.ts';
import { formatMicros, microsecondsFromStoredTimestamp } from '../shared/stored-timestamp.ts';
import { bulkLoad } from './query-store.ts';

/**
 * The events the query benchmark reads: edge events spread over the 7 days before `endMs` across 100
 * projects, written to daily partitions as the worker would name them. An event's time depends on
 * its number alone, so a larger data set is a smaller one plus more events (loaded on top).
 */
export const PROJECTS = 100;
/** The project every benchmark request asks for. */
export const BENCH_PROJECT = 'proj042';
export const OTHER_SOURCE_EVENTS = 10_000;

const WEEK_MS = 7 * 24 * 3600 * 1000;
/** A prime above the largest data set: n * 7919 mod it spreads consecutive numbers over the week. */
const SPREAD = 10_000_019;
const PATHS = ['/rest/v1/items', '/auth/v1/token', '/storage/v1/object/a', '/realtime/v1/websocket', '/rest/v1/rpc/f', '/graphql/v1', '/functions/v1/hello'];
const STATUS = [200, 200, 200, 201, 204, 304, 400, 401, 404, 500, 503];

export const projectName = (n: number) => `proj${String(n % PROJECTS).padStart(3, '0')}`;

function micros(n: number, endMs: number): number {
  return (endMs - Math.floor((((n * 7919) % SPREAD) / SPREAD) * WEEK_MS)) * 1000 - (n % 1000);
}

/** One request and one response record each, so sandboxed GROUP BYs are answered by pushed-down aggregations. */
export function edgeEvent(n: number, endMs: number): StoredEvent {
  const project = projectName(n);
  const path = PATHS[n % PATHS.length]!;
  const status = STATUS[(n * 31) % STATUS.length]!;
  const search = n % 4 === 0 ? `?id=eq.${n % 997}` : '';
  const metadata = {
    request: {
      method: n % 3 === 0 ? 'POST' : 'GET',
      path,
      search,
      url: `https://${project}.supabase.co${path}${search}`,
      headers: { user_agent: 'bench', cf_connecting_ip: `203.0.113.${n % 250}` },
      cf: { country: ['DE', 'US', 'FR', 'BR'][n % 4] },
    },
    response: { status_code: status, origin_time: n % 400, headers: { content_type: 'application/json' } },
  };
  const timestamp = micros(n, endMs);
  return {
    id: `edge-${n}`,
    timestamp: formatMicros(timestamp),
    event_message: `${metadata.request.method} | ${status} | 203.0.113.${n % 250} | ${metadata.request.url}`,
    project,
    metadata,
    shape: eventShape(metadata),
  };
}

/** The other sources' events, for the studio queries that read them: half of them of `benchProject`. */
export function otherSourceEvent(source: SourceName, n: number, endMs: number, benchProject = BENCH_PROJECT): StoredEvent {
  const project = n % 2 === 0 ? benchProject : 'other';
  const metadata: Record<string, unknown> = {
    parsed: { error_severity: ['LOG', 'ERROR', 'WARNING', 'FATAL'][n % 4], sql_state_code: '00000' },
    level: n % 5 === 0 ? 'error' : 'info',
    function_id: '8c1f5e2a-7b3d-4c6e-9f0a-2b4d6e8f0a1c',
    project_ref: project,
    project,
    status: String(STATUS[n % STATUS.length]),
  };
  const eventMessage =
    source === 'auth_logs'
      ? JSON.stringify({ auth_event: { actor_id: `u${n % 50}`, action: 'login' } })
      : `${source} ${n % 7 === 0 ? 'ObjectNotFound' : 'ok'} ${n}`;
  const spread = Math.floor((((n * 7919) % OTHER_SOURCE_EVENTS) / OTHER_SOURCE_EVENTS) * WEEK_MS);
  return {
    id: `${source}-${n}`,
    timestamp: formatMicros((endMs - spread) * 1000),
    event_message: eventMessage,
    project,
    metadata,
    shape: eventShape(metadata),
  };
}

const dailyPartition = (prefix: string, source: SourceName) => (event: StoredEvent) =>
  partitionIndexName(prefix, source, 'daily', Math.floor(microsecondsFromStoredTimestamp(event.timestamp) / 1000));

/** Edge events numbered [from, to), straight into their daily partitions (bulk, not through Kafka). */
export async function loadEdgeEvents(elasticsearch: Client, prefix: string, from: number, to: number, endMs: number): Promise<void> {
  await bulkLoad(elasticsearch, dailyPartition(prefix, 'edge_logs'), to - from, (n) => edgeEvent(from + n, endMs));
}

/**
 * `count` more edge events of BENCH_PROJECT, numbered from `from` on (every PROJECTS-th number is that project's),
 * so that one project holds in a week what it would among 10M events: the queries that pull whole events reach their caps.
 */
export async function loadBenchProjectEdgeEvents(elasticsearch: Client, prefix: string, from: number, count: number, endMs: number): Promise<void> {
  const own = Number(BENCH_PROJECT.slice('proj'.length));
  const first = from + ((own - (from % PROJECTS) + PROJECTS) % PROJECTS);
  await bulkLoad(elasticsearch, dailyPartition(prefix, 'edge_logs'), count, (n) => edgeEvent(first + n * PROJECTS, endMs));
}

export async function loadOtherSources(elasticsearch: Client, prefix: string, endMs: number): Promise<void> {
  for (const source of SOURCE_NAMES.filter((name) => name !== 'edge_logs')) {
    await bulkLoad(elasticsearch, dailyPartition(prefix, source), OTHER_SOURCE_EVENTS, (n) => otherSourceEvent(source, n, endMs));
  }
}
