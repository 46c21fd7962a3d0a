import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidQuery, QueryTimeout, QueryTooExpensive, StoreUnavailable } from '../../src/errors.ts';
import { EmbeddedEngine, type EngineTable } from '../../src/executor/engine/embedded-engine.ts';
import { inferTableSchema } from '../../src/executor/engine/schema-inference.ts';
import { metadataRows } from '../../src/executor/rows/logs.ts';
import { sandboxEngineResultRowsTotal } from '../../src/metrics.ts';
import { stringGuard } from '../../src/executor/duckdb-sql/value-size.ts';
import type { SqlType, TableSchema } from '../../src/sql/types.ts';

const samplesDirectory = path.resolve(import.meta.dirname, '../fixtures/logflare-samples');

let engine: EmbeddedEngine;
let startMs: number;
beforeAll(async () => {
  const started = performance.now();
  engine = await EmbeddedEngine.start({ memoryLimit: '512MB', threads: 2, logger: pino({ level: 'silent' }), interruptGraceMs: 1_000 });
  startMs = performance.now() - started;
});
afterAll(async () => {
  await engine?.close();
});

const query = (sql: string, tables: EngineTable[] = [], timeoutMs = 10_000) => engine.run({ tables, sql, timeoutMs });
const single = async (sql: string, tables: EngineTable[] = []) => (await query(sql, tables)).rows[0];

describe('result values in the API form', () => {
  it('TIMESTAMPTZ -> integer microseconds', async () => {
    const row = await single(`select TIMESTAMPTZ '2024-01-01 00:00:00.123456+00' as t, TIMESTAMPTZ '2024-01-01 02:00:00+02' as zoned`);
    expect(row).toEqual({ t: 1_704_067_200_123_456, zoned: 1_704_067_200_000_000 });
  });

  it('TIMESTAMP -> YYYY-MM-DDTHH:MM:SS with the fraction only when not zero', async () => {
    const row = await single(
      `select TIMESTAMP '2024-01-01 10:11:12' as whole, TIMESTAMP '2024-01-01 10:11:12.5' as half, TIMESTAMP '1969-12-31 23:59:59.999999' as before_epoch, TIMESTAMP '0001-01-01 00:00:00' as first`,
    );
    expect(row).toEqual({
      whole: '2024-01-01T10:11:12',
      half: '2024-01-01T10:11:12.500000',
      before_epoch: '1969-12-31T23:59:59.999999',
      first: '0001-01-01T00:00:00',
    });
  });

  it('timestamp_trunc-like results of TIMESTAMPTZ cast to TIMESTAMP read as UTC civil time', async () => {
    expect(await single(`select date_trunc('minute', TIMESTAMPTZ '2024-05-06 07:08:09.5+00')::TIMESTAMP as minute`)).toEqual({ minute: '2024-05-06T07:08:00' });
  });

  it('DATE -> YYYY-MM-DD', async () => {
    expect(await single(`select DATE '2024-02-29' as d`)).toEqual({ d: '2024-02-29' });
  });

  it('a STRUCT -> a one-element array of its record, nested structs too', async () => {
    expect(await single(`select {'a': 1, 'inner': {'b': 'x'}} as s`)).toEqual({ s: [{ a: 1, inner: [{ b: 'x' }] }] });
  });

  it('a LIST -> an array; a list of structs -> an array of records, not wrapped again', async () => {
    const row = await single(`select [1, 2, NULL] as numbers, [{'a': 1}, {'a': 2}] as records, [[1], [2, 3]] as nested`);
    expect(row).toEqual({ numbers: [1, 2, null], records: [{ a: 1 }, { a: 2 }], nested: [[1], [2, 3]] });
  });

  it('BIGINT and HUGEINT -> numbers while exact, strings beyond 2^53', async () => {
    const row = await single(
      `select 9007199254740991::BIGINT as safe, 9007199254740993::BIGINT as unsafe, 12::HUGEINT as small_huge, (2::HUGEINT ** 70)::HUGEINT as big_huge, -5::BIGINT as negative`,
    );
    expect(row).toEqual({ safe: 9_007_199_254_740_991, unsafe: '9007199254740993', small_huge: 12, big_huge: '1180591620717411303424', negative: -5 });
  });

  it('count(*) and sum over BIGINT are numbers', async () => {
    expect(await single(`select count(*) as c, sum(range) as s from range(10)`)).toEqual({ c: 10, s: 45 });
  });

  it('DECIMAL -> number', async () => {
    expect(await single(`select 1.5::DECIMAL(38,9) as d, 0.1::DECIMAL(4,1) as small`)).toEqual({ d: 1.5, small: 0.1 });
  });

  it('JSON -> the parsed value', async () => {
    expect(await single(`select '{"a":[1,"x",null]}'::JSON as j, 'null'::JSON as literal_null`)).toEqual({ j: { a: [1, 'x', null] }, literal_null: null });
  });

  it('BLOB -> base64', async () => {
    expect(await single(`select '\\xAA\\xBB'::BLOB as b, 'hi'::BLOB as text`)).toEqual({ b: Buffer.from([0xaa, 0xbb]).toString('base64'), text: 'aGk=' });
  });

  it('NULL -> null, of any type', async () => {
    expect(await single(`select NULL as n, NULL::TIMESTAMPTZ as t, NULL::STRUCT(a INT) as s, NULL::INT[] as l`)).toEqual({
      n: null,
      t: null,
      s: null,
      l: null,
    });
  });

  it('doubles that JSON cannot hold -> strings', async () => {
    expect(await single(`select 'nan'::DOUBLE as nan, 'inf'::DOUBLE as inf, 0.25::DOUBLE as quarter`)).toEqual({ nan: 'NaN', inf: 'Infinity', quarter: 0.25 });
  });

  it('keeps column order and names as DuckDB returns them', async () => {
    const result = await query(`select 2 as "B", 1 as a, 'x' as "with space"`);
    expect(result.columns).toEqual([
      { name: 'B', duckDbType: 'INTEGER' },
      { name: 'a', duckDbType: 'INTEGER' },
      { name: 'with space', duckDbType: 'VARCHAR' },
    ]);
    expect(Object.keys(result.rows[0]!)).toEqual(['B', 'a', 'with space']);
  });

  it('refuses two result columns of the same name rather than dropping one', async () => {
    await expect(query(`select 1 as id, 2 as id`)).rejects.toThrow(/two columns named "id"/);
  });
});

