import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logsAll } from '../../queries/logs-all.ts';
import { createElasticsearchClient } from '../../shared/elasticsearch.ts';
import { ensureEventIndex, type StoredEvent } from '../../shared/event-index.ts';
import { eventShape } from '../../shared/event-shape.ts';
import { legacyIndexName } from '../../shared/partitions.ts';
import { BadParameter } from '../../src/errors.ts';
import { FieldCatalogs } from '../../src/executor/field-catalogs.ts';
import { executePlan } from '../../src/executor/index.ts';
import { parseLql } from '../../src/lql/index.ts';
import { planEndpointQuery } from '../../src/planner/index.ts';
import { testConfig, uniqueName } from '../support/stack.ts';

/**
 * Every accepted reference case (field filters, time filters, charts) runs on real Elasticsearch:
 * its own index holds events generated on both sides of each of its filters, and the events (or
 * buckets) returned must be exactly those the case's stated meaning accepts, evaluated here from
 * that meaning (not from our syntax tree). Every rejected case is refused with a 400 error, those
 * decided by the data against an index holding the fields the case's schema names.
 */
interface MeaningFilter {
  path: string;
  operator: string;
  value?: unknown;
  values?: unknown[];
  modifiers?: { negate?: boolean };
}
interface ReferenceCase {
  id: string;
  lql: string;
  expect: 'accept' | 'reject';
  schema?: Record<string, string> | null;
  partial?: boolean;
  meaning?: { from: string | null; filters: MeaningFilter[]; chart: unknown };
}

const LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];
const all: ReferenceCase[] = JSON.parse(readFileSync(new URL('../fixtures/examples/lql-cases.json', import.meta.url), 'utf8'));
/** Accepted cases (partial ones too: their meaning is stated even where the reference's own test checks less); `f:` names tables logs.all does not have. */
const runnable = all.filter((c) => c.expect === 'accept' && c.meaning && !c.meaning.from);
const isTime = (f: MeaningFilter) => f.path === 'timestamp';
const cases = runnable.filter((c) => !c.meaning!.chart && !c.meaning!.filters.some(isTime));
const timeCases = runnable.filter((c) => !c.meaning!.chart && c.meaning!.filters.some(isTime));
const chartCases = runnable.filter((c) => c.meaning!.chart);

/** Where a reference path lives in our events: columns as themselves, anything else inside metadata. */
function storedPath(path: string): string[] {
  if (path === 'event_message' || path === 'id') return [path];
  return ['metadata', ...(path.startsWith('metadata.') ? path.slice('metadata.'.length) : path).split('.')];
}

function valuesAt(event: Record<string, unknown>, path: string): unknown[] {
  let current: unknown[] = [event];
  for (const step of storedPath(path)) {
    current = current
      .flatMap((node) => (Array.isArray(node) ? node : [node]))
      .flatMap((node) => (node !== null && typeof node === 'object' && step in (node as object) ? [(node as Record<string, unknown>)[step]] : []));
  }
  return current.filter((value) => value !== null && value !== undefined);
}

function regex(pattern: unknown): RegExp {
  return new RegExp(String(pattern));
}

/** The meaning of one filter on one event, as the reference states it. */
function holds(filter: MeaningFilter, event: Record<string, unknown>): boolean {
  const found = valuesAt(event, filter.path);
  const scalars = found.flatMap((value) => (Array.isArray(value) ? value : [value]));
  const compare = (check: (value: unknown) => boolean) => scalars.some(check);
  const number = (value: unknown) => (typeof value === 'number' ? value : Number.NaN);
  let result: boolean;
  switch (filter.operator) {
    case 'is_null':
      result = found.length === 0;
      break;
    case '=':
      result = compare((value) => value === filter.value || (typeof filter.value === 'number' && number(value) === filter.value));
      break;
    case 'contains':
      result = compare((value) => typeof value === 'string' && value.includes(String(filter.value)));
      break;
    case '~':
      result = compare((value) => typeof value === 'string' && regex(filter.value).test(value));
      break;
    case 'list_includes':
      result = found.some((value) => Array.isArray(value) && value.some((element) => element === filter.value || String(element) === String(filter.value)));
      break;
    case 'list_includes_regex':
      result = found.some((value) => Array.isArray(value) && value.some((element) => regex(filter.value).test(String(element))));
      break;
    case 'range': {
      const [low, high] = filter.values as [unknown, unknown];
      if (typeof low === 'string' && LEVELS.includes(low.toLowerCase())) {
        const allowed = LEVELS.slice(LEVELS.indexOf(low.toLowerCase()), LEVELS.indexOf(String(high).toLowerCase()) + 1);
        result = compare((value) => typeof value === 'string' && allowed.includes(value.toLowerCase()));
      } else result = compare((value) => number(value) >= Number(low) && number(value) <= Number(high));
      break;
    }
    default: {
      const limit = Number(filter.value);
      const test = { '>': (v: number) => v > limit, '>=': (v: number) => v >= limit, '<': (v: number) => v < limit, '<=': (v: number) => v <= limit }[
        filter.operator as '>'
      ];
      result = compare((value) => test(number(value)));
    }
  }
  return filter.modifiers?.negate ? !result : result;
}

