import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../shared/event-index.ts';
import type { SourceName } from '../../shared/sources.ts';
import { BOOTSTRAP_KEY, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';
import { sandboxDataset } from '../support/sandbox-data.ts';
import { LQL_ATTACKS } from '../fixtures/lql-attacks.ts';

const dataset = sandboxDataset({ perSource: 720, projects: ['default', 'other'] });
const NOW = Date.UTC(2024, 0, 1, 1);
let server: EndpointTestServer;

/** Microseconds since the epoch of a stored timestamp, computed here independently of the service. */
function micros(stored: string): number {
  return Date.parse(`${stored.slice(0, 23)}Z`) * 1000 + Number(stored.slice(23, 26));
}

async function lql(text: string, params: Record<string, string> = { project: 'default' }) {
  const response = await server.app.inject({
    method: 'POST',
    url: '/api/endpoints/query/logs.all',
    headers: { 'x-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' },
    payload: { ...params, lql: text },
  });
  return response;
}

async function ids(text: string): Promise<string[]> {
  const response = await lql(text);
  expect(response.statusCode, `${text}: ${response.body}`).toBe(200);
  return (response.json().result as { id: string }[]).map((row) => row.id).sort();
}

/** The events of one source of project default that a predicate (written here, in JavaScript) accepts. */
function expected(source: SourceName, accept: (event: StoredEvent, metadata: Record<string, unknown>) => boolean): string[] {
  return dataset.events
    .get(source)!
    .filter((event) => event.id.startsWith('default-') && accept(event, event.metadata as Record<string, unknown>))
    .map((event) => event.id)
    .sort();
}

const requests = (metadata: Record<string, unknown>) => ([] as Record<string, unknown>[]).concat((metadata.request as Record<string, unknown>) ?? []);

beforeAll(async () => {
  server = await startEndpointServer({ now: NOW, overrides: { RATE_LIMIT_PER_MINUTE: '0' } });
  for (const [source, events] of dataset.events) await server.index(source, events);
}, 180_000);

afterAll(async () => {
  await server?.close();
});

describe('LQL filters on the real store, both sides of each', () => {
  it('free text is a case-sensitive substring; ~ a partial regex; (?i) ignores case', async () => {
    expect(await ids('f:storage_logs ObjectNotFound')).toEqual(expected('storage_logs', (event) => event.event_message.includes('ObjectNotFound')));
    expect(await ids('f:storage_logs objectnotfound')).toEqual([]);
    expect(await ids('f:storage_logs ~"(?i)^storage_logs objectnotfound"')).toEqual(
      expected('storage_logs', (event) => /^storage_logs objectnotfound/i.test(event.event_message)),
    );
    expect(await ids('f:edge_logs "| 500 |"')).toEqual(expected('edge_logs', (event) => event.event_message.includes('| 500 |')));
  });

  it('a field inside nested records matches when any record does; negation and NULL', async () => {
    expect(await ids('f:edge_logs m.request.path:~"^/rest"')).toEqual(
      expected('edge_logs', (_, metadata) => requests(metadata).some((request) => /^\/rest/.test(String(request.path)))),
    );
    expect(await ids('f:edge_logs -m.request.path:~"^/rest"')).toEqual(
      expected('edge_logs', (_, metadata) => !requests(metadata).some((request) => /^\/rest/.test(String(request.path)))),
    );
    expect(await ids('f:edge_logs m.response.status_code:NULL')).toEqual(expected('edge_logs', (_, metadata) => metadata.response === undefined));
  });

  it('numbers compare as numbers; ranges are inclusive', async () => {
    const status = (metadata: Record<string, unknown>) => (metadata.response as { status_code?: number } | undefined)?.status_code;
    expect(await ids('f:edge_logs m.response.status_code:>=500')).toEqual(expected('edge_logs', (_, metadata) => (status(metadata) ?? 0) >= 500));
    expect(await ids('f:edge_logs m.response.status_code:400..429')).toEqual(
      expected('edge_logs', (_, metadata) => {
        const code = status(metadata);
        return code !== undefined && code >= 400 && code <= 429;
      }),
    );
    expect(await ids('f:edge_logs m.response.status_code:<201')).toEqual(
      expected('edge_logs', (_, metadata) => {
        const code = status(metadata);
        return code !== undefined && code < 201;
      }),
    );
  });

  it('times: a range, a comparison, and a window relative to now', async () => {
    const inRange = (from: string, to: string) => (event: StoredEvent) =>
      micros(event.timestamp) >= Date.parse(from) * 1000 && micros(event.timestamp) <= Date.parse(to) * 1000;
    expect(await ids('f:auth_logs t:2024-01-01T00:00:00Z..2024-01-01T03:00:00Z')).toEqual(
      expected('auth_logs', inRange('2024-01-01T00:00:00Z', '2024-01-01T03:00:00Z')),
    );
    expect(await ids('f:auth_logs t:>2024-01-01T20:00:00Z')).toEqual(
      expected('auth_logs', (event) => micros(event.timestamp) > Date.parse('2024-01-01T20:00:00Z') * 1000),
    );
    // now is 01:00 on 2024-01-01: the last two hours
    expect(await ids('f:auth_logs t:last@2hours')).toEqual(expected('auth_logs', inRange('2023-12-31T23:00:00Z', '2024-01-01T01:00:00Z')));
  });

  it('array includes: an element equals, an element matches', async () => {
    const tags = (metadata: Record<string, unknown>) => (metadata.tags as string[] | undefined) ?? [];
    expect(await ids('f:storage_logs m.tags:@>beta')).toEqual(expected('storage_logs', (_, metadata) => tags(metadata).includes('beta')));
    expect(await ids('f:storage_logs m.tags:@>~"^al"')).toEqual(expected('storage_logs', (_, metadata) => tags(metadata).some((tag) => tag.startsWith('al'))));
    expect(await ids('f:storage_logs -m.tags:@>alpha')).toEqual(expected('storage_logs', (_, metadata) => !tags(metadata).includes('alpha')));
  });

  it('level ranges follow the syslog order', async () => {
    expect(await ids('f:realtime_logs m.level:error..emergency')).toEqual(expected('realtime_logs', (_, metadata) => metadata.level === 'error'));
    expect(await ids('f:realtime_logs m.level:debug..info')).toEqual(expected('realtime_logs', (_, metadata) => metadata.level === 'info'));
  });
});

describe('LQL results', () => {
  it('without s: returns timestamp, id, event_message and the filtered paths, newest first', async () => {
    const response = await lql('f:edge_logs m.response.status_code:>=500');
    const rows = response.json().result as Record<string, unknown>[];
    expect(Object.keys(rows[0]!)).toEqual(['timestamp', 'id', 'event_message', 'status_code']);
    const times = rows.map((row) => row.timestamp as number);
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    expect(rows.every((row) => (row.status_code as number) >= 500)).toBe(true);
  });

  it('s: picks columns with aliases', async () => {
    const rows = (await lql('f:function_logs s:id s:m.level@lvl m.level:error')).json().result as Record<string, unknown>[];
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((row) => Object.keys(row).join(',') === 'id,lvl' && row.lvl === 'error')).toBe(true);
  });

  it('charts count per bucket, oldest first, equal to a count made here', async () => {
    const rows = (await lql('f:edge_logs c:count(*) c:group_by(t::hour) m.response.status_code:>=500')).json().result as { timestamp: number; count: number }[];
    const counts = new Map<number, number>();
    for (const event of dataset.events.get('edge_logs')!) {
      const code = (event.metadata as { response?: { status_code: number } }).response?.status_code;
      if (!event.id.startsWith('default-') || code === undefined || code < 500) continue;
      const hour = Math.floor(micros(event.timestamp) / 3_600_000_000) * 3_600_000_000;
      counts.set(hour, (counts.get(hour) ?? 0) + 1);
    }
    expect(rows).toEqual([...counts.entries()].sort((a, b) => a[0] - b[0]).map(([timestamp, count]) => ({ timestamp, count })));
  });

  it('charts averages of a numeric field', async () => {
    const rows = (await lql('f:edge_logs c:avg(m.response.origin_time) c:group_by(t::day)')).json().result as { timestamp: number; avg: number }[];
    const days = new Map<number, number[]>();
    for (const event of dataset.events.get('edge_logs')!) {
      const time = (event.metadata as { response?: { origin_time: number } }).response?.origin_time;
      if (!event.id.startsWith('default-') || time === undefined) continue;
      const day = Math.floor(micros(event.timestamp) / 86_400_000_000) * 86_400_000_000;
      days.set(day, [...(days.get(day) ?? []), time]);
    }
    expect(rows.map((row) => row.timestamp)).toEqual([...days.keys()].sort());
    for (const row of rows) {
      const values = days.get(row.timestamp)!;
      expect(row.avg).toBeCloseTo(values.reduce((sum, value) => sum + value, 0) / values.length, 6);
    }
  });
});