describe('loading tables', () => {
  const column = (name: string, type: SqlType) => ({ name, type });

  it('loads every SqlType and reads it back', async () => {
    const schema: TableSchema = {
      name: 'typed',
      columns: [
        column('s', { kind: 'string' }),
        column('i', { kind: 'int64' }),
        column('f', { kind: 'float64' }),
        column('n', { kind: 'numeric' }),
        column('b', { kind: 'bool' }),
        column('bytes', { kind: 'bytes' }),
        column('ts', { kind: 'timestamp' }),
        column('dt', { kind: 'datetime' }),
        column('d', { kind: 'date' }),
        column('t', { kind: 'time' }),
        column('j', { kind: 'json' }),
        column('u', { kind: 'unknown' }),
        column('arr', { kind: 'array', element: { kind: 'int64' } }),
        column('rec', { kind: 'struct', fields: [{ name: 'k', type: { kind: 'string' } }] }),
      ],
    };
    const row = {
      s: 'text',
      i: 42,
      f: 1.25,
      n: '12.5',
      b: true,
      bytes: 'AAE=',
      ts: 1_704_067_200_123_456,
      dt: '2024-01-01T10:00:00.5',
      d: '2024-01-02',
      t: '10:11:12',
      j: { x: [1] },
      u: null,
      arr: [1, 2],
      rec: { k: 'v' },
    };
    const result = await query('select * from typed', [{ schema, rows: [row, {}] }]);
    expect(result.columns.map((c) => c.duckDbType)).toEqual([
      'VARCHAR',
      'BIGINT',
      'DOUBLE',
      'DECIMAL(38,9)',
      'BOOLEAN',
      'BLOB',
      'TIMESTAMP WITH TIME ZONE',
      'TIMESTAMP',
      'DATE',
      'TIME',
      'JSON',
      // DuckDB's client API reports a column of its "NULL" type as INTEGER.
      'INTEGER',
      'BIGINT[]',
      'STRUCT("k" VARCHAR)',
    ]);
    expect(result.rows[0]).toEqual({ ...row, n: 12.5, dt: '2024-01-01T10:00:00.500000', rec: [{ k: 'v' }] });
    expect(Object.values(result.rows[1]!).every((value) => value === null)).toBe(true);
  });

  it('compares and casts a column of unknown type implicitly, as BigQuery does a NULL', async () => {
    const schema = inferTableSchema('t', [{ name: 'metadata', type: 'inferred' }], [{ metadata: [{ status: null }] }]);
    const row = await single(
      `select m.status >= 500 as ge, m.status = 'a' as eq, m.status like 'a%' as matches, coalesce(m.status, 7) as fallback from t, unnest(metadata) as u(m)`,
      [{ schema, rows: [{ metadata: [{ status: null }] }] }],
    );
    expect(row).toEqual({ ge: null, eq: null, matches: null, fallback: 7 });
  });

  it('loads inferred fallbacks: conflicting scalars as text, mixed shapes as json, awkward keys as they are', async () => {
    const rows = [{ metadata: [{ status: 200, 'odd "key".x': 'a', mixed: [{ a: 1 }] }] }, { metadata: [{ status: '404', mixed: 'plain' }] }];
    const schema = inferTableSchema('t', [{ name: 'metadata', type: 'inferred' }], rows);
    const result = await query(`select m.status, m."odd ""key"".x" as odd, m.mixed from t, unnest(metadata) as u(m)`, [{ schema, rows }]);
    expect(result.rows).toEqual([
      { status: '200', odd: 'a', mixed: [{ a: 1 }] },
      { status: '404', odd: null, mixed: 'plain' },
    ]);
  });

  it('refuses a value that does not fit its declared column, naming table, row and column', async () => {
    const schema: TableSchema = { name: 'counts', columns: [{ name: 'n', type: { kind: 'int64' } }] };
    await expect(query('select * from counts', [{ schema, rows: [{ n: 1 }, { n: 'many' }] }])).rejects.toThrow(
      /table counts, row 1, column n: expected an integer, got "many"/,
    );
    expect(await single('select 1 as still_working')).toEqual({ still_working: 1 });
  });

  it('round-trips every Logflare sample: metadata comes back as it went in, and struct access and unnest work', async () => {
    for (const file of readdirSync(samplesDirectory)) {
      const event = JSON.parse(readFileSync(path.join(samplesDirectory, file), 'utf8')) as { event_message: string; metadata: unknown };
      const rows = [{ id: file, timestamp: 1_704_067_200_000_000, event_message: event.event_message, metadata: metadataRows(event.metadata) }];
      const schema = inferTableSchema(
        'logs',
        [
          { name: 'id', type: { kind: 'string' } },
          { name: 'timestamp', type: { kind: 'timestamp' } },
          { name: 'event_message', type: { kind: 'string' } },
          { name: 'metadata', type: 'inferred' },
        ],
        rows,
      );
      const result = await query('select * from logs', [{ schema, rows }]);
      expect(result.rows, file).toEqual(rows);
    }
    const edge = JSON.parse(readFileSync(path.join(samplesDirectory, 'cloudflare.logs.prod.json'), 'utf8')) as {
      metadata: { request: { method: string; path?: string; cf: { country: string } } };
    };
    const rows = [{ metadata: metadataRows(edge.metadata) }];
    const schema = inferTableSchema('edge_logs', [{ name: 'metadata', type: 'inferred' }], rows);
    const row = await single(
      `select request.method, request.cf[1].country as country, metadata[1].request[1].cf[1].country as by_index
       from edge_logs cross join lateral (select unnest(metadata) as m) u cross join lateral (select unnest(u.m.request) as request) r`,
      [{ schema, rows }],
    );
    expect(row).toEqual({ method: edge.metadata.request.method, country: edge.metadata.request.cf.country, by_index: edge.metadata.request.cf.country });
  });

  it('keeps a table name that is not an identifier', async () => {
    const schema: TableSchema = { name: 'my "odd" table', columns: [{ name: 'x', type: { kind: 'int64' } }] };
    expect(await single('select x from "my ""odd"" table"', [{ schema, rows: [{ x: 3 }] }])).toEqual({ x: 3 });
  });
});

