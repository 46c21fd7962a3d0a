import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logsAll } from '../../queries/logs-all.ts';
import { createElasticsearchClient } from '../../shared/elasticsearch.ts';
import { ensureEventIndex } from '../../shared/event-index.ts';
import { legacyIndexName } from '../../shared/partitions.ts';
import { encodeAnswer } from '../../src/endpoints/answer-body.ts';
import { search } from '../../src/executor/elasticsearch.ts';
import { logHitRows } from '../../src/executor/log-hits.ts';
import { plainSearch } from '../../src/executor/plain-search.ts';
import { columnRows } from '../../src/executor/rows/logs.ts';
import { planEndpointQuery } from '../../src/planner/index.ts';
import { testConfig, uniqueName } from '../support/stack.ts';

const client = createElasticsearchClient({ url: testConfig().ELASTICSEARCH_URL! });
const prefix = `${uniqueName('logstext')}-`;
const index = legacyIndexName(prefix, 'edge_logs');

/** Stored events hostile to a text walk, as the ingest worker would store them (Elasticsearch writes their text back). */
const EVENTS: Array<Record<string, unknown>> = [
  { id: 'plain', event_message: 'GET /x', metadata: { request: { method: 'GET', headers: { ip: '203.0.113.7' } }, response: { status_code: 200 } } },
  { id: 'escapes', event_message: 'quote " backslash \\ slash / tab \t nl \n \u001f é 𝄞 \u2028', metadata: [{ q: '"\\', list: ['1', 'two', null, 'true'] }] },
  {
    id: 'pii',
    event_message: 'from 10.0.0.1 to [2001:db8::1]:443 via http%3A%2F%2F192%2E168%2E1%2E1 me@example.com',
    metadata: { '198.51.100.2': 'a', REDACTED: 'b' },
  },
  { id: 'numbers', event_message: 'n', metadata: { n1: 1.5, n2: 1e21, n3: -0.0001, n4: 12345678901234567000, n5: 0 } },
  { id: 'nested', event_message: 'deep', metadata: { deep: { b: { c: [{ d: [1, [2], 3] }, { s: 's' }] } }, '7': 'index key' } },
  { id: 'huge', event_message: '1.2.3.4 '.repeat(2000), metadata: { big: 'a:'.repeat(5000) } },
  { id: 'set-aside', event_message: 'x', metadata: { aside: { b: 1 } }, metadata_unindexed: [{ path: ['aside', 'c'], value: 'long 10.9.9.9' }] },
];

beforeAll(async () => {
  await ensureEventIndex(client, index, 0);
  const operations = EVENTS.flatMap((event, i) => [
    { index: { _index: index, _id: `${event.id}` } },
    { project: 'p', timestamp: `2024-01-01T00:00:0${i}.123456789Z`, ...event },
  ]);
  const response = await client.bulk({ refresh: true, operations });
  expect(response.errors, JSON.stringify(response.items.filter((item) => item.index?.error))).toBe(false);
});

afterAll(async () => {
  await client.indices.delete({ index, ignore_unavailable: true });
  await client.close();
});

describe('logs.all rows from the store text, on real Elasticsearch', () => {
  it('answers byte for byte as the parsed rows do, redacted and not', async () => {
    const plan = planEndpointQuery(logsAll, { project: 'p' }, { now: Date.parse('2024-01-01T01:00:00Z'), projects: null, indexPrefix: prefix });
    const scan = plan.scans[0]!;
    if (scan.kind !== 'events') throw new Error('logs.all plans one event scan');
    const options = { elasticsearch: client, timeoutMs: 30_000 };
    const hits = (await search(scan.search, options)).hits?.hits ?? [];
    for (const redact of [false, true]) {
      // rows are written as each page is read, redacted then when asked
      const written = await logHitRows(scan, options, redact);
      expect(written).toHaveLength(EVENTS.length);
      const parsed = (await encodeAnswer(columnRows(hits, ['id', 'timestamp', 'event_message', 'metadata']), { redact })).toString();
      expect((await encodeAnswer(written!, { redact })).toString()).toBe(parsed);
    }
  });

  it("sends logs.all's search as a plain request, whose text is the client's", async () => {
    const plan = planEndpointQuery(logsAll, { project: 'p' }, { now: Date.parse('2024-01-01T01:00:00Z'), projects: null, indexPrefix: prefix });
    const scan = plan.scans[0]!;
    if (scan.kind !== 'events') throw new Error('logs.all plans one event scan');
    // as searchText sends it: a planner change that adds a parameter the plain request does not place would fall back to the client
    const sent = { ...scan.search, allow_partial_search_results: false };
    const plain = await plainSearch(client, sent, { requestTimeout: 30_000 });
    expect(plain?.statusCode).toBe(200);
    const byClient = await client.search(sent);
    expect(JSON.parse(plain!.text)).toEqual(byClient);
  });
});