/**
 * The reference states a level range (`m.level:debug..error`) as one `=` filter per level, meaning
 * any of them: those are one alternative here; every other filter must hold.
 */
function accepts(filters: MeaningFilter[], event: Record<string, unknown>): boolean {
  const isLevel = (filter: MeaningFilter) =>
    filter.operator === '=' && typeof filter.value === 'string' && LEVELS.includes(filter.value.toLowerCase()) && filter.path.endsWith('level');
  const levels = filters.filter(isLevel);
  if (levels.length > 1)
    return levels.some((filter) => holds(filter, event)) && filters.filter((filter) => !isLevel(filter)).every((filter) => holds(filter, event));
  return filters.every((filter) => holds(filter, event));
}

/** Values on both sides of a filter (the value itself, neighbours, something else entirely). */
function candidates(filter: MeaningFilter): unknown[] {
  const value = filter.value;
  const literal = (pattern: unknown) =>
    String(pattern)
      .replace(/\\(.)/g, '$1')
      .replace(/[\^$()|*+?{}[\]]/g, '');
  switch (filter.operator) {
    case 'is_null':
      return [undefined, 'present'];
    case 'contains':
      return [`before ${String(value)} after`, 'nothing here'];
    case '~':
      return [literal(value), 'ZZZ'];
    case 'list_includes': {
      // an array's elements share one mapped type
      const other = typeof value === 'number' ? value + 1000 : typeof value === 'boolean' ? !value : 'other';
      return [[value, other], [other]];
    }
    case 'list_includes_regex':
      return [[literal(value)], ['ZZZ']];
    case 'range': {
      const [low, high] = filter.values as [unknown, unknown];
      if (typeof low === 'string' && LEVELS.includes(low.toLowerCase())) return LEVELS;
      return [Number(low) - 1, Number(low), (Number(low) + Number(high)) / 2, Number(high), Number(high) + 1];
    }
    default:
      if (typeof value === 'number') return [value - 1, value, value + 1];
      if (typeof value === 'boolean') return [value, !value];
      return [value, `${String(value)}_other`];
  }
}

function eventFor(values: Map<string, unknown>, n: number): StoredEvent {
  const event: Record<string, unknown> = { id: `e${n}`, timestamp: '2024-01-01T00:30:00.000000Z', event_message: 'message', project: 'p', metadata: {} };
  for (const [path, value] of values) {
    if (value === undefined) continue;
    const steps = storedPath(path);
    let node = event;
    for (const step of steps.slice(0, -1)) node = (node[step] ??= {}) as Record<string, unknown>;
    node[steps[steps.length - 1]!] = value;
  }
  return { ...(event as unknown as StoredEvent), shape: eventShape(event.metadata) };
}

function eventsFor(filters: MeaningFilter[]): StoredEvent[] {
  const byPath = new Map<string, unknown[]>();
  for (const filter of filters) byPath.set(filter.path, [...(byPath.get(filter.path) ?? []), ...candidates(filter)]);
  let combinations: Map<string, unknown>[] = [new Map()];
  for (const [path, values] of byPath) combinations = combinations.flatMap((combination) => values.map((value) => new Map([...combination, [path, value]])));
  return combinations.slice(0, 200).map((combination, n) => eventFor(combination, n));
}

const elasticsearch = () => createElasticsearchClient({ url: testConfig().ELASTICSEARCH_URL! });
let client: ReturnType<typeof elasticsearch>;
const prefix = `${uniqueName('lqlref')}-`;
let runs = 0;

beforeAll(() => {
  client = elasticsearch();
});

