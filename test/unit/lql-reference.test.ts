/**
 * The reference implementation's LQL cases (test/fixtures/examples/lql-cases.json): accepted ones
 * parse to the same meaning, rejected syntax gets LqlSyntax. A small normaliser maps our tree onto
 * the file's neutral `meaning` format; what only a schema, the CTEs or the clock can decide is listed
 * below as the planner's.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BadParameter, LqlSyntax } from '../../src/errors.ts';
import { fieldCatalog } from '../../src/planner/field-catalog.ts';
import { planEndpointQuery } from '../../src/planner/index.ts';
import { logsAll } from '../../queries/logs-all.ts';
import { parseLql } from '../../src/lql/index.ts';
import type { LqlFilter, LqlQuery, LqlTime, LqlValue } from '../../src/lql/syntax.ts';

interface MeaningFilter {
  path: string;
  operator: string;
  value?: unknown;
  values?: unknown[];
  modifiers: { negate?: boolean; quoted?: boolean; timestamp_origin?: string };
  shorthand?: string;
}

interface ReferenceCase {
  id: string;
  lql: string;
  expect: 'accept' | 'reject';
  meaning: {
    filters: MeaningFilter[];
    chart: { aggregate: string; path: string; period: string } | null;
    select: ({ path: string; alias?: string } | { wildcard: true })[];
    from: string | null;
  } | null;
  error: string | null;
}

const CASES = JSON.parse(readFileSync(new URL('../fixtures/examples/lql-cases.json', import.meta.url), 'utf8')) as ReferenceCase[];

/** Well-formed LQL that the reference refuses for reasons outside the syntax: the planner decides them. */
const DECIDED_BY_PLANNER: Record<string, string> = {
  p_err_field_not_in_schema: 'path not in the source schema',
  p_err_nested_not_in_schema: 'path not in the source schema',
  v_non_numeric_chart: 'aggregating a string field',
  v_too_many_ticks: 'more than 250 chart buckets',
  http_lql_multi_cte_no_from: 'several CTEs and no f:',
  http_lql_unknown_cte: 'f: names no CTE of the endpoint',
};

/** Accepted by the reference with a value the schema casts: the parser keeps what was written. */
const CAST_BY_PLANNER: Record<string, LqlValue> = {
  // The reference casts to the array's element type even when quoted; we keep the quoted string.
  p_list_includes_float_quoted: { kind: 'string', value: '1.0', quoted: true },
};

const LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

function plainValue(value: LqlValue | undefined): unknown {
  if (!value) return undefined;
  switch (value.kind) {
    case 'string':
      return value.value;
    case 'number':
      return Number(value.text);
    case 'boolean':
      return value.value;
    case 'null':
      return null;
  }
}

/** `2020-01-01T13:14:15.100000` and `…15.1` are the same instant: drop trailing fraction zeros. */
function canonicalDatetime(text: string): string {
  return text.replace(/\.(\d*?)0*$/, (_, digits: string) => (digits ? `.${digits}` : ''));
}

function unixToDatetime(digits: string): string {
  const millis = digits.length === 10 ? Number(digits) * 1000 : digits.length === 13 ? Number(digits) : Math.trunc(Number(digits) / 1000);
  return new Date(millis).toISOString().replace('Z', '');
}

function timeMeaning(time: LqlTime): unknown {
  switch (time.kind) {
    case 'iso':
      return time.text.includes('T') ? { datetime: canonicalDatetime(time.text) } : { date: time.text };
    case 'unix':
      return { datetime: canonicalDatetime(unixToDatetime(time.digits)) };
    default:
      return { relative: true };
  }
}

function shorthand(time: LqlTime): string | undefined {
  switch (time.kind) {
    case 'relative':
      return time.name;
    case 'this':
      return `this@${time.unit}`;
    case 'last':
      return `last@${time.amount}${time.unit.replace(/s$/, '')}`;
    default:
      return undefined;
  }
}

function origin(time: LqlTime): string {
  if (time.kind === 'iso') return /(Z|[+-]\d\d:\d\d)$/.test(time.text) ? 'absolute' : 'local';
  return 'absolute';
}

interface Normal {
  path: string;
  operator: string;
  value?: unknown;
  values?: unknown[];
  negate: boolean;
  quoted: boolean;
  origin?: string;
  shorthand?: string;
}

function normalFilters(filter: LqlFilter): Normal[] {
  const base = { path: filter.path, negate: filter.negated };
  switch (filter.kind) {
    case 'comparison':
      return [
        {
          ...base,
          operator: filter.operator,
          ...(filter.value ? { value: plainValue(filter.value) } : {}),
          quoted: filter.value?.kind === 'string' && filter.value.quoted,
        },
      ];
    case 'range': {
      const low = LEVELS.indexOf(String(plainValue(filter.low)));
      const high = LEVELS.indexOf(String(plainValue(filter.high)));
      if (filter.path === 'metadata.level' && low >= 0 && high >= low) {
        return LEVELS.slice(low, high + 1).map((level) => ({ ...base, operator: '=', value: level, quoted: false }));
      }
      return [{ ...base, operator: 'range', values: [plainValue(filter.low), plainValue(filter.high)], quoted: false }];
    }
    case 'timestamp': {
      const [first, second] = filter.times;
      const named = shorthand(first);
      if (named !== undefined && filter.operator === '=') {
        return [{ ...base, operator: 'range', quoted: false, origin: 'absolute', shorthand: named }];
      }
      return [
        {
          ...base,
          operator: filter.operator,
          ...(second ? { values: [timeMeaning(first), timeMeaning(second)] } : { value: timeMeaning(first) }),
          quoted: false,
          origin: origin(first),
        },
      ];
    }
  }
}

