import { readFileSync } from 'node:fs';
import { get as httpGet, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { StoredEvent } from '../../shared/event-index.ts';
import { formatMicros } from '../../shared/stored-timestamp.ts';
import { BOOTSTRAP_KEY, edgeEvent, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';
import { startServiceProcess, type ServiceProcess } from '../support/service-process.ts';

type LogRow = { id: string; timestamp: number; event_message: string; metadata: Record<string, unknown>[] };

const NOW = Date.UTC(2024, 0, 2);
const request = { url: 'https://abc.supabase.co/rest/v1/t', path: '/rest/v1/t' };

/** A stored timestamp `seconds` before NOW, plus extra microseconds. */
const before = (seconds: number, micros = 0) => formatMicros((NOW - seconds * 1000) * 1000 + micros);

/** The RFC 4180 records of a CSV text (quoted fields may hold commas, doubled quotes, CR and LF). */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  for (let index = 0; index < text.length; index += 1) {
    const char = text[index]!;
    if (quoted) {
      if (char === '"' && text[index + 1] === '"') {
        field += '"';
        index += 1;
      } else if (char === '"') quoted = false;
      else field += char;
    } else if (char === '"') quoted = true;
    else if (char === ',') {
      record.push(field);
      field = '';
    } else if (char === '\r' && text[index + 1] === '\n') {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
      index += 1;
    } else field += char;
  }
  expect(field, 'the text ends with CRLF').toBe('');
  return records;
}

const ndjsonRows = (text: string) =>
  text === ''
    ? []
    : text
        .replace(/\n$/, '')
        .split('\n')
        .map((line) => JSON.parse(line) as LogRow);

describe('exports (format=ndjson|csv) on the in-process service', () => {
  let server: EndpointTestServer;
  const events: StoredEvent[] = [
    edgeEvent('tie-a', before(3600), 'abc', request),
    edgeEvent('tie-b', before(3600), 'abc', request),
    edgeEvent('tie-c', before(3600), 'abc', request),
    edgeEvent('commas', before(7200), 'abc', request, { note: 'a "quoted", multi\r\nline note' }),
    edgeEvent('address', before(7300), 'abc', { url: 'https://abc.supabase.co/rest/v1/t?ip=203.0.113.9', path: '/rest/v1/t' }),
    ...Array.from({ length: 40 }, (_, i) => edgeEvent(`older-${String(i).padStart(2, '0')}`, before(10_000 + i * 60, i), 'abc', request)),
    edgeEvent('other-project', before(3000), 'xyz', request),
  ];
  // the message itself holds commas, quotes and newlines
  events[3] = { ...events[3]!, event_message: 'GET "/rest/v1/t", 200,\nsecond line' };

  const query = async (url: string, options: { headers?: Record<string, string>; method?: 'GET' | 'POST'; payload?: unknown } = {}) =>
    server.app.inject({
      method: options.method ?? 'GET',
      url,
      headers: { 'x-api-key': BOOTSTRAP_KEY, ...options.headers },
      ...(options.payload ? { payload: options.payload as object } : {}),
    });

  /** Every page of an export, following X-Next-Cursor. */
  const allPages = async (path: string, format: 'ndjson' | 'csv', pageSize: number, headers: Record<string, string> = {}) => {
    const pages: { status: number; body: string; cursor?: string }[] = [];
    let cursor: string | undefined;
    do {
      const response = await query(`${path}&format=${format}&page_size=${pageSize}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { headers });
      expect(response.statusCode, response.body).toBe(200);
      cursor = response.headers['x-next-cursor'] as string | undefined;
      pages.push({ status: response.statusCode, body: response.body, cursor });
    } while (cursor && pages.length < 100);
    return pages;
  };

  beforeAll(async () => {
    server = await startEndpointServer({ now: NOW });
    await server.index('edge_logs', events);
  });

  afterAll(async () => {
    await server.close();
  });

  it('format=json or no format is the JSON answer, byte for byte', async () => {
    const plain = await query('/api/endpoints/query/logs.all?project=abc');
    const json = await query('/api/endpoints/query/logs.all?project=abc&format=json');
    expect(plain.statusCode).toBe(200);
    expect(json.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(json.headers['x-next-cursor']).toBeUndefined();
    expect(json.body).toBe(plain.body);
    expect(plain.body.startsWith('{"result":[{"id":"tie-c",')).toBe(true);
  });

  it('pages an NDJSON export of logs.all newest first, each event exactly once, rows as JSON has them', async () => {
    const json = (JSON.parse((await query('/api/endpoints/query/logs.all?project=abc')).body) as { result: LogRow[] }).result;
    const pages = await allPages('/api/endpoints/query/logs.all?project=abc', 'ndjson', 7);
    expect(pages.map((page) => ndjsonRows(page.body).length)).toEqual([7, 7, 7, 7, 7, 7, 3]);
    expect(pages.at(-1)!.cursor).toBeUndefined();
    const rows = pages.flatMap((page) => ndjsonRows(page.body));
    // the saved selection returns 100 rows; the JSON answer here has all 45, in the same order and shape
    expect(rows).toEqual(json);
    expect(rows.slice(0, 3).map((row) => row.id)).toEqual(['tie-c', 'tie-b', 'tie-a']);
  });

  it('ends a page exactly at page_size when the rows run out there, without a cursor', async () => {
    const pages = await allPages('/api/endpoints/query/logs.all?project=abc', 'ndjson', 45);
    expect(pages).toHaveLength(1);
    expect(ndjsonRows(pages[0]!.body)).toHaveLength(45);
  });

  it('keeps the window of page 1: events arriving meanwhile are neither skipped nor repeated', async () => {
    await server.index(
      'edge_logs',
      Array.from({ length: 15 }, (_, i) => edgeEvent(`win-${String(i).padStart(2, '0')}`, before(600 + i * 10), 'win', request)),
    );
    const first = await query('/api/endpoints/query/logs.all?project=win&format=ndjson&page_size=5');
    const cursor = first.headers['x-next-cursor'] as string;
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    await server.clock.advance(3600_000);
    // newer than page 1's time, within the part page 1 already sent, and within the part still to come
    const late = [edgeEvent('after-window', before(-60), 'win', request), edgeEvent('inside-sent-part', before(605), 'win', request)];
    await server.index('edge_logs', [...late, edgeEvent('win-late', before(695), 'win', request)]);
    const rest = await allPages(`/api/endpoints/query/logs.all?project=win&cursor=${encodeURIComponent(cursor)}`, 'ndjson', 4);
    const ids = [...ndjsonRows(first.body), ...rest.flatMap((page) => ndjsonRows(page.body))].map((row) => row.id);
    const expected = Array.from({ length: 15 }, (_, i) => `win-${String(i).padStart(2, '0')}`);
    // an event stamped inside the window's unsent part belongs to it, in its place
    expected.splice(10, 0, 'win-late');
    expect(ids).toEqual(expected);
  });

  it('exports CSV: a header row, then RFC 4180 records; commas, quotes and newlines survive', async () => {
    const response = await query('/api/endpoints/query/logs.all?project=abc&format=csv&page_size=5');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(response.headers['x-next-cursor']).toBeDefined();
    const [header, ...records] = parseCsv(response.body);
    expect(header).toEqual(['id', 'timestamp', 'event_message', 'metadata']);
    expect(records.map((record) => record[0])).toEqual(['tie-c', 'tie-b', 'tie-a', 'commas', 'address']);
    const commas = records[3]!;
    expect(commas[2]).toBe('GET "/rest/v1/t", 200,\nsecond line');
    expect(JSON.parse(commas[3]!)).toEqual([{ request: [request], note: 'a "quoted", multi\r\nline note' }]);
    expect(Number(commas[1])).toBe((NOW - 7_200_000) * 1000);
    // the raw text: quotes doubled inside a quoted field
    expect(response.body).toContain('"GET ""/rest/v1/t"", 200,\nsecond line"');
  });

  it('redacts exports exactly as it redacts JSON', async () => {
    const headers = { 'svc-endpoint-redact-pii': 'true' };
    const json = (JSON.parse((await query('/api/endpoints/query/logs.all?project=abc', { headers })).body) as { result: LogRow[] }).result;
    const rows = (await allPages('/api/endpoints/query/logs.all?project=abc', 'ndjson', 20, headers)).flatMap((page) => ndjsonRows(page.body));
    expect(rows).toEqual(json);
    expect(JSON.stringify(rows)).not.toContain('203.0.113.9');
    expect(JSON.stringify(json)).toContain('https://abc.supabase.co/rest/v1/t?ip=');
  });

  it('refuses a tampered cursor, a cursor with other parameters, and an unknown format, with a clear 400', async () => {
    const first = await query('/api/endpoints/query/logs.all?project=abc&format=ndjson&page_size=10');
    const cursor = first.headers['x-next-cursor'] as string;
    const [payload, signature] = cursor.split('.') as [string, string];
    const position = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { a: [string, string] };
    const moved = Buffer.from(JSON.stringify({ ...position, a: [position.a[0], 'zzz'] })).toString('base64url');
    const cases: [string, RegExp][] = [
      [`project=abc&cursor=${moved}.${signature}`, /it was altered/],
      [`project=abc&cursor=${payload}.${signature.slice(2)}`, /it was altered/],
      [`project=xyz&cursor=${cursor}`, /the parameters, the redaction header or the API key differ/],
      ['project=abc&cursor=not-a-cursor', /it is not a cursor this service made/],
    ];
    for (const [parameters, message] of cases) {
      const response = await query(`/api/endpoints/query/logs.all?${parameters}&format=ndjson`);
      expect(response.statusCode, parameters).toBe(400);
      expect(response.json()).toEqual({ error: { code: 'invalid_cursor', message: expect.stringMatching(message) as string } });
    }
    const redacted = await query(`/api/endpoints/query/logs.all?project=abc&format=ndjson&cursor=${cursor}`, {
      headers: { 'svc-endpoint-redact-pii': 'true' },
    });
    expect(redacted.statusCode).toBe(400);
    const unknown = await query('/api/endpoints/query/logs.all?project=abc&format=xml');
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json()).toEqual({ error: { code: 'bad_parameter', message: 'format must be one of json, ndjson, csv; got "xml"' } });
    const jsonPaged = await query('/api/endpoints/query/logs.all?project=abc&page_size=10');
    expect(jsonPaged.statusCode).toBe(400);
  });

  it('counts exported rows and bytes in the per-endpoint usage metrics, and refuses statistics with an export', async () => {
    const usage = async () => {
      const text = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
      const sum = (name: string) =>
        [...text.matchAll(new RegExp(`^${name}\\{endpoint="logs\\.all",[^}]*\\} (\\d+)$`, 'gm'))].reduce((total, match) => total + Number(match[1]), 0);
      return { rows: sum('endpoint_rows_returned_total'), bytes: sum('endpoint_bytes_returned_total') };
    };
    const before = await usage();
    const page = await query('/api/endpoints/query/logs.all?project=abc&format=csv&page_size=12');
    expect(parseCsv(page.body)).toHaveLength(13);
    const after = await usage();
    expect(after.rows - before.rows).toBe(12);
    expect(after.bytes - before.bytes).toBe(Buffer.byteLength(page.body));
    const withStats = await query('/api/endpoints/query/logs.all?project=abc&format=ndjson&stats=true');
    expect(withStats.statusCode).toBe(400);
    expect(withStats.json().error.message).toMatch(/statistics come in the JSON answer's stats object/);
  });

  it('exports other answers (sandboxed SQL, a JSON body, an aggregation) as their rows, without a cursor', async () => {
    const sql = "select id, event_message from edge_logs where id like 'older-%' order by id limit 3";
    const csv = await query('/api/endpoints/query/logs.all', { method: 'POST', payload: { project: 'abc', sql, format: 'csv' } });
    expect(csv.statusCode, csv.body).toBe(200);
    expect(csv.headers['x-next-cursor']).toBeUndefined();
    expect(csv.body).toBe('id,event_message\r\nolder-00,GET | 200 | older-00\r\nolder-01,GET | 200 | older-01\r\nolder-02,GET | 200 | older-02\r\n');
    const ndjson = await query('/api/endpoints/query/logs.all', { method: 'POST', payload: { project: 'abc', sql, format: 'ndjson' } });
    expect(ndjsonRows(ndjson.body)).toEqual(
      (JSON.parse((await query('/api/endpoints/query/logs.all', { method: 'POST', payload: { project: 'abc', sql } })).body) as { result: unknown[] }).result,
    );
    const usage = '/api/endpoints/query/usage.api-counts?project=abc&interval=hourly';
    const usageRows = (JSON.parse((await query(usage)).body) as { result: Record<string, unknown>[] }).result;
    expect(usageRows.length).toBeGreaterThan(0);
    const usageCsv = parseCsv((await query(`${usage}&format=csv`)).body);
    expect(usageCsv).toEqual([Object.keys(usageRows[0]!), ...usageRows.map((row) => Object.values(row).map((value) => String(value)))]);
    const withCursor = await query('/api/endpoints/query/logs.all', { method: 'POST', payload: { project: 'abc', sql, format: 'ndjson', cursor: 'x.y' } });
    expect(withCursor.statusCode).toBe(400);
    expect(withCursor.json().error.code).toBe('invalid_cursor');
  });
});

describe('the export budget (EXPORT_ROWS_PER_MINUTE)', () => {
  let server: EndpointTestServer;

  beforeAll(async () => {
    server = await startEndpointServer({ now: NOW, overrides: { EXPORT_ROWS_PER_MINUTE: '6' } });
    await server.index(
      'edge_logs',
      Array.from({ length: 20 }, (_, i) => edgeEvent(`e-${String(i).padStart(2, '0')}`, before(100 + i), 'abc', request)),
    );
  });

  afterAll(async () => {
    await server.close();
  });

  it('cuts a page to the rows left (with its cursor), then answers 429 with Retry-After until rows are earned back', async () => {
    const get = (url: string) => server.app.inject({ method: 'GET', url, headers: { 'x-api-key': BOOTSTRAP_KEY } });
    const first = await get('/api/endpoints/query/logs.all?project=abc&format=ndjson&page_size=100');
    expect(first.statusCode).toBe(200);
    expect(ndjsonRows(first.body).map((row) => row.id)).toEqual(['e-00', 'e-01', 'e-02', 'e-03', 'e-04', 'e-05']);
    const cursor = first.headers['x-next-cursor'] as string;
    expect(cursor).toBeDefined();
    const refused = await get(`/api/endpoints/query/logs.all?project=abc&format=ndjson&cursor=${cursor}`);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('10');
    expect(refused.json()).toEqual({ error: { code: 'rate_limited', message: 'export budget spent for this API key: 6 rows per minute; retry in 10 s' } });
    // JSON answers do not spend the export budget
    expect((await get('/api/endpoints/query/logs.all?project=abc')).statusCode).toBe(200);
    await server.clock.advance(30_000);
    const next = await get(`/api/endpoints/query/logs.all?project=abc&format=ndjson&cursor=${cursor}`);
    expect(next.statusCode).toBe(200);
    expect(ndjsonRows(next.body).map((row) => row.id)).toEqual(['e-06', 'e-07', 'e-08']);
  });
});

/** The process's resident set now and at its peak, in bytes (Linux). */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(status)![1]) * 1024;
  return { rss: kib('VmRSS'), peak: kib('VmHWM') };
}

describe('an NDJSON export of 50,000 events from the service process', () => {
  const EVENTS = 50_000;
  /**
   * Resident growth allowed while exporting ~55 MB of rows. In trials a first page of 40,000 rows grew
   * it by about 50 MiB streamed (the garbage of chunks not yet collected), and by 125 MiB held whole.
   */
  const RSS_GROWTH_BOUND = 96 * 1024 * 1024;
  let writer: EndpointTestServer;
  let service: ServiceProcess;
  const now = Date.now();

  beforeAll(async () => {
    writer = await startEndpointServer({ now });
    const padding = 'x'.repeat(900);
    const events: StoredEvent[] = Array.from({ length: EVENTS }, (_, i) =>
      // pairs share a timestamp, so id breaks ties across chunk and page boundaries
      edgeEvent(`ev-${String(i).padStart(6, '0')}`, formatMicros((now - 60_000 - Math.floor(i / 2) * 1000) * 1000), 'bulk', request, { padding }),
    );
    await writer.index('edge_logs', events);
    service = await startServiceProcess({
      KAFKA_BROKERS: inject('kafkaBrokers').join(','),
      ELASTICSEARCH_URL: inject('elasticsearchUrl'),
      BOOTSTRAP_API_KEY: BOOTSTRAP_KEY,
      INDEX_PREFIX: writer.config.INDEX_PREFIX,
      EXPORT_ROWS_PER_MINUTE: '0',
      RATE_LIMIT_PER_MINUTE: '0',
    });
  }, 300_000);

  afterAll(async () => {
    await service?.stop();
    await writer?.close();
  });

  it('returns each event exactly once, newest first, with the resident set growing less than the bound', async () => {
    // a large first page: its rows must stream through, not be held (one chunk of 1000 rows is held at a time)
    const url = (pageSize: number) => `${service.address}/api/endpoints/query/logs.all?project=bulk&format=ndjson&page_size=${pageSize}`;
    // warm-up outside the measurement: the first answer loads the code paths and the store client's sockets
    expect(
      (await fetch(`${service.address}/api/endpoints/query/logs.all?project=bulk&format=ndjson&page_size=10`, { headers: { 'x-api-key': BOOTSTRAP_KEY } }))
        .status,
    ).toBe(200);
    const baseline = memoryOf(service.child.pid!).rss;
    const ids: string[] = [];
    let previous: [number, string] | undefined;
    let cursor: string | undefined;
    let pages = 0;
    do {
      const response = await fetch(`${url(pages === 0 ? 40_000 : 4000)}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, {
        headers: { 'x-api-key': BOOTSTRAP_KEY },
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/x-ndjson');
      cursor = response.headers.get('x-next-cursor') ?? undefined;
      pages += 1;
      // read as it streams, line by line, holding only the ids
      let pending = '';
      const decoder = new TextDecoder();
      for await (const chunk of response.body!) {
        pending += decoder.decode(chunk as Uint8Array, { stream: true });
        const lines = pending.split('\n');
        pending = lines.pop()!;
        for (const line of lines) {
          const row = JSON.parse(line) as LogRow;
          if (previous)
            expect(row.timestamp < previous[0] || (row.timestamp === previous[0] && row.id < previous[1]), `${row.id} after ${previous[1]}`).toBe(true);
          previous = [row.timestamp, row.id];
          ids.push(row.id);
        }
      }
      expect(pending).toBe('');
    } while (cursor);
    const growth = memoryOf(service.child.pid!).peak - baseline;
    console.log(
      `exported ${ids.length} events in ${pages} pages; service RSS ${(baseline / 2 ** 20).toFixed(0)} MiB before, peak growth ${(growth / 2 ** 20).toFixed(1)} MiB`,
    );
    expect(pages).toBe(4);
    expect(ids).toHaveLength(EVENTS);
    expect(new Set(ids).size).toBe(EVENTS);
    expect(ids[0]).toBe('ev-000001');
    expect(growth).toBeLessThan(RSS_GROWTH_BOUND);
  }, 300_000);

  it('asks the store for the next chunk only when the client has taken the previous ones', async () => {
    const searches = async () => {
      const text = await (await fetch(`${service.address}/metrics`)).text();
      return Number(/^elasticsearch_query_duration_seconds_count\{endpoint="logs\.all"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    };
    const before = await searches();
    // one page of all 50,000 rows (50 chunks), not read by the client for now
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      httpGet(
        `${service.address}/api/endpoints/query/logs.all?project=bulk&format=ndjson&page_size=50000`,
        { headers: { 'x-api-key': BOOTSTRAP_KEY } },
        (incoming) => {
          incoming.pause();
          resolve(incoming);
        },
      ).on('error', reject);
    });
    expect(response.statusCode).toBe(200);
    // wait until the service stops searching: the socket's buffers are full
    let paused = await searches();
    for (let settled = 0; settled < 5; ) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      const now = await searches();
      settled = now === paused ? settled + 1 : 0;
      paused = now;
    }
    // the page-end look-ups and the chunks the socket buffers hold, far from the page's 50 chunks
    console.log(`searches while the client did not read: ${paused - before}`);
    expect(paused - before).toBeLessThan(30);
    let lines = 0;
    for await (const chunk of response) lines += (chunk as Buffer).toString('latin1').split('\n').length - 1;
    expect(lines).toBe(EVENTS);
    expect((await searches()) - before).toBeGreaterThanOrEqual(50);
  }, 120_000);
});
