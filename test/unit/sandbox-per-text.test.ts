import { beforeAll, describe, expect, it } from 'vitest';
import { tableNames } from '../../queries/endpoint.ts';
import { logsAll } from '../../queries/logs-all.ts';
import { translateBeforeScans } from '../../src/executor/index.ts';
import { fieldCatalog } from '../../src/planner/field-catalog.ts';
import type { Plan } from '../../src/planner/index.ts';
import { freezeTree } from '../../src/sql/frozen-tree.ts';
import { initSqlParser, parseSandboxQuery } from '../../src/sql/index.ts';
import type { Query } from '../../src/sql/syntax.ts';
import { planLogsAllQuery } from '../support/sandbox-plan.ts';

beforeAll(async () => {
  await initSqlParser();
});

const catalog = fieldCatalog({ id: 'keyword', project: 'keyword', event_message: 'text', 'metadata.status': 'keyword' });
const limits = { maxTranslatedChars: 100_000, maxValueBytes: 1_000_000 };

/** A text parsed once and shared frozen, as the parsed-query cache shares it. */
function shared(sql: string): Query {
  return freezeTree(parseSandboxQuery(sql, { allowedTables: tableNames(logsAll.ctes), parameterNames: ['project', 'sql_min'] }));
}

function plan(query: Query, now: number, params: Record<string, string> = { project: 'default' }): Plan {
  return planLogsAllQuery(query, catalog, { now, params });
}

function translation(planned: Plan) {
  return translateBeforeScans(planned, limits, { everyError: true }).get(planned.residual!)!.translation;
}

describe('a residual query translated once per text, endpoint and tables', () => {
  it('gives every request of a shared text the same translation', () => {
    const query = shared("select id, event_message from postgres_logs where id = 'x' limit 1");
    const first = translation(plan(query, Date.UTC(2024, 0, 1)));
    const second = translation(plan(query, Date.UTC(2024, 0, 2), { project: 'other' }));
    expect(second).toBe(first);
  });

  it("translates again a query that reads the request's clock", () => {
    const query = shared('select id from postgres_logs where timestamp > timestamp_sub(current_timestamp(), interval 1 hour) limit 1');
    const first = translation(plan(query, Date.UTC(2024, 0, 1)));
    const second = translation(plan(query, Date.UTC(2024, 0, 2)));
    expect(second.sql).not.toBe(first.sql);
  });

  it('translates again a query that reads a parameter', () => {
    const query = shared('select id, @project as p from postgres_logs limit 1');
    const first = translation(plan(query, Date.UTC(2024, 0, 1)));
    const second = translation(plan(query, Date.UTC(2024, 0, 1), { project: 'other' }));
    expect(second.sql).not.toBe(first.sql);
  });
});

describe("a shared text's scan filters and finish decided once per endpoint and catalogs", () => {
  const eventScan = (planned: Plan) => {
    const scan = planned.scans[0]!;
    if (scan.kind !== 'events') throw new Error(`expected an event scan, got ${scan.kind}`);
    return scan;
  };

  it('gives every request the same predicates and finish, each its own scope', () => {
    const query = shared("select id, timestamp from postgres_logs where id = 'x' order by timestamp desc limit 5");
    const first = plan(query, Date.UTC(2024, 0, 1));
    const second = plan(query, Date.UTC(2024, 0, 2), { project: 'other' });
    expect(eventScan(second).predicates).toBe(eventScan(first).predicates);
    expect(second.residual!.finish).toBe(first.residual!.finish);
    expect(eventScan(second).scope).not.toEqual(eventScan(first).scope);
  });

  it("gives every request a pushed-down aggregation's rewritten query and its translation, each its own search scope", () => {
    const query = shared('select timestamp_trunc(timestamp, hour) as h, count(*) as n from postgres_logs group by h order by h');
    const first = plan(query, Date.UTC(2024, 0, 1));
    const second = plan(query, Date.UTC(2024, 0, 2), { project: 'other' });
    const [one, two] = [first.scans[0]!, second.scans[0]!];
    if (one.kind !== 'aggregation' || two.kind !== 'aggregation') throw new Error('expected aggregations');
    expect(second.residual!.query).toBe(first.residual!.query);
    expect(translation(second)).toBe(translation(first));
    expect(two.scope).not.toEqual(one.scope);
  });

  it("decides again the filter of a query that reads the request's clock", () => {
    const query = shared('select id from postgres_logs where timestamp > timestamp_sub(current_timestamp(), interval 1 hour) order by timestamp desc limit 5');
    const first = plan(query, Date.UTC(2024, 0, 1));
    const second = plan(query, Date.UTC(2024, 0, 2));
    expect(eventScan(second).predicates).not.toEqual(eventScan(first).predicates);
  });
});