afterAll(async () => {
  const indices = Object.keys(await client.indices.get({ index: `${prefix}*`, allow_no_indices: true }));
  if (indices.length > 0) await client.indices.delete({ index: indices });
  await client.close();
});

/** Loads the events into an index of their own and answers `lql` through the planner and executor, as logs.all would at `now`. */
async function answer(events: StoredEvent[], lql: string, now: number, rowsOf: 'ids' | 'chart'): Promise<Record<string, unknown>[]> {
  const indexPrefix = `${prefix}${(runs += 1)}-`;
  const index = legacyIndexName(indexPrefix, 'edge_logs');
  await ensureEventIndex(client, index, 0);
  const response = await client.bulk({ refresh: true, operations: events.flatMap((event) => [{ index: { _index: index, _id: event.id } }, event]) });
  expect(response.errors, `${lql}: ${JSON.stringify(response.items.find((item) => item.index?.error))}`).toBe(false);
  const parsed = parseLql(`f:edge_logs ${lql}`);
  const catalogs = await new FieldCatalogs(client, 0, { now: () => Date.now() }, 30_000).forSources(indexPrefix, ['edge_logs']);
  const query = rowsOf === 'ids' ? { ...parsed, select: [{ kind: 'field' as const, path: 'id', offset: 1 }], chart: undefined } : parsed;
  const plan = planEndpointQuery(
    logsAll,
    { project: 'p' },
    { now, projects: null, indexPrefix },
    { language: 'lql', query, limits: { maxScanEvents: 1000, maxScans: 32 }, catalogs },
  );
  const rows = (await executePlan(plan, {
    elasticsearch: client,
    timeoutMs: 30_000,
    engine: () => Promise.reject(new Error('no engine needed')),
    engineKey: 'test',
    deadline: performance.now() + 30_000,
    maxTranslatedChars: 1,
    maxValueBytes: 1,
  })) as Record<string, unknown>[];
  await client.indices.delete({ index });
  return rows;
}

describe(`LQL reference cases on real Elasticsearch (${cases.length} cases with field filters)`, () => {
  it('each returns exactly the events its meaning accepts, with events on both sides of every filter', async () => {
    const oneSided: string[] = [];
    let checked = 0;
    for (const reference of cases) {
      const filters = reference.meaning!.filters;
      const events = eventsFor(filters);
      if (
        !filters.every(
          (filter) =>
            events.some((event) => holds(filter, event as unknown as Record<string, unknown>)) &&
            events.some((event) => !holds(filter, event as unknown as Record<string, unknown>)),
        )
      ) {
        oneSided.push(reference.id);
        continue;
      }
      const rows = await answer(events, reference.lql, Date.UTC(2024, 0, 1, 1), 'ids');
      const expected = events
        .filter((event) => accepts(filters, event as unknown as Record<string, unknown>))
        .map((event) => event.id)
        .sort();
      expect(rows.map((row) => row.id).sort(), `${reference.id}: ${reference.lql}`).toEqual(expected);
      checked += 1;
    }
    console.error(`LQL reference cases on Elasticsearch: ${checked} checked, ${oneSided.length} without events on both sides (${oneSided.join(', ')})`);
    // a case whose regex this generator cannot satisfy is reported, not hidden
    expect(oneSided.length, `cases without events on both sides: ${oneSided.join(', ')}`).toBeLessThanOrEqual(Math.ceil(cases.length / 10));
    expect(checked).toBeGreaterThan(cases.length * 0.9);
  }, 600_000);
});

/*
 * Time filters. The reference states times as dates, datetimes (UTC when no offset is given) and
 * relative expressions over `now`; they are evaluated here in microseconds, independently of the
 * planner. Two readings are ours and documented in docs/known-gaps.md: a date stands for its whole day (the
 * reference casts it to midnight), and a bound stated to the second (`startOfDay(now) - 1s`) covers
 * that whole second, as the reference's second-precision timestamps do.
 */
const NOW = Date.UTC(2024, 2, 20, 15, 47, 31, 123); // a Wednesday afternoon: every floor differs from now
const SECOND = 1_000_000;
const DAY = 86_400 * SECOND;

function microsOf(text: string): number {
  const [whole, fraction = ''] = text.replace(/Z$/, '').split('.');
  const seconds = Date.parse(`${whole!.length === 10 ? `${whole}T00:00:00` : whole}Z`);
  if (Number.isNaN(seconds)) throw new Error(`unreadable reference time ${text}`);
  return seconds * 1000 + Number(fraction.padEnd(6, '0').slice(0, 6));
}

