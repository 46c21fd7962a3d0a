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
});