describe('errors', () => {
  it('a query DuckDB cannot bind -> InvalidQuery without the excerpt of the translated SQL', async () => {
    const error = await query('select missing_column from range(3)').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(InvalidQuery);
    expect((error as Error).message).toMatch(/Referenced column "missing_column" not found/);
    expect((error as Error).message).not.toMatch(/LINE 1/);
  });

  it('memory limit exceeded -> QueryTooExpensive', async () => {
    await expect(query(`select count(distinct i::varchar || 'abcdefghijklmnopqrstuvwxyz') as c from range(60000000) t(i)`, [], 60_000)).rejects.toThrow(
      QueryTooExpensive,
    );
    expect(await single('select 1 as still_working')).toEqual({ still_working: 1 });
  });
});

describe('bounded results', () => {
  const rowsSent = async () => (await sandboxEngineResultRowsTotal.get()).values[0]?.value ?? 0;

  it('reads no more than maxRows rows: the first ones, marked truncated', async () => {
    const before = await rowsSent();
    const result = await engine.run({ tables: [], sql: 'select range as x from range(3000000) order by x', timeoutMs: 30_000, maxRows: 1000 });
    expect(result.rows).toHaveLength(1000);
    expect(result.rows[999]).toEqual({ x: 999 });
    expect(result.truncated).toBe(true);
    expect(await rowsSent()).toBe(before + 1000);
  });

  it('a result of exactly maxRows rows is whole, not truncated', async () => {
    const result = await engine.run({ tables: [], sql: 'select range as x from range(5)', timeoutMs: 10_000, maxRows: 5 });
    expect(result.rows).toHaveLength(5);
    expect(result.truncated).toBe(false);
  });

  it('a result within both caps arrives whole and in order', async () => {
    const before = await rowsSent();
    const result = await query(`select range as x, repeat('v', 50) as s from range(100000) order by x`);
    expect(result.rows).toHaveLength(100_000);
    expect(result.rows.every((row, index) => row.x === index)).toBe(true);
    expect(result.truncated).toBe(false);
    expect(await rowsSent()).toBe(before + 100_000);
  });

  it('a result over the byte cap fails with QueryTooExpensive naming SANDBOX_MAX_RESULT_BYTES, and the next query works', async () => {
    const error = await query(`select repeat('x', 1000000) as s from range(300)`).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(QueryTooExpensive);
    expect((error as Error).message).toMatch(/larger than 16777216 bytes \(SANDBOX_MAX_RESULT_BYTES\)/);
    expect(await single('select 1 as still_working')).toEqual({ still_working: 1 });
  });

  it("a value the translation's size guard refuses fails with QueryTooExpensive in the guard's words, and the next query works", async () => {
    const error = await query(`select (CASE ${stringGuard('REPEAT', '2000', 1000)} ELSE 'x' END) as s`).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(QueryTooExpensive);
    expect((error as Error).message).toMatch(
      /^REPEAT would build a string of more than 1000 bytes, the most a result may hold \(SANDBOX_MAX_RESULT_BYTES\); use shorter/,
    );
    expect(await single('select 1 as still_working')).toEqual({ still_working: 1 });
  });
});

