import { describe, expect, it } from 'vitest';
import { luceneRegexpForContains } from '../../src/planner/regex.ts';
import { BadParameter } from '../../src/errors.ts';

describe('luceneRegexpForContains', () => {
  it.each([
    ['abc', '.*abc.*'],
    ['abc.def', '.*abc[^\\\n\\\r\\\u2028-\\\u2029]def.*'],
    ['^https://', 'https\\:\\/\\/.*'],
    ['/rest$', '.*\\/rest'],
    ['^a$', 'a'],
    ['a|^b', '(.*a.*)|(b.*)'],
    ['\\d{2,3}', '.*[0-9]{2,3}.*'],
    ['x+?y*?z??', '.*x+y*z?.*'],
    ['(?:ab)+', '.*(ab)+.*'],
    ['(?<ref>ab)', '.*(ab).*'],
    ['[^a-c]', '.*[^a-c].*'],
    ['[\\d-z]', '.*[0-9\\-z].*'],
    ['[\\Da]', '.*(a|[^0-9]).*'],
    ['a{', '.*a\\{.*'],
    ['@#~<>&"', '.*\\@\\#\\~\\<\\>\\&\\".*'],
    // an optional run at an unanchored end adds nothing to the .* it gets
    ['.*abc.*', '.*abc.*'],
    ['[^]*a|b*', '(.*a.*)|(.*)'],
    ['.*', '.*'],
    ['x*', '.*'],
    ['^.*x', '[^\\\n\\\r\\\u2028-\\\u2029]*x.*'],
    ['x.*$', '.*x[^\\\n\\\r\\\u2028-\\\u2029]*'],
    ['^$', ''],
  ])('%j -> %j', (pattern, lucene) => {
    expect(luceneRegexpForContains(pattern, 'project')).toBe(lucene);
  });

  it.each([
    ['a(?=b)', /lookahead/],
    ['(?<!a)b', /lookbehind/],
    ['(a)\\1', /backreference/],
    ['\\bword', /word boundary/],
    ['(?i)abc', /inline flags/],
    ['\\p{L}', /Unicode property/],
    ['(^a)', /anchor/],
    ['a^b', /anchor/],
    ['\\k<x>', /named backreference/],
    ['a{2000}', /repeat count/],
    ['[]', /empty class/],
    ['[^\\D]', /negated shorthand/],
  ])('rejects %j naming the construct', (pattern, message) => {
    expect(() => luceneRegexpForContains(pattern, 'project')).toThrow(message);
    expect(() => luceneRegexpForContains(pattern, 'project')).toThrow(BadParameter);
  });

  it.each(['(ab', 'ab)', '*a', '[a', 'a{3,1}', 'a\\', '[z-a]'])('rejects the invalid pattern %j', (pattern) => {
    expect(() => luceneRegexpForContains(pattern, 'project')).toThrow(BadParameter);
  });

  it('refuses oversize, deeply nested and over-expanding patterns as pattern_too_complex before parsing them', () => {
    const cases: Array<[string, RegExp]> = [
      [`${'('.repeat(3000)}a${')'.repeat(3000)}`, /6001 characters long, more than 1000/],
      ['x'.repeat(1024 * 1024), /1048576 characters long/],
      [`${'('.repeat(33)}a${')'.repeat(33)}`, /nests groups more than 32 deep/],
      ['(a{1000}){1000}', /expands to about 1000000 characters/],
      ['((a|b){100}){200}', /expands to about 40000 characters/],
    ];
    for (const [pattern, message] of cases) {
      let thrown: unknown;
      try {
        luceneRegexpForContains(pattern, 'project');
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(BadParameter);
      expect((thrown as BadParameter).code).toBe('pattern_too_complex');
      expect((thrown as BadParameter).message).toMatch(message);
      expect((thrown as BadParameter).message).toMatch(/^project: /);
    }
  });

  it('accepts patterns at the bounds', () => {
    expect(luceneRegexpForContains(`${'('.repeat(32)}a${')'.repeat(32)}`, 'project')).toContain('a');
    expect(luceneRegexpForContains('a'.repeat(996), 'project')).toHaveLength(1000);
    expect(() => luceneRegexpForContains('a'.repeat(997), 'project')).toThrow(/becomes 1001 characters in the store's syntax/);
    expect(luceneRegexpForContains('[a-z]{1000}x{1000,}', 'project')).toContain('{1000}');
  });
});
