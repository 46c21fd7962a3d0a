import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createElasticsearchClient } from '../../shared/elasticsearch.ts';
import { ensureEventIndex } from '../../shared/event-index.ts';
import { luceneRegexpForContains } from '../../src/planner/regex.ts';
import { DEFAULT_REGEX_LIMITS } from '../../src/planner/regex-budget.ts';
import { testConfig, uniqueName } from '../support/stack.ts';

/** URLs with the characters that differ between JavaScript and Lucene regular expressions. */
const URLS = [
  'https://abc.supabase.co/rest/v1/table',
  'https://abcxdef.supabase.co/rest/v1/t',
  'https://abc.def.supabase.co/storage/v1/object',
  'http://abc.supabase.co/auth/v1/token?grant_type=password',
  'https://ABC.supabase.co/rest/v1/',
  'https://xyz.supabase.co/realtime/v1/websocket?apikey=a&vsn=1.0.0',
  'https://xyz.supabase.co/rest/v1/rpc/f?select=*,a(b)#frag',
  'https://proj-123.supabase.co/rest/v1/items?id=eq.42',
  'https://proj_123.supabase.co/rest/v1/items?id=eq.7',
  'https://q.supabase.co/rest/v1/a b c',
  'https://q.supabase.co/p@th/~user/<x>/"quoted"',
  'https://q.supabase.co/functions/v1/hello\nworld',
  'https://q.supabase.co/ünïcode/é',
  'abc',
  '',
];

const PATTERNS = [
  'abc',
  'abc.def',
  'abc\\.def',
  '^https://abc',
  '^http://',
  'v1/$',
  '/rest/v1/table$',
  '^abc$',
  'ABC',
  '[Aa][Bb][Cc]',
  'proj-\\d+',
  'proj.\\d{3}\\.',
  '\\w+_\\d',
  '\\s',
  '\\S+\\s\\S',
  '[^a-z:/.]',
  'abc|xyz',
  '^(?:abc|xyz)\\.',
  '(rest|auth)/v1/(table|token)',
  '\\?select=\\*,a\\(b\\)#frag',
  'a&vsn=1\\.0',
  'p@th/~user/<x>/"quoted"',
  'hello.world',
  'hello\\sworld',
  'hello[^]world',
  '[\\Dx]{5}$',
  'eq\\.\\d{1,2}$',
  'eq\\.\\d{2,}',
  'x{0}abc',
  '(ab)*c',
  '(?<sub>abc)\\.supabase',
  'ünïcode/.$',
  '\\u00e9',
  '\\x41BC',
  '[.]',
  '-',
  '\\/storage\\/',
  'a{',
  '}',
  ']',
  '.*',
  '',
];

/** Deterministic patterns built from the supported grammar, so the comparison covers combinations no one wrote by hand. */
function generatedPatterns(count: number): string[] {
  let seed = 42;
  const random = (n: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed % n;
  };
  const atoms = ['a', 'b', 'c', '.', '\\.', '/', '-', '_', '\\d', '\\w', '\\s', '\\D', '[a-c]', '[^a-z]', '[.:/]', '\\?', '=', 'x', 'é'];
  const quantifiers = ['', '', '', '*', '+', '?', '{2}', '{1,3}', '{2,}', '*?', '+?'];
  const term = (depth: number): string => {
    const length = 1 + random(4);
    let text = '';
    for (let i = 0; i < length; i += 1) {
      // groups are not repeated without bound: nested unbounded repeats make the JavaScript oracle backtrack for ever
      if (depth < 2 && random(5) === 0) text += `(${random(2) === 0 ? '?:' : ''}${term(depth + 1)}|${term(depth + 1)})${random(2) === 0 ? '?' : ''}`;
      else text += atoms[random(atoms.length)]! + quantifiers[random(quantifiers.length)]!;
    }
    return text;
  };
  return Array.from({ length: count }, () => `${random(6) === 0 ? '^' : ''}${term(0)}${random(6) === 0 ? '$' : ''}`);
}

describe('project patterns in Elasticsearch match what JavaScript RegExp matches', () => {
  const config = testConfig();
  const elasticsearch = createElasticsearchClient({ url: config.ELASTICSEARCH_URL! });
  const index = uniqueName('regex-oracle');

  beforeAll(async () => {
    await ensureEventIndex(elasticsearch, index, 0);
    await elasticsearch.bulk({
      refresh: true,
      operations: URLS.flatMap((url, i) => [
        { index: { _index: index, _id: String(i) } },
        { id: String(i), timestamp: '2024-01-01T00:00:00.000000Z', event_message: '', project: 'p', metadata: { request: { url, path: '/' } } },
      ]),
    });
  });

  afterAll(async () => {
    await elasticsearch.indices.delete({ index });
    await elasticsearch.close();
  });

  it.each(PATTERNS.filter((pattern) => pattern !== ''))('%j', async (pattern) => {
    const expected = URLS.flatMap((url, i) => (new RegExp(pattern).test(url) ? [String(i)] : [])).sort();
    const response = await elasticsearch.search({
      index,
      size: 100,
      _source: false,
      query: {
        nested: {
          path: 'metadata.request',
          query: { regexp: { 'metadata.request.url': { value: luceneRegexpForContains(pattern, 'project'), flags: 'NONE' } } },
        },
      },
    });
    const actual = response.hits.hits.map((hit) => hit._id!).sort();
    expect(actual).toEqual(expected);
  });

  it('agrees on 300 generated patterns', async () => {
    for (const pattern of generatedPatterns(300)) {
      const expected = URLS.flatMap((url, i) => (new RegExp(pattern).test(url) ? [String(i)] : [])).sort();
      const response = await elasticsearch.search({
        index,
        size: 100,
        _source: false,
        query: {
          nested: {
            path: 'metadata.request',
            query: {
              regexp: {
                'metadata.request.url': {
                  value: luceneRegexpForContains(pattern, 'project'),
                  flags: 'NONE',
                  max_determinized_states: DEFAULT_REGEX_LIMITS.maxDeterminizedStates,
                },
              },
            },
          },
        },
      });
      expect(response.hits.hits.map((hit) => hit._id!).sort(), pattern).toEqual(expected);
    }
  });
});