describe('time limits and crashes', () => {
  const long = `select sum(a.range * b.range) as s from range(100000) a, range(100000) b`;

  it('interrupts a query at its timeout with QueryTimeout, its process survives, and the next query works', async () => {
    const processes = engine.idleProcessIds;
    await expect(query(long, [], 500)).rejects.toThrow(QueryTimeout);
    // stopped by DuckDB's interrupt, not by killing the process after the grace period
    expect(engine.idleProcessIds).toEqual(processes);
    expect(await single('select 1 as still_working')).toEqual({ still_working: 1 });
  });

  it.each(['SIGKILL', 'SIGABRT'] as const)(
    'a process ended by %s mid-query fails that request with StoreUnavailable, and the next query works',
    async (signal) => {
      const [pid] = engine.idleProcessIds;
      const running = query(long, [], 30_000);
      setTimeout(() => process.kill(pid!, signal), 300);
      const error = await running.catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(StoreUnavailable);
      expect((error as Error).message).toMatch(new RegExp(`query engine stopped while running this query \\(${signal}\\)`));
      expect(await single('select 1 as still_working')).toEqual({ still_working: 1 });
      expect(engine.idleProcessIds).not.toContain(pid);
    },
  );

  it('keeps the event loop free while a query runs: timers fire before the query ends', async () => {
    const events: string[] = [];
    let ticks = 0;
    const ticker = setInterval(() => {
      ticks += 1;
      if (ticks === 5) events.push('five timer ticks');
    }, 10);
    try {
      // ends only at its time limit; a query run on this thread would hold every tick until it stopped
      await query(long, [], 1_500).catch((error: unknown) => events.push(error instanceof QueryTimeout ? 'query stopped' : String(error)));
    } finally {
      clearInterval(ticker);
    }
    expect(events).toEqual(['five timer ticks', 'query stopped']);
  });
});

