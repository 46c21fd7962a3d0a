import { beforeAll, describe, expect, it } from 'vitest';
import { expressionReads } from '../../shared/partitions.ts';
import { fieldCatalog } from '../../src/planner/field-catalog.ts';
import type { Plan } from '../../src/planner/index.ts';
import type { EventScan } from '../../src/planner/plan.ts';
import { initSqlParser, parseSandboxQuery } from '../../src/sql/index.ts';
import { logsAllParseOptions, planLogsAllQuery } from '../support/sandbox-plan.ts';

// Monday 2024-01-08 10:00 UTC: a read without an upper bound looks one day ahead, to the 9th
const now = Date.UTC(2024, 0, 8, 10);
const catalog = fieldCatalog({
  id: 'keyword',
  project: 'keyword',
  event_message: 'text',
  'event_message.keyword': 'keyword',
  'metadata.request': 'nested',
  'metadata.request.path': 'keyword',
  'metadata.response.status_code': 'long',
  'metadata.level': 'keyword',
});

function plan(sql: string, params: Record<string, string> = { project: 'default' }): Plan {
  return planLogsAllQuery(parseSandboxQuery(sql, logsAllParseOptions), catalog, { now, params });
}

function eventScans(result: Plan): EventScan[] {
  return result.scans.flatMap((scan) => (scan.kind === 'events' ? [scan] : scan.kind === 'aggregation' ? [scan.fallback.scan] : []));
}

const DAYS = ['2024.01.01', '2024.01.02', '2024.01.03', '2024.01.04', '2024.01.05', '2024.01.06', '2024.01.07', '2024.01.08', '2024.01.09', '2024.01.10'];

/** The daily edge_logs partitions of 1-10 January an index expression reads, by day of the month. */
function daysRead(index: string, source = 'edge_logs'): number[] {
  return DAYS.flatMap((day, i) => (expressionReads(index.split(','), `lp-${source}-${day}`) ? [i + 1] : []));
}

const ALL_DAYS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
const range = (from: number, to: number) => ALL_DAYS.filter((day) => day >= from && day <= to);

beforeAll(async () => {
  await initSqlParser();
});

describe('a WHERE on timestamp narrows the partitions a scan reads', () => {
  it.each([
    ["timestamp > '2024-01-05T12:00:00Z'", range(5, 9)],
    ["timestamp >= timestamp '2024-01-05 00:00:00 UTC'", range(5, 9)],
    ["'2024-01-05T00:00:00Z' < timestamp", range(5, 9)],
    ["timestamp > cast('2024-01-06T00:00:00Z' as timestamp)", range(6, 9)],
    // an upper bound alone lists no partitions: the read has no first one (shared/partitions.ts)
    ["timestamp < '2024-01-03T00:00:00Z'", ALL_DAYS],
    ["timestamp between '2024-01-02T00:00:00Z' and '2024-01-04T00:00:00.000001Z'", range(2, 4)],
    ["timestamp > '2024-01-02T00:00:00Z' and timestamp <= '2024-01-03T23:59:59Z'", range(2, 3)],
    ["timestamp = '2024-01-04T10:00:00Z'", [4]],
    ['timestamp > timestamp_sub(current_timestamp(), interval 1 hour)', range(8, 9)],
    ['timestamp >= timestamp_sub(current_timestamp(), interval 3 day) and timestamp < current_timestamp()', range(5, 8)],
    // conditions the store cannot check stay with the engine and do not stop the bound
    ["timestamp > '2024-01-07T00:00:00Z' and length(event_message) > 3 and id = 'a'", range(7, 9)],
    ["(timestamp > '2024-01-07T00:00:00Z' and id = 'a') and timestamp < '2024-01-08T00:00:00Z'", range(7, 8)],
  ])('%s', (where, days) => {
    const scan = eventScans(plan(`select id, timestamp from edge_logs where ${where}`))[0]!;
    expect(daysRead(scan.index)).toEqual(days);
    expect(scan.search.index).toBe(scan.index);
  });

  it("never crosses the bounds the endpoint's own parameters set", () => {
    const scan = eventScans(
      plan("select id from edge_logs where timestamp > '2024-01-03T00:00:00Z'", { project: 'default', iso_timestamp_end: '2024-01-05T00:00:00Z' }),
    )[0]!;
    expect(daysRead(scan.index)).toEqual(range(3, 5));
  });

  it('reads only the legacy index when the bounds exclude each other', () => {
    const scan = eventScans(plan("select id from edge_logs where timestamp > '2024-01-05T00:00:00Z' and timestamp < '2024-01-04T00:00:00Z'"))[0]!;
    expect(scan.index).toBe('lp-edge_logs');
  });

  it('narrows a limited scan and the search of its irregular events alike', () => {
    const scan = eventScans(
      plan(
        "select id, r.status_code from edge_logs cross join unnest(metadata) as m cross join unnest(m.response) as r where r.status_code >= 400 and timestamp > '2024-01-06T00:00:00Z' order by timestamp desc limit 10",
      ),
    )[0]!;
    expect(scan.take).toMatchObject({ kind: 'limit', rows: 10, irregular: {} });
    expect(daysRead(scan.search.index as string)).toEqual(range(6, 9));
    expect(daysRead((scan.take as Extract<EventScan['take'], { kind: 'limit' }>).irregular!.index as string)).toEqual(range(6, 9));
  });

  it('narrows a pushed-down aggregation', () => {
    const result = plan("select timestamp_trunc(timestamp, hour) as h, count(*) as n from edge_logs where timestamp >= '2024-01-07T00:00:00Z' group by h");
    const aggregation = result.scans[0]!;
    expect(aggregation.kind).toBe('aggregation');
    if (aggregation.kind !== 'aggregation') return;
    expect(daysRead(aggregation.index)).toEqual(range(7, 9));
    expect(daysRead(aggregation.search.index as string)).toEqual(range(7, 9));
    expect(daysRead(aggregation.irregular.index as string)).toEqual(range(7, 9));
    expect(daysRead(aggregation.fallback.scan.index)).toEqual(range(7, 9));
  });

  it('narrows each scan by its own WHERE: a subquery, a query CTE, a union branch', () => {
    const result = plan(
      "with recent as (select id from edge_logs where timestamp > '2024-01-07T00:00:00Z') " +
        "select id from recent union all select id from auth_logs where timestamp <= '2024-01-02T00:00:00Z' and timestamp > '2024-01-01T10:00:00Z' " +
        "union all select id from edge_logs where id in (select id from auth_logs where timestamp = '2024-01-04T00:00:00Z')",
    );
    const scans = eventScans(result);
    expect(scans.map((scan) => scan.cte)).toEqual(['edge_logs', 'auth_logs', 'edge_logs', 'auth_logs']);
    expect(daysRead(scans[0]!.index)).toEqual(range(7, 9));
    expect(daysRead(scans[1]!.index, 'auth_logs')).toEqual(range(1, 2));
    expect(daysRead(scans[2]!.index)).toEqual(ALL_DAYS);
    expect(daysRead(scans[3]!.index, 'auth_logs')).toEqual([4]);
  });
});