describe('LQL errors', () => {
  it('a syntax error is 400 lql_syntax with where and what was expected', async () => {
    const response = await lql('f:edge_logs t:last@2hourz');
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('lql_syntax');
    expect(response.json().error.message).toMatch(/hourz/);
  });

  it('a missing f: names the tables; an unknown one is unknown_table', async () => {
    const missing = await lql('error');
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error.message).toMatch(/edge_logs, postgres_logs/);
    const unknown = await lql('f:nope error');
    expect(unknown.json().error.code).toBe('unknown_table');
  });

  it(`the LQL attack list (${LQL_ATTACKS.length} cases): refused (400, or 413 for a body over 1 MiB), or rows of this project only; never a 5xx`, async () => {
    let refused = 0;
    for (const attack of LQL_ATTACKS) {
      const response = await lql(`f:edge_logs ${attack.lql}`);
      expect([200, 400, 413], `${attack.label}: ${response.body.slice(0, 200)}`).toContain(response.statusCode);
      if (response.statusCode !== 200) refused += 1;
      else expect(response.body, attack.label).not.toMatch(/other-edge_logs/);
    }
    expect(refused).toBeGreaterThan(LQL_ATTACKS.length / 2);
  }, 120_000);

  it('a chart over more than 250 buckets of a bounded range is refused, naming the count', async () => {
    const response = await lql('f:edge_logs t:2023-12-31T00:00:00Z..2024-01-01T01:00:00Z c:count(*) c:group_by(t::minute)');
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatchObject({ code: 'invalid_query', message: expect.stringMatching(/1,501 buckets, more than 250/) });
    expect((await lql('f:edge_logs t:2023-12-31T00:00:00Z..2024-01-01T01:00:00Z c:count(*) c:group_by(t::hour)')).statusCode).toBe(200);
  });

  it('a path no stored event has is 400 unknown_field; a field first stored after the types were read is found', async () => {
    const unknown = await lql('f:function_logs m.nonexistent:value');
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error).toMatchObject({
      code: 'unknown_field',
      message: expect.stringContaining('metadata.nonexistent is not a field of function_logs'),
    });
    // the field types of function_logs are now kept (FIELD_CATALOG_SECONDS); an event with a new field arrives
    const field = `fresh_${Date.now().toString(36)}`;
    const base = dataset.events.get('function_logs')!.find((event) => event.id.startsWith('default-'))!;
    await server.index('function_logs', [{ ...base, id: 'default-fresh-field', metadata: { ...(base.metadata as Record<string, unknown>), [field]: 'yes' } }]);
    expect(await ids(`f:function_logs m.${field}:yes`)).toEqual(['default-fresh-field']);
  });

  it('never reads another project, whatever the query says', async () => {
    const response = await lql('f:edge_logs project:other');
    expect(response.json().result).toEqual([]);
  });
});