describe('measurements (printed, not asserted)', () => {
  it('start, load of 100,000 edge-like rows, group-by', async () => {
    const rows = Array.from({ length: 100_000 }, (_, index) => ({
      id: `id-${index}`,
      timestamp: 1_704_067_200_000_000 + index * 1_000,
      event_message: `GET | ${[200, 404, 500][index % 3]} | 203.0.113.${index % 250} | https://default.supabase.co/rest/v1/table_${index % 50}`,
      metadata: [
        {
          request: [
            {
              method: 'GET',
              path: `/rest/v1/table_${index % 50}`,
              host: 'default.supabase.co',
              headers: [{ user_agent: 'Mozilla/5.0', x_real_ip: `203.0.113.${index % 250}` }],
              cf: [{ country: ['DE', 'US', 'FR'][index % 3], asn: 3209 }],
            },
          ],
          response: [{ status_code: [200, 404, 500][index % 3], origin_time: index % 97 }],
        },
      ],
    }));
    const inferStarted = performance.now();
    const schema = inferTableSchema(
      'edge_logs',
      [
        { name: 'id', type: { kind: 'string' } },
        { name: 'timestamp', type: { kind: 'timestamp' } },
        { name: 'event_message', type: { kind: 'string' } },
        { name: 'metadata', type: 'inferred' },
      ],
      rows,
    );
    const inferMs = performance.now() - inferStarted;
    const loadStarted = performance.now();
    const loaded = await engine.run({ tables: [{ schema, rows }], sql: 'select count(*) as n from edge_logs', timeoutMs: 120_000 });
    const loadMs = performance.now() - loadStarted;
    expect(loaded.rows).toEqual([{ n: 100_000 }]);
    const groupStarted = performance.now();
    const grouped = await engine.run({
      tables: [{ schema, rows }],
      sql: `select request.path, response.status_code, count(*) as requests from edge_logs
            cross join lateral (select unnest(metadata) as m) u
            cross join lateral (select unnest(u.m.request) as request) r
            cross join lateral (select unnest(u.m.response) as response) s
            group by all order by requests desc, request.path limit 5`,
      timeoutMs: 120_000,
    });
    const groupMs = performance.now() - groupStarted;
    expect(grouped.rows).toHaveLength(5);
    console.log(
      `engine start ${startMs.toFixed(0)} ms; infer 100k rows ${inferMs.toFixed(0)} ms; ` +
        `load 100k rows + count ${loadMs.toFixed(0)} ms; load 100k rows + group-by ${groupMs.toFixed(0)} ms`,
    );
  });
});