function expectedFilter(filter: MeaningFilter): Normal {
  const canonical = (value: unknown): unknown => {
    if (value && typeof value === 'object' && 'datetime' in value) return { datetime: canonicalDatetime(String(value.datetime)) };
    if (value && typeof value === 'object' && 'relative' in value) return { relative: true };
    return value;
  };
  return {
    path: filter.path,
    operator: filter.operator,
    ...(filter.shorthand === undefined && 'value' in filter ? { value: canonical(filter.value) } : {}),
    ...(filter.shorthand === undefined && filter.values ? { values: filter.values.map(canonical) } : {}),
    negate: filter.modifiers.negate === true,
    quoted: filter.modifiers.quoted === true,
    ...(filter.modifiers.timestamp_origin ? { origin: filter.modifiers.timestamp_origin } : {}),
    ...(filter.shorthand === undefined ? {} : { shorthand: filter.shorthand }),
  };
}

function meaningOf(query: LqlQuery, expected: NonNullable<ReferenceCase['meaning']>) {
  const filters = query.filters.flatMap(normalFilters).map((normal, index) => {
    // the reference states the origin only sometimes; compare it where it does
    const wanted = expected.filters[index];
    if (!wanted?.modifiers.timestamp_origin) delete normal.origin;
    return normal;
  });
  return {
    filters,
    chart: query.chart ? { aggregate: query.chart.aggregate, path: query.chart.path ?? 'timestamp', period: query.chart.period } : null,
    select: query.select.map((select) =>
      select.kind === 'all' ? { wildcard: true } : { path: select.path, ...(select.alias ? { alias: select.alias } : {}) },
    ),
    from: query.from?.name ?? null,
  };
}

function expectedMeaning(meaning: NonNullable<ReferenceCase['meaning']>) {
  return {
    filters: meaning.filters.map(expectedFilter),
    chart: meaning.chart ? { aggregate: meaning.chart.aggregate, path: meaning.chart.path, period: meaning.chart.period } : null,
    select: meaning.select.map((select) =>
      'wildcard' in select ? { wildcard: true } : { path: select.path, ...(select.alias ? { alias: select.alias } : {}) },
    ),
    from: meaning.from,
  };
}

describe('LQL reference cases', () => {
  const accepted = CASES.filter((c) => c.expect === 'accept' && !(c.id in CAST_BY_PLANNER));
  const rejected = CASES.filter((c) => c.expect === 'reject' && !(c.id in DECIDED_BY_PLANNER));

  it.each(accepted.map((c) => [c.id, c] as const))('%s parses to the reference meaning', (_, c) => {
    const query = parseLql(c.lql);
    const meaning = c.meaning ?? { filters: [], chart: null, select: [], from: null };
    expect(meaningOf(query, meaning)).toEqual(expectedMeaning(meaning));
  });

  it.each(rejected.map((c) => [c.id, c] as const))('%s is refused with LqlSyntax', (_, c) => {
    expect(() => parseLql(c.lql)).toThrow(LqlSyntax);
  });

  it.each(Object.entries(DECIDED_BY_PLANNER))('%s parses; the planner refuses it (%s)', (id) => {
    const c = CASES.find((candidate) => candidate.id === id);
    expect(c?.expect).toBe('reject');
    expect(() => parseLql(c!.lql)).not.toThrow();
  });

  // the schema-dependent refusals, planned against the schema each case states (the CTE ones are in the HTTP tests)
  it.each(['p_err_field_not_in_schema', 'p_err_nested_not_in_schema', 'v_non_numeric_chart', 'v_too_many_ticks'])(
    '%s is refused by the planner with a 400 error',
    (id) => {
      const c = CASES.find((candidate) => candidate.id === id)!;
      const types = Object.fromEntries(
        Object.entries((c as { schema?: Record<string, string> | null }).schema ?? {}).map(([path, type]) => [
          path,
          type === 'string' ? 'keyword' : type === 'datetime' ? 'date_nanos' : type,
        ]),
      );
      const catalogs = new Map([['edge_logs', fieldCatalog(types)]]);
      const plan = () =>
        planEndpointQuery(
          logsAll,
          { project: 'p1' },
          { now: Date.UTC(2024, 0, 10), projects: null, indexPrefix: 'lp-' },
          { language: 'lql', query: { ...parseLql(c.lql), from: { name: 'edge_logs', offset: 1 } }, limits: { maxScanEvents: 1000, maxScans: 32 }, catalogs },
        );
      expect(plan).toThrow(BadParameter);
    },
  );

  it.each(Object.entries(CAST_BY_PLANNER))('%s keeps the written value for the planner to cast', (id, value) => {
    const c = CASES.find((candidate) => candidate.id === id)!;
    const [filter] = parseLql(c.lql).filters;
    expect(filter).toMatchObject({ kind: 'comparison', value });
  });

  it('covers every case in the file', () => {
    expect(CASES.length).toBeGreaterThan(100);
  });
});
