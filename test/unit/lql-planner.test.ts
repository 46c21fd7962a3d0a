import { describe, expect, it } from 'vitest';
import { logsAll } from '../../queries/logs-all.ts';
import { usageApiCounts } from '../../queries/usage-api-counts.ts';
import { InvalidQuery, LqlSyntax, UnknownField, UnknownTable } from '../../src/errors.ts';
import { parseLql } from '../../src/lql/index.ts';
import type { LqlFilter, LqlQuery } from '../../src/lql/syntax.ts';
import { fieldCatalog } from '../../src/planner/field-catalog.ts';
import { planEndpointQuery, type Plan } from '../../src/planner/index.ts';
import type { ChartScan, EventScan } from '../../src/planner/plan.ts';

const now = Date.UTC(2024, 0, 10, 12, 30);
const catalog = fieldCatalog({
  'metadata.request': 'nested',
  'metadata.request.path': 'keyword',
  'metadata.level': 'keyword',
  'metadata.latency': 'long',
  'metadata.tags': 'keyword',
  'metadata.ok': 'boolean',
  'metadata.created_at': 'keyword',
  'metadata.user_name': 'keyword',
});
const catalogs = new Map([
  ['edge_logs', catalog],
  ['postgres_logs', catalog],
]);

function plan(query: Partial<LqlQuery>, endpoint: typeof logsAll | typeof usageApiCounts = logsAll, params: Record<string, unknown> = { project: 'p1' }): Plan {
  return planEndpointQuery(
    endpoint,
    params,
    { now, projects: null, indexPrefix: 'lp-' },
    {
      language: 'lql',
      query: { filters: [], select: [], from: { name: 'edge_logs', offset: 1 }, ...query },
      limits: { maxScanEvents: 1000, maxScans: 32 },
      catalogs,
    },
  );
}

function predicates(filters: LqlFilter[]): unknown[] {
  return (plan({ filters }).scans[0] as EventScan).predicates;
}

const at = { negated: false, offset: 1 };

