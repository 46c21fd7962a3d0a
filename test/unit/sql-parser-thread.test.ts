import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SandboxViolation, SqlSyntax, UnknownTable } from '../../src/errors.ts';
import { initSqlParser, parseSandboxQuery } from '../../src/sql/index.ts';
import { SqlParserThread } from '../../src/sql/parser-pool.ts';

const options = { allowedTables: ['edge_logs', 'postgres_logs'], parameterNames: ['project'] };

async function refusal(promise: Promise<unknown>): Promise<Error & { code?: string; position?: unknown }> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a refusal');
}

describe('SQL parsed in a worker thread', () => {
  const thread = new SqlParserThread(20_000);

  beforeAll(async () => {
    await initSqlParser();
  });

  afterAll(async () => {
    await thread.close();
  });

  it('gives the same tree as parsing on the loop', async () => {
    const sql =
      "select timestamp_trunc(t.timestamp, minute) as ts, count(*) as n from edge_logs t cross join unnest(metadata) as m where t.event_message like '%x%' and @project is not null group by ts order by ts";
    expect(await thread.parse(sql, options)).toEqual(parseSandboxQuery(sql, options));
  });

  it('rebuilds refusals as the same domain errors, code and position included', async () => {
    const syntax = await refusal(thread.parse('select from where', options));
    expect(syntax).toBeInstanceOf(SqlSyntax);
    expect(syntax.code).toBe('sql_syntax');
    expect(syntax.position).toEqual(expect.objectContaining({ line: 1 }));
    const unknown = await refusal(thread.parse('select 1 from secrets', options));
    expect(unknown).toBeInstanceOf(UnknownTable);
    expect(unknown.message).toMatch(/unknown table "secrets"; this endpoint's tables are: edge_logs, postgres_logs/);
    const oversize = await refusal(thread.parse(`select '${'x'.repeat(70_000)}'`, options));
    expect(oversize).toBeInstanceOf(SandboxViolation);
    expect(oversize.message).toMatch(/more than 65536 \(limit maxQueryBytes\)/);
  });

  it('refuses a parse that runs past its timeout, replaces the thread and keeps answering', async () => {
    const impatient = new SqlParserThread(150);
    try {
      await impatient.parse('select 1 from edge_logs', options).catch(() => undefined);
      let list = 'select id from edge_logs where id in (';
      while (list.length < 64_000) list += "'aaaa',";
      const slow = await refusal(impatient.parse(`${list}'b')`, options));
      expect(slow).toBeInstanceOf(SandboxViolation);
      expect(slow.message).toMatch(/took more than 150 ms to parse/);
      expect(await impatient.parse('select 1 as one from edge_logs', options)).toEqual(parseSandboxQuery('select 1 as one from edge_logs', options));
    } finally {
      await impatient.close();
    }
  });

  it('ends an idle thread and starts a new one for the next parse', async () => {
    const idle = new SqlParserThread(20_000, 200);
    try {
      expect(idle.running).toBe(false);
      const sql = 'select id from edge_logs limit 1';
      expect(await idle.parse(sql, options)).toEqual(parseSandboxQuery(sql, options));
      expect(idle.running).toBe(true);
      await vi.waitFor(() => expect(idle.running).toBe(false), { timeout: 10_000, interval: 50 });
      expect(await idle.parse(sql, options)).toEqual(parseSandboxQuery(sql, options));
      expect(idle.running).toBe(true);
    } finally {
      await idle.close();
    }
  });
});
