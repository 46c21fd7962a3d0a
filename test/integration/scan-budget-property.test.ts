import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SourceName } from '../../shared/sources.ts';
import { metricsRegistry } from '../../src/metrics.ts';
import { BOOTSTRAP_KEY, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';
import { sandboxDataset } from '../support/sandbox-data.ts';

/**
 * Issue 18: whatever shape a sandboxed query within the input limits takes (unions, joins,
 * subqueries, CTEs over several sources, pushed-down and residual filters), the events its scans
 * pull from the store together never pass SANDBOX_MAX_SCAN_EVENTS by more than the one event that
 * proves it too broad, and the answer is a 200 or a 400 with a stable code, never a 5xx.
 */
const TOTAL = 400;
const SOURCES: SourceName[] = ['edge_logs', 'postgres_logs', 'auth_logs', 'function_logs'];
const dataset = sandboxDataset({ perSource: 300, projects: ['default', 'other'] });
let server: EndpointTestServer;

async function scannedEvents(): Promise<number> {
  const metric = await metricsRegistry.getSingleMetric('sandbox_scanned_events_total')!.get();
  return metric.values[0]?.value ?? 0;
}

const source = fc.constantFrom(...SOURCES);
const filter = fc.constantFrom(
  '',
  " where event_message like '%a%'",
  " where id != 'x'",
  ' where length(event_message) > 3',
  " where timestamp > '2023-12-31T18:00:00Z'",
);
const read = fc.tuple(source, filter).map(([table, where]) => `select id from ${table}${where}`);
const queryShape = fc.oneof(
  fc.array(read, { minLength: 1, maxLength: 12 }).map((reads) => reads.join(' union all ')),
  fc.tuple(source, source).map(([a, b]) => `select a.id from ${a} as a join ${b} as b on a.id = b.id`),
  fc.tuple(source, read).map(([table, inner]) => `select id from ${table} where id in (${inner})`),
  fc.tuple(read, read).map(([first, second]) => `with x as (${first}), y as (${second}) select count(*) as n from x cross join y`),
  fc.tuple(source, fc.integer({ min: 1, max: 2000 })).map(([table, limit]) => `select id, timestamp from ${table} order by timestamp desc limit ${limit}`),
);

beforeAll(async () => {
  server = await startEndpointServer({ now: Date.UTC(2024, 0, 1, 1), overrides: { RATE_LIMIT_PER_MINUTE: '0', SANDBOX_MAX_SCAN_EVENTS: String(TOTAL) } });
  for (const name of SOURCES) await server.index(name, dataset.events.get(name)!);
}, 180_000);

afterAll(async () => {
  await server?.close();
});

describe('the scanned-event total holds for generated queries', () => {
  it('never reads more than the total plus one, and answers 200 or a 400 with a stable code', { timeout: 300_000 }, async () => {
    const outcomes = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(queryShape, async (sql) => {
        const before = await scannedEvents();
        const response = await server.app.inject({
          method: 'POST',
          url: '/api/endpoints/query/logs.all',
          headers: { 'x-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' },
          payload: { project: 'default', sql },
        });
        const read = (await scannedEvents()) - before;
        const outcome = response.statusCode === 200 ? '200' : `${response.statusCode} ${response.json().error?.code}`;
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        expect(read, sql).toBeLessThanOrEqual(TOTAL + 1);
        expect(['200', '400 query_too_broad', '400 invalid_query', '400 sandbox_violation'], `${sql}: ${response.body.slice(0, 300)}`).toContain(outcome);
        if (outcome === '400 query_too_broad') expect(read, sql).toBe(TOTAL + 1);
      }),
      { numRuns: 60, seed: 18 },
    );
    console.log(`scan budget property: ${[...outcomes].map(([outcome, count]) => `${count} x ${outcome}`).join(', ')}`);
    // the generator reaches both sides of the budget
    expect(outcomes.get('200')).toBeGreaterThan(0);
    expect(outcomes.get('400 query_too_broad')).toBeGreaterThan(0);
  });
});
