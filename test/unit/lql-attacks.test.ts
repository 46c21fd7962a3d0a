/**
 * Hostile LQL: every attack is refused with LqlSyntax or parses to a tree of plain data, quickly.
 * The accepted ones are pinned below so that a change in what the parser lets through is seen.
 */
import { describe, expect, it } from 'vitest';
import { LqlSyntax } from '../../src/errors.ts';
import { parseLql, printLql } from '../../src/lql/index.ts';
import type { LqlQuery } from '../../src/lql/syntax.ts';
import { LQL_ATTACKS } from '../fixtures/lql-attacks.ts';

/** Accepted by the parser: the planner refuses the paths and keeps the values as data. */
const ACCEPTED = new Set([
  'escaped quote closes nothing',
  'deep backslashes',
  'deep escaped quotes',
  'empty quoted value',
  'nested quantifier regex',
  'free-text regex bomb',
  'exponential alternation',
  'list regex bomb',
  'huge repetition count',
  'index name as a field',
  '_source under metadata',
  'unindexed metadata column',
  'ingest shape internals',
  '_id field',
  'prototype path',
  'constructor prototype path',
  'select of _source',
  'SQL quote break',
  'SQL in a bare word',
  'SQL union as free text',
  'Elasticsearch query JSON as a value',
  'Lucene syntax as free text',
  'painless script as a value',
  'NULL spelled lower case',
  '100 clauses',
  'cross-cluster path',
  'fullwidth colon',
  'look-alike quote characters',
  'right-to-left override in free text',
  'NUL byte in a value',
  'lone surrogate',
]);

/** Only strings, numbers, booleans, arrays and plain objects, with nothing inherited. */
function expectPlainData(value: unknown): void {
  if (value === null || ['string', 'number', 'boolean', 'undefined'].includes(typeof value)) return;
  if (Array.isArray(value)) {
    value.forEach(expectPlainData);
    return;
  }
  expect(typeof value).toBe('object');
  expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
  for (const key of Object.keys(value as object)) expectPlainData((value as Record<string, unknown>)[key]);
}

function outcome(lql: string): { tree?: LqlQuery; error?: unknown } {
  try {
    return { tree: parseLql(lql) };
  } catch (error) {
    return { error };
  }
}

describe('LQL attacks', () => {
  it('lists at least 40 attacks', () => {
    expect(LQL_ATTACKS.length).toBeGreaterThanOrEqual(40);
    expect(new Set(LQL_ATTACKS.map((a) => a.label)).size).toBe(LQL_ATTACKS.length);
    for (const label of ACCEPTED) expect(LQL_ATTACKS.some((a) => a.label === label)).toBe(true);
  });

  it.each(LQL_ATTACKS.map((a) => [a.label, a.lql] as const))('%s: refused or plain data', (label, lql) => {
    const { tree, error } = outcome(lql);
    if (ACCEPTED.has(label)) {
      expect(error).toBeUndefined();
      expectPlainData(tree);
      // printing and parsing again keeps the values as they were
      const again = parseLql(printLql(tree!));
      expect(again.filters.map((f) => ('value' in f ? f.value : undefined))).toEqual(tree!.filters.map((f) => ('value' in f ? f.value : undefined)));
    } else {
      expect(error).toBeInstanceOf(LqlSyntax);
    }
  });

  it('keeps an injected quote inside one value', () => {
    expect(parseLql('m.status:"ok\\" m.level:\\"error"').filters).toEqual([
      {
        kind: 'comparison',
        path: 'metadata.status',
        negated: false,
        offset: 1,
        operator: '=',
        value: { kind: 'string', value: 'ok" m.level:"error', quoted: true },
      },
    ]);
  });

  it('names the limits it enforces', () => {
    expect(() => parseLql(Array.from({ length: 101 }, () => 'a').join(' '))).toThrow(/at most 100/);
    expect(() => parseLql('a'.repeat(16 * 1024 + 1))).toThrow(/16 KiB/);
    expect(() => parseLql(`"${'é'.repeat(8192)}"`)).toThrow(/16 KiB/);
    expect(() => parseLql('t:last@2hourz')).toThrow('unknown unit hourz; use minutes, hours, days, weeks, months');
  });

  it('reports the offset of what is wrong and what was expected there', () => {
    expect(() => parseLql('a m.field:>>100')).toThrow(/expected a value after :>, found ">" \(at character 12\)/);
    expect(() => parseLql('ok "unclosed')).toThrow(/closing " .*\(at character 4\)/);
    expect(() => parseLql('s:')).toThrow(/expected a field path or \* after s: \(at character 3\)/);
    expect(() => parseLql('c:count(*) c:avg(m.x)')).toThrow(/at most one chart aggregate \(at character 12\)/);
    expect(() => parseLql('-s:x')).toThrow(LqlSyntax);
  });

  it('parses hostile inputs from a generator: a syntax error or a tree', () => {
    const pieces = ['"', '\\', '\\"', ':', '..', '{', '}', '~', '-', 'a', ' ', '@', '(', ')', 'm.', 't:', 'c:', 's:', 'NULL', '1'];
    let seed = 7;
    for (let run = 0; run < 200; run += 1) {
      let text = '';
      while (text.length < 16_000) {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        text += pieces[seed % pieces.length];
      }
      const { error } = outcome(text);
      if (error !== undefined) expect(error).toBeInstanceOf(LqlSyntax);
    }
  });
});