function floorTo(micros: number, unit: string): number {
  const date = new Date(Math.floor(micros / 1000));
  if (unit === 'minute') date.setUTCSeconds(0, 0);
  else if (unit === 'hour') date.setUTCMinutes(0, 0, 0);
  else date.setUTCHours(0, 0, 0, 0);
  if (unit === 'week') date.setUTCDate(date.getUTCDate() - ((date.getUTCDay() + 6) % 7)); // weeks start on Monday
  if (unit === 'month' || unit === 'year') date.setUTCDate(1);
  if (unit === 'year') date.setUTCMonth(0);
  return date.getTime() * 1000;
}

/** `floor(now, hour) - 100h`, `startOfWeek(floor(now, day))`, `startOfDay(now) + 1d - 1s`, `floor(now, day) - 1 month`... */
function relativeMicros(expression: string): [number, number] {
  const match =
    /^(now|floor\(now, (?:minute|hour|day)\)|startOf(?:Day|Week|Month|Year)\((?:now|floor\(now, day\))\))((?:\s+[+-]\s+\d+\s*(?:s|min|h|d|month))*)$/.exec(
      expression.trim(),
    );
  if (!match) throw new Error(`unreadable relative time ${expression}`);
  const [, base, terms] = match;
  const now = NOW * 1000;
  const unitOfBase = /^floor\(now, (\w+)\)$/.exec(base!)?.[1] ?? /^startOf(\w+)\(/.exec(base!)?.[1]?.toLowerCase();
  let at = unitOfBase ? floorTo(now, unitOfBase) : now;
  let lastUnit: string | undefined;
  for (const term of terms!.matchAll(/([+-])\s+(\d+)\s*(s|min|h|d|month)/g)) {
    const [, sign, amount, unit] = term;
    const n = Number(amount) * (sign === '-' ? -1 : 1);
    if (unit === 'month') {
      const date = new Date(at / 1000);
      date.setUTCMonth(date.getUTCMonth() + n);
      at = date.getTime() * 1000;
    } else at += n * { s: SECOND, min: 60 * SECOND, h: 3600 * SECOND, d: DAY }[unit!]!;
    lastUnit = unit;
  }
  // a bound the reference states to the second covers that whole second
  return [at, lastUnit === 's' ? at + SECOND - 1 : at];
}

/** The span a stated time covers, inclusive, in microseconds. */
function timeSpan(value: unknown): [number, number] {
  const stated = value as { date?: string; datetime?: string; relative?: string };
  if (stated.date) return [microsOf(stated.date), microsOf(stated.date) + DAY - 1];
  if (stated.datetime) return [microsOf(stated.datetime), microsOf(stated.datetime)];
  if (stated.relative) return relativeMicros(stated.relative);
  throw new Error(`unreadable reference time ${JSON.stringify(value)}`);
}

function timeHolds(filter: MeaningFilter, micros: number): boolean {
  let result: boolean;
  if (filter.operator === 'range') result = micros >= timeSpan(filter.values![0])[0] && micros <= timeSpan(filter.values![1])[1];
  else {
    const [from, to] = timeSpan(filter.value);
    result = { '=': micros >= from && micros <= to, '>': micros > to, '>=': micros >= from, '<': micros < from, '<=': micros <= to }[filter.operator as '='];
  }
  return filter.modifiers?.negate ? !result : result;
}

/** The stored form of an instant, written here independently of shared/stored-timestamp.ts so the reference checks it rather than repeats it. */
function isoOfMicros(micros: number): string {
  return `${new Date(Math.floor(micros / 1000)).toISOString().slice(0, 19)}.${String(micros % SECOND).padStart(6, '0')}Z`;
}

/** Instants on both sides of every bound a time filter states: a second and a microsecond away, and the bound itself. */
function instantsAround(filter: MeaningFilter): number[] {
  const spans = (filter.operator === 'range' ? filter.values! : [filter.value]).map(timeSpan);
  return [...new Set(spans.flat().flatMap((bound) => [-SECOND, -1, 0, 1, SECOND].map((step) => bound + step)))];
}

describe(`LQL reference time filters on real Elasticsearch (${timeCases.length} cases)`, () => {
  it('each returns exactly the events inside the stated times, with events a microsecond and a second either side of every bound', async () => {
    for (const reference of timeCases) {
      const filters = reference.meaning!.filters;
      const fieldFilters = filters.filter((filter) => !isTime(filter));
      const instants = filters.filter(isTime).flatMap(instantsAround);
      const events = eventsFor(fieldFilters).flatMap((event, n) =>
        instants.map((micros, m) => ({ ...event, id: `e${n}-${m}`, timestamp: isoOfMicros(micros) })),
      );
      const accepted = (event: StoredEvent) =>
        filters.filter(isTime).every((filter) => timeHolds(filter, microsOf(event.timestamp))) &&
        accepts(fieldFilters, event as unknown as Record<string, unknown>);
      expect(events.some(accepted) && events.some((event) => !accepted(event)), `${reference.id}: events on both sides`).toBe(true);
      const rows = await answer(events, reference.lql, NOW, 'ids');
      expect(rows.map((row) => row.id).sort(), `${reference.id}: ${reference.lql}`).toEqual(
        events
          .filter(accepted)
          .map((event) => event.id)
          .sort(),
      );
    }
  }, 600_000);
});

/*
 * Charts. Events fall in four consecutive buckets of the chart's period, some without the charted
 * field, on both sides of any filter; the expected rows are computed here from those events: one
 * row per bucket holding a matching event, its start in microseconds and the aggregate.
 */
const PERIOD_MICROS = { second: SECOND, minute: 60 * SECOND, hour: 3600 * SECOND, day: DAY } as const;

function chartEvents(chart: { aggregate: string; path: string; period: keyof typeof PERIOD_MICROS }, filters: MeaningFilter[]): StoredEvent[] {
  const start = Date.UTC(2024, 2, 18) * 1000;
  const period = PERIOD_MICROS[chart.period];
  const charted = chart.path === 'timestamp' ? [] : storedPath(chart.path);
  const variants = eventsFor(filters);
  const events: StoredEvent[] = [];
  for (let bucket = 0; bucket < 4; bucket += 1) {
    for (let k = 0; k <= bucket + 2; k += 1) {
      const base = variants[(bucket + k) % variants.length]!;
      const metadata = structuredClone(base.metadata) as Record<string, unknown>;
      // the charted value: numbers repeating within a bucket (so distinct counts differ from counts), absent for one event in three
      if (charted.length > 1 && k % 3 !== 2) {
        let node = metadata;
        for (const step of charted.slice(1, -1)) node = (node[step] ??= {}) as Record<string, unknown>;
        node[charted[charted.length - 1]!] = ((bucket * 7 + k * 5) % 6) * 10 + bucket;
      }
      const micros = start + bucket * period + Math.floor((k * period) / 16);
      events.push({ ...base, id: `b${bucket}-${k}`, timestamp: isoOfMicros(micros), metadata, shape: eventShape(metadata) } as StoredEvent);
    }
  }
  return events;
}

function expectedChart(
  chart: { aggregate: string; path: string; period: keyof typeof PERIOD_MICROS },
  events: StoredEvent[],
): { timestamp: number; values: number[]; count: number }[] {
  const period = PERIOD_MICROS[chart.period];
  const buckets = new Map<number, { timestamp: number; values: number[]; count: number }>();
  for (const event of events) {
    const micros = microsOf(event.timestamp);
    const timestamp = micros - (micros % period);
    const bucket = buckets.get(timestamp) ?? { timestamp, values: [], count: 0 };
    bucket.count += 1;
    if (chart.path !== 'timestamp') bucket.values.push(...(valuesAt(event as unknown as Record<string, unknown>, chart.path) as number[]));
    buckets.set(timestamp, bucket);
  }
  return [...buckets.values()].sort((a, b) => a.timestamp - b.timestamp);
}

/** `count(*)` and `count(timestamp)` count events; `count(field)` counts the events' values of the field. */
function checkAggregate(aggregate: string, countsEvents: boolean, got: unknown, bucket: { values: number[]; count: number }, label: string): void {
  const values = [...bucket.values].sort((a, b) => a - b);
  const percentile = /^p(\d+)$/.exec(aggregate);
  if (aggregate === 'count') expect(got, label).toBe(countsEvents ? bucket.count : bucket.values.length);
  else if (values.length === 0) expect(got, label).toBeNull();
  else if (aggregate === 'countd') expect(got, label).toBe(new Set(values).size);
  else if (aggregate === 'sum') expect(got, label).toBe(values.reduce((a, b) => a + b, 0));
  else if (aggregate === 'avg') expect(got as number, label).toBeCloseTo(values.reduce((a, b) => a + b, 0) / values.length, 9);
  else if (aggregate === 'max') expect(got, label).toBe(values[values.length - 1]);
  else if (aggregate === 'min') expect(got, label).toBe(values[0]);
  else if (percentile) {
    // Elasticsearch estimates percentiles (TDigest); over a handful of values the estimate lies between the neighbouring order statistics
    const rank = (Number(percentile[1]) / 100) * (values.length - 1);
    expect(got as number, label).toBeGreaterThanOrEqual(values[Math.max(0, Math.floor(rank) - 1)]!);
    expect(got as number, label).toBeLessThanOrEqual(values[Math.min(values.length - 1, Math.ceil(rank) + 1)]!);
  } else throw new Error(`no reference computation for ${aggregate}`);
}

describe(`LQL reference charts on real Elasticsearch (${chartCases.length} cases)`, () => {
  it('each gives one row per bucket with a matching event, oldest first, with the aggregate computed here from the same events', async () => {
    for (const reference of chartCases) {
      const chart = reference.meaning!.chart as { aggregate: string; path: string; period: keyof typeof PERIOD_MICROS };
      const filters = reference.meaning!.filters;
      const events = chartEvents(chart, filters);
      const matching = events.filter((event) => accepts(filters, event as unknown as Record<string, unknown>));
      if (filters.length > 0) expect(matching.length > 0 && matching.length < events.length, `${reference.id}: events on both sides of its filters`).toBe(true);
      const rows = await answer(events, reference.lql, NOW, 'chart');
      const expected = expectedChart(chart, matching);
      expect(
        rows.map((row) => row.timestamp),
        `${reference.id}: bucket starts`,
      ).toEqual(expected.map((bucket) => bucket.timestamp));
      const column = chart.aggregate;
      for (const [n, bucket] of expected.entries())
        checkAggregate(column, chart.path === 'timestamp', rows[n]![column], bucket, `${reference.id} bucket ${n}: ${reference.lql}`);
    }
  }, 600_000);
});

/** What each rejection decided by the data or the endpoint must be refused as; the others are syntax. */
const REFUSED_AS: Record<string, string> = {
  p_err_field_not_in_schema: 'unknown_field',
  p_err_nested_not_in_schema: 'unknown_field',
  v_non_numeric_chart: 'invalid_query',
  v_too_many_ticks: 'invalid_query',
  http_lql_multi_cte_no_from: 'lql_syntax',
  http_lql_unknown_cte: 'unknown_table',
};

describe(`LQL reference rejections (${all.filter((c) => c.expect === 'reject').length} cases)`, () => {
  it('each is refused with a 400 error and the expected code, against an index holding the fields its schema names', async () => {
    for (const reference of all.filter((c) => c.expect === 'reject')) {
      const indexPrefix = `${prefix}${(runs += 1)}-`;
      const index = legacyIndexName(indexPrefix, 'edge_logs');
      await ensureEventIndex(client, index, 0);
      const metadata: Record<string, unknown> = {};
      for (const [path, type] of Object.entries(reference.schema ?? {})) {
        if (path.startsWith('metadata.')) metadata[path.slice('metadata.'.length)] = type === 'string' ? 'text' : 1;
      }
      await client.index({
        index,
        id: 'e1',
        refresh: true,
        document: { id: 'e1', timestamp: '2024-01-01T00:30:00.000000Z', event_message: 'message', project: 'p', metadata, shape: eventShape(metadata) },
      });
      // the endpoint cases are about f: itself; the others name their table as a caller of logs.all must
      const text = reference.id.startsWith('http_lql_') ? reference.lql : `f:edge_logs ${reference.lql}`;
      let refusal: unknown;
      try {
        const catalogs = await new FieldCatalogs(client, 0, { now: () => Date.now() }, 30_000).forSources(indexPrefix, ['edge_logs']);
        planEndpointQuery(
          logsAll,
          { project: 'p' },
          { now: NOW, projects: null, indexPrefix },
          { language: 'lql', query: parseLql(text), limits: { maxScanEvents: 1000, maxScans: 32 }, catalogs },
        );
      } catch (error) {
        refusal = error;
      }
      await client.indices.delete({ index });
      expect(refusal, `${reference.id}: ${text}`).toBeInstanceOf(BadParameter);
      expect((refusal as BadParameter).code, `${reference.id}: ${text}`).toBe(REFUSED_AS[reference.id] ?? 'lql_syntax');
    }
  }, 120_000);
});
