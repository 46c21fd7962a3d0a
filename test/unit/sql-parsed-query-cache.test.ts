import { afterAll, describe, expect, it } from 'vitest';
import { SqlSyntax } from '../../src/errors.ts';
import type { SandboxQueryOptions } from '../../src/sql/index.ts';
import { ParsedQueryCache } from '../../src/sql/parsed-query-cache.ts';
import { SqlParserThread } from '../../src/sql/parser-pool.ts';

const options = { allowedTables: ['edge_logs', 'postgres_logs'], parameterNames: ['project'] };
const SQL = "select t.timestamp, t.event_message from edge_logs t where t.event_message like '%x%' and @project is not null limit 10";

describe('parsed sandboxed SQL kept by text', () => {
  const thread = new SqlParserThread(20_000);
  const parses: string[] = [];
  const counting = (text: string, given: SandboxQueryOptions) => {
    parses.push(text);
    return thread.parse(text, given);
  };

  afterAll(async () => {
    await thread.close();
  });

  it('parses a text once, and shares one frozen tree: no caller can change what another gets', async () => {
    const cache = new ParsedQueryCache(counting);
    parses.length = 0;
    const first = await cache.get(SQL, options);
    const second = await cache.get(SQL, options);
    expect(parses).toHaveLength(1);
    expect(second).toBe(first);
    expect(() => {
      (second as unknown as Record<string, unknown>).tampered = true;
    }).toThrow(TypeError);
    const select = second.body as { where?: { kind: string } };
    expect(() => {
      select.where!.kind = 'null';
    }).toThrow(TypeError);
    expect(() => second.orderBy.push(second.orderBy[0]!)).toThrow(TypeError);
    // other options are another query: the tables or parameters allowed change what is valid
    await cache.get(SQL, { ...options, parameterNames: ['project', 'day'] });
    expect(parses).toHaveLength(2);
  });

  it('keeps no refusal: a text refused once is refused again by the parser', async () => {
    const cache = new ParsedQueryCache(counting);
    parses.length = 0;
    await expect(cache.get('select from where', options)).rejects.toBeInstanceOf(SqlSyntax);
    await expect(cache.get('select from where', options)).rejects.toBeInstanceOf(SqlSyntax);
    expect(parses).toHaveLength(2);
    expect(cache.size).toBe(0);
  });

  it('forgets the least recently used text beyond its entry and size bounds', async () => {
    const cache = new ParsedQueryCache(counting, { maxEntries: 2, maxTextChars: 10_000 });
    const text = (n: number) => `select ${n} as n from edge_logs limit 1`;
    parses.length = 0;
    await cache.get(text(1), options);
    await cache.get(text(2), options);
    await cache.get(text(1), options);
    await cache.get(text(3), options);
    expect(cache.size).toBe(2);
    await cache.get(text(1), options);
    await cache.get(text(2), options);
    expect(parses).toEqual([text(1), text(2), text(3), text(2)]);

    const small = new ParsedQueryCache(counting, { maxEntries: 100, maxTextChars: text(1).length * 2 });
    for (const n of [1, 2, 3]) await small.get(text(n), options);
    expect(small.size).toBe(2);
  });
});