describe('LQL filters become exact Elasticsearch filters', () => {
  it('free text is a case-sensitive substring of the message; ~ is a partial regex, (?i) case-insensitive', () => {
    expect(
      predicates([{ kind: 'comparison', path: 'event_message', operator: 'contains', value: { kind: 'string', value: 'a*b', quoted: false }, ...at }]),
    ).toEqual([{ wildcard: { 'event_message.keyword': { value: '*a\\*b*' } } }]);
    expect(
      predicates([{ kind: 'comparison', path: 'event_message', operator: '~', value: { kind: 'string', value: '(?i)^err', quoted: false }, ...at }]),
    ).toEqual([{ regexp: { 'event_message.keyword': { value: 'err.*', flags: 'NONE', max_determinized_states: 10_000, case_insensitive: true } } }]);
  });

  it('fields inside nested records are matched inside nested queries (any record)', () => {
    expect(
      predicates([{ kind: 'comparison', path: 'metadata.request.path', operator: '~', value: { kind: 'string', value: '^/rest', quoted: true }, ...at }]),
    ).toEqual([
      {
        nested: {
          path: 'metadata.request',
          query: { regexp: { 'metadata.request.path': { value: '\\/rest.*', flags: 'NONE', max_determinized_states: 10_000 } } },
        },
      },
    ]);
  });

  it('compares numbers on numeric fields, never text against a number, and negates', () => {
    expect(predicates([{ kind: 'comparison', path: 'metadata.latency', operator: '>', value: { kind: 'number', text: '50' }, ...at }])).toEqual([
      { range: { 'metadata.latency': { gt: 50 } } },
    ]);
    expect(
      predicates([{ kind: 'comparison', path: 'metadata.latency', operator: '=', value: { kind: 'string', value: 'slow', quoted: true }, ...at }]),
    ).toEqual([{ match_none: {} }]);
    expect(
      predicates([
        { kind: 'comparison', path: 'metadata.level', operator: '=', value: { kind: 'string', value: 'error', quoted: false }, negated: true, offset: 1 },
      ]),
    ).toEqual([{ bool: { must_not: [{ term: { 'metadata.level': 'error' } }] } }]);
    expect(predicates([{ kind: 'comparison', path: 'metadata.level', operator: 'is_null', ...at }])).toEqual([
      { bool: { must_not: [{ exists: { field: 'metadata.level' } }] } },
    ]);
    expect(predicates([{ kind: 'range', path: 'metadata.latency', low: { kind: 'number', text: '1' }, high: { kind: 'number', text: '9' }, ...at }])).toEqual([
      { range: { 'metadata.latency': { gte: 1, lte: 9 } } },
    ]);
  });

  it('a level range covers the syslog order between its ends', () => {
    const [query] = predicates([
      {
        kind: 'range',
        path: 'metadata.level',
        low: { kind: 'string', value: 'error', quoted: false },
        high: { kind: 'string', value: 'alert', quoted: false },
        ...at,
      },
    ]) as { terms: { 'metadata.level': string[] } }[];
    expect(query!.terms['metadata.level']).toEqual(['error', 'ERROR', 'critical', 'CRITICAL', 'alert', 'ALERT']);
    expect(() =>
      predicates([
        {
          kind: 'range',
          path: 'metadata.level',
          low: { kind: 'string', value: 'alert', quoted: false },
          high: { kind: 'string', value: 'error', quoted: false },
          ...at,
        },
      ]),
    ).toThrow(InvalidQuery);
  });

  it("resolves times against the request's time: dates are whole days, last@ and this@ end now", () => {
    const times = (filter: LqlFilter) => predicates([filter])[0];
    expect(times({ kind: 'timestamp', path: 'timestamp', operator: '=', times: [{ kind: 'iso', text: '2024-01-05' }], ...at })).toEqual({
      range: { timestamp: { gte: '2024-01-05T00:00:00.000000000Z', lte: '2024-01-05T23:59:59.999999000Z' } },
    });
    // counted from the current hour, as the reference does (floor(now, hour) - 2h)
    expect(times({ kind: 'timestamp', path: 'timestamp', operator: 'range', times: [{ kind: 'last', amount: 2, unit: 'hours' }], ...at })).toEqual({
      range: { timestamp: { gte: '2024-01-10T10:00:00.000000000Z', lte: '2024-01-10T12:30:00.000000000Z' } },
    });
    expect(times({ kind: 'timestamp', path: 'timestamp', operator: 'range', times: [{ kind: 'last', amount: 1, unit: 'months' }], ...at })).toEqual({
      range: { timestamp: { gte: '2023-12-10T00:00:00.000000000Z', lte: '2024-01-10T12:30:00.000000000Z' } },
    });
    expect(times({ kind: 'timestamp', path: 'timestamp', operator: 'range', times: [{ kind: 'relative', name: 'yesterday' }], ...at })).toEqual({
      range: { timestamp: { gte: '2024-01-09T00:00:00.000000000Z', lte: '2024-01-09T23:59:59.999999000Z' } },
    });
    expect(times({ kind: 'timestamp', path: 'timestamp', operator: '>', times: [{ kind: 'unix', digits: '1704067200' }], ...at })).toEqual({
      range: { timestamp: { gt: '2024-01-01T00:00:00.000000000Z' } },
    });
    expect(times({ kind: 'timestamp', path: 'timestamp', operator: 'range', times: [{ kind: 'this', unit: 'hour' }], ...at })).toEqual({
      range: { timestamp: { gte: '2024-01-10T12:00:00.000000000Z', lte: '2024-01-10T12:30:00.000000000Z' } },
    });
  });

  it('keeps the CTE scope first, reads other top-level names inside metadata, and never reaches internal fields', () => {
    const scan = plan({ filters: [] }).scans[0] as EventScan;
    expect((scan.search.query as { bool: { filter: unknown[] } }).bool.filter[0]).toEqual({ term: { project: 'p1' } });
    for (const path of ['shape.version', 'shape', '_index', '_source.x', 'metadata_unindexed', 'folded_fields', 'key_field', 'metadata', 'a..b']) {
      expect(() => predicates([{ kind: 'comparison', path, operator: '=', value: { kind: 'number', text: '1' }, ...at }]), path).toThrow(InvalidQuery);
    }
    expect(predicates([{ kind: 'comparison', path: 'created_at', operator: '=', value: { kind: 'string', value: 'x', quoted: false }, ...at }])).toEqual([
      { term: { 'metadata.created_at': 'x' } },
    ]);
  });
});

