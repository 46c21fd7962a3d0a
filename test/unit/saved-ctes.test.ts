import { beforeAll, describe, expect, it } from 'vitest';
import { savedCteNames, withSavedCtes } from '../../src/endpoints/saved-ctes.ts';
import { SandboxViolation } from '../../src/errors.ts';
import { initSqlParser, parseSandboxQuery } from '../../src/sql/index.ts';

beforeAll(() => initSqlParser());

const parse = (text: string, extra: string[] = []) => parseSandboxQuery(text, { allowedTables: ['edge_logs', ...extra], parameterNames: ['p'] });

describe("a caller's query over a saved query's CTEs", () => {
  const savedText = [
    'with a as (select id from edge_logs where event_message like @p),',
    'b as (select id from a),',
    'c as (select id from edge_logs)',
    'select count(*) from b',
  ].join('\n');

  it("puts before the caller's own CTEs the saved ones it reads, directly or through another, in their order", () => {
    const saved = parse(savedText);
    expect(savedCteNames(saved)).toEqual(['a', 'b', 'c']);
    const merged = withSavedCtes(saved, parse('with mine as (select id from B) select * from mine', savedCteNames(saved)));
    expect(merged.with.map((cte) => cte.name)).toEqual(['a', 'b', 'mine']);
    expect(withSavedCtes(saved, parse('select id from edge_logs')).with).toEqual([]);
  });

  it('refuses a CTE of the caller that takes a saved name', () => {
    const saved = parse(savedText);
    expect(() => withSavedCtes(saved, parse('with C as (select 1 as id) select id from C'))).toThrow(SandboxViolation);
  });
});
