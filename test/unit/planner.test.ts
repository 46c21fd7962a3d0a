import { describe, expect, it } from 'vitest';
import { logsAll } from '../../queries/logs-all.ts';
import { usageApiCounts } from '../../queries/usage-api-counts.ts';
import type { SourceCte } from '../../queries/endpoint.ts';
import { SOURCES } from '../../shared/sources.ts';
import { BadParameter, Forbidden } from '../../src/errors.ts';
import { planEndpointQuery, type Plan, type ScopeContext } from '../../src/planner/index.ts';
import { scopeOf, timestampBound as parseTimestampParameter } from '../../src/planner/scope.ts';

const context: ScopeContext = { now: Date.UTC(2024, 2, 10, 12, 34, 56, 789), projects: null, indexPrefix: 'lp-' };
const logs = logsAll;
const usage = usageApiCounts;

/** The single scan of a saved selection's plan, as the old compiled query exposed it. */
function compileEndpoint(endpoint: typeof logs | typeof usage, params: Record<string, unknown>, scopeContext: ScopeContext) {
  const plan: Plan = planEndpointQuery(endpoint, params, scopeContext);
  const scan = plan.scans[0]!;
  if (scan.kind === 'constant') throw new Error('saved selections scan the store');
  return scan;
}

describe('compileEndpoint: logs.all', () => {
  const params = logsAll.parameters.parse({ project: 'abc', iso_timestamp_start: '2024-01-01T00:00:00.000Z', iso_timestamp_end: '2024-01-01T01:00:00+01:00' });

  it('scopes all nine CTEs, each with its project filter first and then the time bounds', () => {
    expect(logs.ctes.map((cte) => cte.name)).toEqual(SOURCES.map((source) => source.name));
    for (const source of SOURCES) {
      const cte = scopeOf(logs.ctes.find((candidate): candidate is SourceCte => candidate.name === source.name)!, params, context);
      expect(cte.index).toBe(`lp-${source.name}-2024.01.01*,lp-${source.name}`);
      expect(cte.filter).toEqual([
        { term: { [source.projectField]: 'abc' } },
        { range: { timestamp: { gt: '2024-01-01T00:00:00.000000000Z', lte: '2024-01-01T00:00:00.000000000Z' } } },
      ]);
    }
  });

  it('selects edge_logs only: four columns, newest first with id as tie-break, 100 rows', () => {
    const compiled = compileEndpoint(logs, params, context);
    expect(compiled.search).toMatchObject({
      index: 'lp-edge_logs-2024.01.01*,lp-edge_logs',
      size: 100,
      sort: [{ timestamp: { order: 'desc' } }, { id: { order: 'desc' } }],
      _source: ['id', 'timestamp', 'event_message', 'metadata', 'metadata_unindexed'],
    });
  });

  it('leaves out an empty bound', () => {
    const compiled = compileEndpoint(
      logs,
      logsAll.parameters.parse({ project: 'abc', iso_timestamp_start: '', iso_timestamp_end: '2024-01-01T01:00:00.000Z' }),
      context,
    );
    expect(compiled.scope[1]).toEqual({ range: { timestamp: { lte: '2024-01-01T01:00:00.000000000Z' } } });
    const unbounded = compileEndpoint(logs, logsAll.parameters.parse({ project: 'abc' }), context);
    expect(unbounded.scope).toHaveLength(1);
  });

  it("refuses a project outside the key's list with Forbidden", () => {
    expect(() => compileEndpoint(logs, params, { ...context, projects: ['xyz'] })).toThrow(Forbidden);
    expect(() => compileEndpoint(logs, params, { ...context, projects: ['xyz', 'abc'] })).not.toThrow();
  });
});

describe('compileEndpoint: usage.api-counts', () => {
  it.each([
    ['hourly', '2024-03-10T11:34:56.789000000Z', 'hour'],
    ['daily', '2024-03-03T12:34:56.789000000Z', 'day'],
    ['minutely', '2024-03-10T11:34:56.789000000Z', 'minute'],
  ])('%s: window from %s, buckets by %s in UTC', (interval, start, unit) => {
    const compiled = compileEndpoint(usage, usageApiCounts.parameters.parse({ interval, project: 'abc' }), context);
    const search = compiled.search as { query: { bool: { filter: unknown[] } }; aggs: { buckets: { composite: { size: number; sources: unknown[] } } } };
    expect(search.query.bool.filter[0]).toEqual({ range: { timestamp: { gte: start } } });
    expect(search.aggs.buckets.composite.size).toBe(1000);
    expect(search.aggs.buckets.composite.sources).toEqual([
      { timestamp: { date_histogram: { field: 'timestamp', calendar_interval: unit, time_zone: 'UTC', order: 'asc' } } },
    ]);
  });

  it("restricts the events to the key's projects", () => {
    const compiled = compileEndpoint(usage, { interval: 'hourly', project: 'abc' }, { ...context, projects: ['p1', 'p2'] });
    expect((compiled.search.query as { bool: { filter: unknown[] } }).bool.filter).toContainEqual({ terms: { project: ['p1', 'p2'] } });
  });

  it('counts paths containing each text in its own column', () => {
    const compiled = compileEndpoint(usage, { interval: 'hourly', project: 'abc' }, context);
    expect(JSON.stringify(compiled.search.aggs)).toContain('"total_realtime_requests":{"wildcard":{"metadata.request.path":{"value":"*/realtime*"}}}');
  });

  it('rejects an interval outside the three', () => {
    expect(() => compileEndpoint(usage, { interval: 'weekly', project: 'abc' }, context)).toThrow(/hourly, daily, minutely/);
    const parsed = usageApiCounts.parameters.safeParse({ interval: 'weekly', project: 'a' });
    expect(parsed.success).toBe(false);
  });
});

describe('parseTimestampParameter', () => {
  it.each([
    ['2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000000000Z'],
    ['2024-01-01T00:00:00.123456Z', '2024-01-01T00:00:00.123456000Z'],
    ['2024-01-01T00:00:00Z', '2024-01-01T00:00:00.000000000Z'],
    ['2024-01-01T02:30:00.5+02:30', '2024-01-01T00:00:00.500000000Z'],
    ['2024-01-01', '2024-01-01T00:00:00.000000000Z'],
    ['2024-01-01T00:00', '2024-01-01T00:00:00.000000000Z'],
  ])('%s -> %s', (text, expected) => {
    expect(parseTimestampParameter('iso_timestamp_start', text)).toBe(expected);
  });

  it.each(['yesterday', '2024-13-01T00:00:00Z', '2024-02-30T00:00:00Z', '2024-01-01T24:00:00Z', '1704067200'])('rejects %s naming the parameter', (text) => {
    expect(() => parseTimestampParameter('iso_timestamp_end', text)).toThrow(BadParameter);
    expect(() => parseTimestampParameter('iso_timestamp_end', text)).toThrow(/iso_timestamp_end/);
  });
});