describe('tables, columns and charts', () => {
  it('needs f: when the endpoint has several tables, and names them; an unknown one is unknown_table', () => {
    expect(() => plan({ from: undefined })).toThrow(LqlSyntax);
    expect(() => plan({ from: undefined })).toThrow(/edge_logs, postgres_logs/);
    expect(() => plan({ from: { name: 'nope', offset: 3 } })).toThrow(UnknownTable);
    expect(() => plan({ from: { name: 'chart_counts', offset: 3 } }, usageApiCounts, { interval: 'hourly', project: 'x' })).toThrow(
      /LQL reads tables of events/,
    );
  });

  it('returns timestamp, id, event_message and the filtered paths by default, newest first, at most 1000', () => {
    const result = plan({
      filters: [{ kind: 'comparison', path: 'metadata.request.path', operator: '=', value: { kind: 'string', value: '/a', quoted: false }, ...at }],
    });
    expect(result.answer).toEqual({
      kind: 'selected',
      table: 'edge_logs',
      columns: [
        { name: 'timestamp', path: 'timestamp' },
        { name: 'id', path: 'id' },
        { name: 'event_message', path: 'event_message' },
        { name: 'path', path: 'metadata.request.path' },
      ],
    });
    expect((result.scans[0] as EventScan).take).toEqual({ kind: 'limit', rows: 1000 });
    const selected = plan({
      select: [
        { kind: 'field', path: 'metadata.level', alias: 'lvl', offset: 1 },
        { kind: 'field', path: 'id', offset: 5 },
      ],
    });
    expect(selected.answer).toMatchObject({
      columns: [
        { name: 'lvl', path: 'metadata.level' },
        { name: 'id', path: 'id' },
      ],
    });
  });

  it('charts one aggregate per calendar bucket, oldest first', () => {
    const count = plan({ chart: { aggregate: 'count', period: 'hour', offset: 1 } }).scans[0] as ChartScan;
    expect((count.search.aggs as { buckets: { composite: { sources: unknown[] } } }).buckets.composite.sources).toEqual([
      { timestamp: { date_histogram: { field: 'timestamp', calendar_interval: 'hour', time_zone: 'UTC', order: 'asc' } } },
    ]);
    const p95 = plan({ chart: { aggregate: 'p95', path: 'metadata.latency', period: 'minute', offset: 1 } }).scans[0] as ChartScan;
    expect(p95.value).toEqual({ column: 'p95', path: ['value'], from: 'percentile', percentile: '95.0' });
    expect(() => plan({ chart: { aggregate: 'avg', path: 'metadata.level', period: 'minute', offset: 1 } })).toThrow(/only numeric fields/);
  });
});

describe('LQL time filters narrow the partitions read', () => {
  const indexOf = (lql: string) => {
    const query = parseLql(`f:edge_logs ${lql}`);
    return (plan({ filters: query.filters, chart: query.chart }).scans[0] as EventScan | ChartScan).index.split(',');
  };

  it('t:last@1hour reads the current day and week only; a chart too', () => {
    expect(indexOf('t:last@1hour')).toEqual(['lp-edge_logs-2024.01.10*', 'lp-edge_logs-2024.01.08w', 'lp-edge_logs']);
    expect(indexOf('t:last@1hour c:count(*)')).toEqual(['lp-edge_logs-2024.01.10*', 'lp-edge_logs-2024.01.08w', 'lp-edge_logs']);
  });

  it('several time filters intersect; a negated one, or none, reads the whole source', () => {
    expect(indexOf('t:>=2024-01-05 t:<2024-01-06T12:00:00Z')).toEqual([
      'lp-edge_logs-2024.01.05*',
      'lp-edge_logs-2024.01.06*',
      'lp-edge_logs-2024.01.01w',
      'lp-edge_logs',
    ]);
    expect(indexOf('-t:2024-01-05')).toEqual(['lp-edge_logs-*', 'lp-edge_logs']);
    expect(indexOf('error')).toEqual(['lp-edge_logs-*', 'lp-edge_logs']);
  });

  it("within the endpoint's own bounds: the narrower of the two wins", () => {
    const query = parseLql('f:edge_logs t:>=2023-12-01');
    const scan = planEndpointQuery(
      logsAll,
      { project: 'p1', iso_timestamp_start: '2024-01-09T00:00:00Z', iso_timestamp_end: '2024-01-09T06:00:00Z' },
      { now, projects: null, indexPrefix: 'lp-' },
      { language: 'lql', query, limits: { maxScanEvents: 1000, maxScans: 32 }, catalogs },
    ).scans[0] as EventScan;
    expect(scan.index.split(',')).toEqual(['lp-edge_logs-2024.01.09*', 'lp-edge_logs-2024.01.08w', 'lp-edge_logs']);
  });
});

