import { describe, expect, it } from 'vitest';
import { logsAll } from '../../queries/logs-all.ts';
import { usageApiCounts } from '../../queries/usage-api-counts.ts';
import { QueryTooExpensive } from '../../src/errors.ts';
import type { LqlFilter } from '../../src/lql/syntax.ts';
import { fieldCatalog } from '../../src/planner/field-catalog.ts';
import { planEndpointQuery, type Plan } from '../../src/planner/index.ts';
import { regexpQueriesIn, regexpQuery, type RegexLimits } from '../../src/planner/regex-budget.ts';

const now = Date.UTC(2024, 0, 10, 12, 30);
const catalogs = new Map([['edge_logs', fieldCatalog({ 'metadata.request': 'nested', 'metadata.request.path': 'keyword' })]]);
const limits: RegexLimits = { maxDeterminizedStates: 2500, maxPerRequest: 3, maxTotalChars: 40 };

function partialMatch(pattern: string): LqlFilter {
  return {
    kind: 'comparison',
    path: 'metadata.request.path',
    operator: '~',
    value: { kind: 'string', value: pattern, quoted: true },
    negated: false,
    offset: 1,
  };
}

function lqlPlan(patterns: string[], budget: RegexLimits = limits): Plan {
  const query = { filters: patterns.map(partialMatch), select: [], from: { name: 'edge_logs', offset: 1 } };
  return planEndpointQuery(
    logsAll,
    { project: 'p1' },
    { now, projects: null, indexPrefix: 'lp-', regexLimits: budget },
    { language: 'lql', query, limits: { maxScanEvents: 1000, maxScans: 32 }, catalogs },
  );
}

describe('the regular-expression budget of one request', () => {
  it('counts each regexp query of the plan once and sets its state limit', () => {
    const plan = lqlPlan(['^/a', '^/b', '^/c']);
    const queries = regexpQueriesIn(plan.scans).sort((a, b) => a.body.value.localeCompare(b.body.value));
    expect(queries.map((query) => [query.body.value, query.body.max_determinized_states, query.origin])).toEqual([
      ['\\/a.*', 2500, { parameter: 'lql', pattern: '^/a' }],
      ['\\/b.*', 2500, { parameter: 'lql', pattern: '^/b' }],
      ['\\/c.*', 2500, { parameter: 'lql', pattern: '^/c' }],
    ]);
  });

  it('refuses one more than allowed, naming the count and the limit', () => {
    expect(() => lqlPlan(['a', 'b', 'c', 'd'])).toThrow(QueryTooExpensive);
    expect(() => lqlPlan(['a', 'b', 'c', 'd'])).toThrow(/holds 4 regular expressions .* at most 3 .*SANDBOX_MAX_REGEX_PER_QUERY/);
  });

  it("refuses patterns longer together than allowed, in the store's syntax", () => {
    // each becomes .*<15 letters>.* (19 characters): two fit in 40, three do not
    expect(() => lqlPlan(['x'.repeat(15), 'y'.repeat(15)])).not.toThrow();
    expect(() => lqlPlan(['x'.repeat(15), 'y'.repeat(15), 'z'.repeat(15)], { ...limits, maxPerRequest: 16 })).toThrow(
      /57 characters long together .* more than 40 .*SANDBOX_MAX_REGEX_CHARS/,
    );
  });

  it('a shared query object counts once, two alike count twice', () => {
    const shared = regexpQuery('f', '.*a.*', { parameter: 'sql', pattern: 'a' });
    expect(regexpQueriesIn({ query: { bool: { filter: [shared] } }, again: [shared] })).toHaveLength(1);
    expect(
      regexpQueriesIn([regexpQuery('f', '.*a.*', { parameter: 'sql', pattern: 'a' }), regexpQuery('f', '.*a.*', { parameter: 'sql', pattern: 'a' })]),
    ).toHaveLength(2);
  });

  it('counts one pattern on one field once against the budget, however many queries send it (a record filter sends its exact and loose forms)', () => {
    const one = { ...limits, maxPerRequest: 1 };
    expect(regexpQueriesIn(lqlPlan(['^/a', '^/a'], { ...limits, maxPerRequest: 16 }).scans)).toHaveLength(2);
    expect(() => lqlPlan(['^/a', '^/a'], one)).not.toThrow();
    expect(() => lqlPlan(['^/a', '^/b'], one)).toThrow(/holds 2 regular expressions .* at most 1 /);
  });

  it('usage.api-counts matches its project pattern within the default budget', () => {
    const plan = planEndpointQuery(usageApiCounts, { interval: 'hourly', project: 'abc\\.supabase\\.co' }, { now, projects: null, indexPrefix: 'lp-' });
    const queries = regexpQueriesIn(plan.scans);
    expect(queries.length).toBeGreaterThan(0);
    expect(queries.every((query) => query.origin?.parameter === 'project' && query.body.max_determinized_states === 10_000)).toBe(true);
  });
});
