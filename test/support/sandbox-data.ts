import type { StoredEvent } from '../../shared/event-index.ts';
import { eventShape } from '../../shared/event-shape.ts';
import { SOURCES, type SourceName } from '../../shared/sources.ts';
import { formatMicros } from '../../shared/stored-timestamp.ts';

/**
 * Events for sandbox tests: every source, two projects interleaved in time, values on both sides
 * of the filters the studio queries use, some events with several records (so aggregations must
 * fall back) and some without the arrays a query unnests. Deterministic: a seeded generator.
 */
export interface SandboxDataset {
  events: Map<SourceName, StoredEvent[]>;
}

function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const START = Date.UTC(2023, 11, 31, 12);
const SPAN_MS = 36 * 3600 * 1000;

function stored(ms: number, micros: number): string {
  return formatMicros(ms * 1000 + micros);
}

/** Where a source keeps the project: a column, or a metadata field. */
function withProject(source: SourceName, project: string, metadata: Record<string, unknown>): { project?: string; metadata: Record<string, unknown> } {
  const field = SOURCES.find((candidate) => candidate.name === source)!.projectField;
  if (field === 'project') return { project, metadata };
  return { metadata: { ...metadata, [field.slice('metadata.'.length)]: project } };
}

export function sandboxDataset(options: { perSource: number; projects: [string, string]; seed?: number; withShape?: boolean }): SandboxDataset {
  const next = random(options.seed ?? 7);
  const pick = <T>(values: readonly T[]): T => values[Math.floor(next() * values.length)]!;
  const events = new Map<SourceName, StoredEvent[]>();
  SOURCES.forEach((source, sourceIndex) => {
    const list: StoredEvent[] = [];
    for (let n = 0; n < options.perSource; n += 1) {
      const project = options.projects[n % 2]!;
      // distinct timestamps per source, so every ORDER BY timestamp has one answer
      const ms = START + Math.floor((n / options.perSource) * SPAN_MS) + sourceIndex;
      const timestamp = stored(ms, n % 1000);
      const id = `${project}-${source.name}-${n}`;
      let metadata: Record<string, unknown>;
      let eventMessage = `${source.name} event ${n} of ${project}`;
      const status = pick([200, 201, 204, 301, 400, 404, 429, 500, 503]);
      const path = pick(['/rest/v1/items', '/auth/v1/token', '/storage/v1/object', '/realtime/v1/ws', '/rest/v1/rpc/x']);
      const several = n % 11 === 5;
      switch (source.name) {
        case 'edge_logs':
        case 'function_edge_logs': {
          const request = {
            method: pick(['GET', 'POST']),
            path,
            search: pick(['?a=1', '', '?select=*']),
            url: `https://${project}.example.co${path}`,
            headers: { 'user-agent': pick(['curl', 'browser']) },
            cf: { country: pick(['DE', 'US', 'FR', null]) },
          };
          const response = { status_code: status, origin_time: Math.round(next() * 500), headers: { 'content-type': 'application/json' } };
          metadata = {
            request: several ? [request, { ...request, path: '/rest/v1/second' }] : request,
            ...(n % 13 === 7 ? {} : { response }),
            function_id: pick(['8c1f5e2a-7b3d-4c6e-9f0a-2b4d6e8f0a1c', '5d2e9a7b-3c4f-4a1b-8e6d-0f9c8b7a6d5e', 'other-fn']),
          };
          eventMessage = `${request.method} | ${status} | ${request.url}`;
          break;
        }
        case 'postgres_logs': {
          const parsed = {
            error_severity: pick(['LOG', 'WARNING', 'ERROR', 'FATAL', 'PANIC']),
            sql_state_code: pick(['00000', '42P01', '57014']),
            detail: pick(['d1', null]),
            hint: pick(['h1', null]),
          };
          metadata = { parsed: several ? [parsed, { ...parsed, error_severity: 'LOG' }] : parsed };
          break;
        }
        case 'function_logs':
          metadata = {
            level: pick(['error', 'info']),
            function_id: pick(['8c1f5e2a-7b3d-4c6e-9f0a-2b4d6e8f0a1c', '8c1f5e2a-7b3d-4c6e-9f0a-2b4d6e8f0a1c', 'other-fn']),
            event_type: 'Log',
            execution_id: `x${n}`,
          };
          break;
        case 'auth_logs': {
          const actor = pick(['3f2a7c1e-5b6d-4e8f-9a0b-1c2d3e4f5a6b', 'u2', 'u3']);
          const action = pick(['login', 'token_refreshed', 'logout', 'user_signedup']);
          metadata = { level: pick(['error', 'info']), status: String(status), path, msg: 'm', error: null };
          eventMessage = JSON.stringify({ auth_event: { actor_id: actor, action }, msg: `user ${actor}` });
          break;
        }
        default:
          metadata = { level: pick(['error', 'info']), note: pick(['ObjectNotFound: x', 'ok']), tags: pick([['alpha', 'beta'], ['beta'], []]) };
          eventMessage = `${source.name} ${metadata.note as string} ${n}`;
      }
      const placed = withProject(source.name, project, metadata);
      const event: StoredEvent = {
        id,
        timestamp,
        event_message: eventMessage,
        ...(placed.project ? { project: placed.project } : {}),
        metadata: placed.metadata,
      };
      if (options.withShape !== false) event.shape = eventShape(event.metadata);
      list.push(event);
    }
    events.set(source.name, list);
  });
  return { events };
}