describe('what the reference refuses outside the syntax', () => {
  const planned = (lql: string, catalogsOf = catalogs) =>
    planEndpointQuery(
      logsAll,
      { project: 'p1' },
      { now, projects: null, indexPrefix: 'lp-' },
      { language: 'lql', query: parseLql(`f:edge_logs ${lql}`), limits: { maxScanEvents: 1000, maxScans: 32 }, catalogs: catalogsOf },
    );

  it('a metadata path no stored event has is refused, naming it, in a filter, a select or a chart', () => {
    for (const lql of [
      'm.nonexistent:value',
      'm.nonexistent.field:value',
      '-m.nonexistent:NULL',
      's:m.nonexistent',
      'c:max(m.nonexistent)',
      'nonexistent:1',
      'm.request.nonexistent:~x',
    ]) {
      expect(() => planned(lql), lql).toThrow(UnknownField);
    }
    expect(() => planned('m.nonexistent:value')).toThrow('metadata.nonexistent is not a field of edge_logs');
    for (const lql of [
      'm.request.path:x',
      'm.request:NULL',
      'created_at:x',
      'event_message:x',
      'id:x',
      's:m.tags s:timestamp',
      'c:max(m.latency)',
      'm.level:error..critical',
    ]) {
      expect(() => planned(lql), lql).not.toThrow();
    }
  });

  it('a value filter on a path holding records is refused, naming it; a NULL test on it is not', () => {
    for (const lql of ['m.request:~"ne-1"', 'm.request:x', 'm.request:>1', 'm.request:1..2', '-m.request:x']) {
      expect(() => planned(lql), lql).toThrow(InvalidQuery);
      expect(() => planned(lql), lql).toThrow('metadata.request holds records, not values; filter on a field inside it (metadata.request.<field>)');
    }
    for (const lql of ['m.request:NULL', '-m.request:NULL']) expect(() => planned(lql), lql).not.toThrow();
  });

  it('without a catalog of the source (none read) no path is refused for being unknown', () => {
    expect(() => planned('m.nonexistent:value', new Map())).not.toThrow();
  });

  it('a chart over a bounded range may have at most 250 buckets of its period', () => {
    const refused = (lql: string) => expect(() => planned(lql), lql).toThrow(InvalidQuery);
    const allowed = (lql: string) => expect(() => planned(lql), lql).not.toThrow();
    refused('t:2023-01-01T00:00:00..2023-01-15T00:00:00 c:count(*) c:group_by(t::minute)');
    expect(() => planned('t:2023-01-01T00:00:00..2023-01-15T00:00:00 c:count(*) c:group_by(t::minute)')).toThrow('makes 20,161 buckets, more than 250');
    // open above: up to now
    refused('t:>2023-01-01T00:00:00 c:count(*) c:group_by(t::minute)');
    allowed('t:2023-01-01T00:00:00..2023-01-15T00:00:00 c:count(*) c:group_by(t::day)');
    // 250 hours exactly fit; one more does not
    allowed('t:2023-01-01T00:00:00..2023-01-11T09:59:59 c:count(*) c:group_by(t::hour)');
    refused('t:2023-01-01T00:00:00..2023-01-11T10:00:00 c:count(*) c:group_by(t::hour)');
    allowed('t:last@2hours c:count(*)');
    refused('t:last@5hours c:count(*) c:group_by(t::minute)');
    // not bounded below: no count to make
    allowed('t:<2023-01-01T00:00:00 c:count(*) c:group_by(t::second)');
    allowed('c:count(*) c:group_by(t::second)');
  });
});