describe('what must not narrow the partitions', () => {
  // each beside a bound that does narrow, to January 2nd on
  it.each([
    ['an OR', "timestamp > '2024-01-07T00:00:00Z' or id = 'a'"],
    ['an OR of two bounds', "timestamp > '2024-01-07T00:00:00Z' or timestamp < '2024-01-02T00:00:00Z'"],
    ['a NOT', "not timestamp < '2024-01-07T00:00:00Z'"],
    ['a NOT BETWEEN', "timestamp not between '2024-01-01T00:00:00Z' and '2024-01-07T00:00:00Z'"],
    ['an inequality', "timestamp != '2024-01-07T00:00:00Z'"],
    ['a comparison with another column', 'timestamp > timestamp_sub(timestamp, interval 1 hour)'],
    ['a value known only when run', "timestamp > (select max(timestamp) from auth_logs where id = 'a')"],
    ['a CASE', "case when id = 'a' then timestamp > '2024-01-07T00:00:00Z' else true end"],
    ['a comparison inside IF', "if(timestamp > '2024-01-07T00:00:00Z', true, id = 'a')"],
  ])('%s', (_, condition) => {
    const scan = eventScans(plan(`select id from edge_logs where timestamp > '2024-01-02T00:00:00Z' and (${condition})`))[0]!;
    expect(daysRead(scan.index)).toEqual(range(2, 9));
  });

  it.each([
    [
      'an outer query over a derived column named timestamp',
      "select id from (select id, timestamp_add(timestamp, interval 9 day) as timestamp from edge_logs) where timestamp > '2024-01-07T00:00:00Z'",
    ],
    ['the nullable side of an outer join', "select e.id from (select 1 as x) s left join edge_logs e on true where e.timestamp > '2024-01-07T00:00:00Z'"],
    ['a join of two scans', "select e.id from edge_logs e join auth_logs a on e.id = a.id where e.timestamp > '2024-01-07T00:00:00Z'"],
    ['a HAVING', "select id, max(timestamp) as timestamp from edge_logs group by id having max(timestamp) > '2024-01-07T00:00:00Z'"],
  ])('%s', (_, sql) => {
    const scan = eventScans(plan(sql))[0]!;
    expect(scan.cte).toBe('edge_logs');
    expect(scan.index).toBe('lp-edge_logs-*,lp-edge_logs');
  });
});
