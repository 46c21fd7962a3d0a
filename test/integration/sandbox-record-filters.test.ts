import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../shared/event-index.ts';
import { eventShape } from '../../shared/event-shape.ts';
import { metricsRegistry } from '../../src/metrics.ts';
import { initSqlParser } from '../../src/sql/index.ts';
import { BOOTSTRAP_KEY, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';

/**
 * Filters on record fields pushed down by the stored shape give the answers the engine gives alone:
 * each query is compared with the same query whose condition is wrapped in `(...) IS TRUE`, which
 * no rule pushes down, over events with one element per array, several, none, NULL values and no shape.
 */

function event(id: string, minute: number, metadata: Record<string, unknown> | undefined, withShape = true): StoredEvent {
  const timestamp = `2024-01-01T00:${String(minute).padStart(2, '0')}:00.000000Z`;
  return {
    id,
    timestamp,
    event_message: `message ${id}`,
    project: 'default',
    ...(metadata ? { metadata } : {}),
    ...(withShape ? { shape: eventShape(metadata) } : {}),
  };
}

const get = (path: string) => ({ method: 'GET', path });
const EVENTS = [
  event('s01', 1, { request: get('/a'), response: { status_code: 500 } }),
  event('s02', 2, { request: get('/b'), response: { status_code: 200 } }),
  event('s03', 3, { request: get('/c'), response: { status_code: null } }),
  event('s04', 4, { request: get('/d') }),
  // from here on, only events a single-element filter would get wrong (or has no shape for)
  event('m05', 5, { request: get('/e'), response: [{ status_code: 200 }, { status_code: 404 }] }),
  event('m06', 6, { request: get('/f'), response: [{ status_code: 200 }, { status_code: 201 }] }),
  event('m07', 7, [
    { request: get('/g'), response: { status_code: 503 } },
    { request: get('/h'), response: { status_code: 200 } },
  ] as unknown as Record<string, unknown>),
  event('s08', 8, undefined),
  event('m09', 9, { request: [get('/i'), { method: 'POST', path: '/j' }], response: { status_code: 404 } }),
  event('n10', 10, { request: get('/k'), response: { status_code: 502 } }, false),
  event('s11', 11, { response: { status_code: 500 } }),
];
const ALL = { project: 'default' };

/** Auth events whose status is text: canonical digits, the same numbers written otherwise, several records, text a CAST refuses. */
const status = (id: string, minute: number, text: string | string[]) =>
  event(id, minute, (Array.isArray(text) ? text.map((one) => ({ status: one })) : { status: text }) as unknown as Record<string, unknown>);
const AUTH_EVENTS = [
  status('a01', 1, '404'),
  status('a02', 2, '200'),
  status('a03', 3, '503'),
  status('a04', 4, '0404'),
  status('a05', 5, '401'),
  status('a06', 6, '+500'),
  status('a08', 8, ['404', '200']),
  status('a09', 9, '402'),
  status('a10', 10, '404'),
  status('a11', 11, '0405'),
  // after the first window: read by its superset (a leading 0), and refused by the engine's CAST
  status('a20', 20, '0abc'),
];
const FIRST_WINDOW = { project: 'default', iso_timestamp_start: '2024-01-01T00:00:00Z', iso_timestamp_end: '2024-01-01T00:15:00Z' };
const WITH_REFUSED = { project: 'default', iso_timestamp_start: '2024-01-01T00:00:00Z', iso_timestamp_end: '2024-01-01T00:30:00Z' };
const AUTH_SELECT = 'select id, timestamp, metadata.status from auth_logs cross join unnest(metadata) as metadata';
const CAST_CONDITION = 'cast(metadata.status as int64) between 400 and 499 or cast(metadata.status as int64) between 500 and 599';
/** Events s01 to s04 only: every one has one element per array, so a limit needs no more than its rows. */
const REGULAR_ONLY = { project: 'default', iso_timestamp_start: '2024-01-01T00:00:30Z', iso_timestamp_end: '2024-01-01T00:04:30Z' };

let server: EndpointTestServer;

beforeAll(async () => {
  await initSqlParser();
  server = await startEndpointServer({ now: Date.UTC(2024, 0, 1, 1) });
  await server.index('edge_logs', EVENTS);
  await server.index('auth_logs', AUTH_EVENTS);
}, 120_000);

afterAll(async () => {
  await server?.close();
});

async function rows(sql: string, params: Record<string, string>): Promise<Record<string, unknown>[]> {
  const response = await server.app.inject({
    method: 'POST',
    url: '/api/endpoints/query/logs.all',
    headers: { 'x-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' },
    payload: { ...params, sql },
  });
  expect(response.statusCode, response.body).toBe(200);
  return response.json().result;
}

async function counter(name: string, label?: Record<string, string>): Promise<number> {
  const metric = await metricsRegistry.getSingleMetric(name)!.get();
  return metric.values
    .filter((value) => !label || Object.entries(label).every(([key, wanted]) => value.labels[key] === wanted))
    .reduce((sum, value) => sum + value.value, 0);
}

const select = 'select id, timestamp, event_message, request.method, request.path, response.status_code from edge_logs cross join unnest(metadata) as m';
const inner = `${select} cross join unnest(m.request) as request cross join unnest(m.response) as response`;
const left = `${select} left join unnest(m.request) as request on true left join unnest(m.response) as response on true`;
const leftAll =
  'select id, request.path, response.status_code from edge_logs left join unnest(metadata) as m on true left join unnest(m.request) as request on true left join unnest(m.response) as response on true';

/** The query with `where <condition>`, and the same with a condition no rule pushes down. */
function pair(from: string, condition: string, tail: string): [string, string] {
  return [`${from} where ${condition} ${tail}`, `${from} where (${condition}) is true ${tail}`];
}

/** Rows in an order that ties in ORDER BY cannot change (the records of one event share its timestamp and id). */
function canonical(result: Record<string, unknown>[]): string[] {
  return result.map((row) => JSON.stringify(row)).sort();
}

describe('record-field filters pushed down by the stored shape', () => {
  it("the dashboard query: exactly the engine's rows, over single, multi-element and shapeless events", async () => {
    const [pushed, unpushed] = pair(inner, 'response.status_code >= 400', 'order by timestamp desc, id desc limit 100');
    const result = await rows(pushed, ALL);
    expect(result.map((row) => row.id)).toEqual(['n10', 'm09', 'm09', 'm07', 'm05', 's01']);
    expect(canonical(result)).toEqual(canonical(await rows(unpushed, ALL)));
    expect(
      result
        .filter((row) => row.id === 'm09')
        .map((row) => row.path)
        .sort(),
    ).toEqual(['/i', '/j']);
  });

  it.each([
    ['a limit cutting through the rows of one event', inner, 'response.status_code >= 400', 'order by timestamp desc, id desc limit 3'],
    ['NOT over inner unnests (NULL and absent values are not rows of it)', inner, 'not (response.status_code >= 400)', 'order by timestamp desc, id desc'],
    ['!= over left unnests', left, 'response.status_code != 200', 'order by timestamp desc, id desc'],
    [
      'IS NULL over left unnests (absent records, NULL values, no metadata)',
      leftAll,
      'response.status_code is null',
      'order by timestamp desc, id desc limit 20',
    ],
    [
      'IS NOT NULL and a keyword through a left unnest',
      leftAll,
      "response.status_code is not null and request.path in ('/a', '/g', '/j', '/k')",
      'order by timestamp desc, id desc limit 20',
    ],
    [
      'an inner unnest alone',
      'select id, request.path from edge_logs cross join unnest(metadata) as m cross join unnest(m.request) as request',
      "request.path != '/zzz'",
      'order by timestamp desc, id desc limit 4',
    ],
  ])('%s: the same rows as the engine alone', async (_, from, condition, tail) => {
    const [pushed, unpushed] = pair(from, condition, tail);
    expect(canonical(await rows(pushed, ALL))).toEqual(canonical(await rows(unpushed, ALL)));
  });

  it('a join that drops events keeps the limit in the engine (the newest event is not the one joined)', async () => {
    expect(await rows("select id from edge_logs join (select 's01' as k) as d on d.k = id order by timestamp desc limit 1", ALL)).toEqual([{ id: 's01' }]);
  });

  it('IS NULL through left unnests is true for a missing record, a NULL value and missing metadata', async () => {
    const result = await rows(`${leftAll} where response.status_code is null order by timestamp desc, id desc`, ALL);
    expect(result.map((row) => row.id)).toEqual(['s08', 's04', 's03']);
  });

  it("reads only the limit's events (a first page, full, then the limited search) when the scope holds no irregular event, and the engine gives the same rows", async () => {
    const [pushed, unpushed] = pair(inner, 'response.status_code >= 200', 'order by timestamp desc, id desc limit 1');
    const limited = await counter('sandbox_scans_total', { kind: 'limited' });
    const scanned = await counter('sandbox_scanned_events_total');
    const result = await rows(pushed, REGULAR_ONLY);
    expect(result.map((row) => row.id)).toEqual(['s02']);
    expect(await counter('sandbox_scans_total', { kind: 'limited' })).toBe(limited + 1);
    // s02 on the first page of both parts (full), then s02 again by the limited search
    expect(await counter('sandbox_scanned_events_total')).toBe(scanned + 2);
    expect(await rows(unpushed, REGULAR_ONLY)).toEqual(result);
  });

  it('takes the limit among the regular events and reads every irregular event the filter matches besides', async () => {
    const limited = await counter('sandbox_scans_total', { kind: 'limited' });
    const scanned = await counter('sandbox_scanned_events_total');
    const result = await rows(`${inner} where response.status_code >= 200 order by timestamp desc, id desc limit 1`, ALL);
    expect(result.map((row) => row.id)).toEqual(['n10']);
    expect(await counter('sandbox_scans_total', { kind: 'limited' })).toBe(limited + 1);
    // n10 on the first page of both parts (full); then s02, the newest regular event with a request and a status; m05, m06, m07, m09 and n10 by their superset
    expect(await counter('sandbox_scanned_events_total')).toBe(scanned + 7);
  });
});

describe('a CAST of text compared with integers, pushed down by the stored shape', () => {
  const [pushed, unpushed] = pair(AUTH_SELECT, CAST_CONDITION, 'order by timestamp desc limit 2');

  it("takes the limit among events whose text is canonical digits, reads every other form besides, and answers the engine's rows", async () => {
    const scanned = await counter('sandbox_scanned_events_total');
    const result = await rows(pushed, FIRST_WINDOW);
    // a11's 0405 is 405 to the engine: an unsure event, read with the irregular ones, reaches the answer
    expect(result.map((row) => [row.id, row.status])).toEqual([
      ['a11', '0405'],
      ['a10', '404'],
    ]);
    // a11 and a10 on the first page of both parts (full); then a10 and a09, the newest two of the exact part; a11, a08, a06 and a04
    // (unsure or several records) besides; not a01, a03, a05
    expect(await counter('sandbox_scanned_events_total')).toBe(scanned + 8);
    expect(await rows(unpushed, FIRST_WINDOW)).toEqual(result);
  });

  it('sends one search when the first page of both parts holds fewer events than the limit, as many as reading them whole', async () => {
    const searches = async () => {
      const stats = await server.elasticsearch.indices.stats({ index: `${server.config.INDEX_PREFIX}auth_logs*`, metric: 'search' });
      return stats._all.total?.search?.query_total ?? 0;
    };
    const [many, manyUnpushed] = pair(AUTH_SELECT, CAST_CONDITION, 'order by timestamp desc limit 50');
    const before = await searches();
    const result = await rows(many, FIRST_WINDOW);
    const pushedSearches = (await searches()) - before;
    expect(result.map((row) => row.id)).toEqual(['a11', 'a10', 'a09', 'a08', 'a06', 'a05', 'a04', 'a03', 'a01']);
    const between = await searches();
    expect(await rows(manyUnpushed, FIRST_WINDOW)).toEqual(result);
    expect(pushedSearches).toBe((await searches()) - between);
  });

  it("gives the engine's refusal when an event the limit would pass over holds text the CAST refuses", async () => {
    const answer = async (sql: string) => {
      const response = await server.app.inject({
        method: 'POST',
        url: '/api/endpoints/query/logs.all',
        headers: { 'x-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' },
        payload: { ...WITH_REFUSED, sql },
      });
      return { status: response.statusCode, body: response.json() };
    };
    const refused = await answer(pushed);
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/0abc/);
    expect(refused).toEqual(await answer(unpushed));
  });
});
