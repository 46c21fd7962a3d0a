import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { errors, type estypes } from '@elastic/elasticsearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createElasticsearchClient } from '../../shared/elasticsearch.ts';
import { QueryTimeout, StoreUnavailable } from '../../src/errors.ts';
import { search, searchText, storeError } from '../../src/executor/elasticsearch.ts';
import { plainSearch } from '../../src/executor/plain-search.ts';

/** What a node received: the request line, its headers and body. */
interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * A stand-in node on loopback (the behaviour of the network, not of Elasticsearch, is under test):
 * each request is recorded and answered as `answer` says, by its path.
 */
async function node(answer: (received: Received, response: http.ServerResponse) => void): Promise<{ url: string; received: Received[]; close(): void }> {
  const received: Received[] = [];
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', () => {
      const one = { method: request.method!, url: request.url!, headers: request.headers, body };
      received.push(one);
      answer(one, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

const REQUEST: estypes.SearchRequest = {
  index: ['logs-edge_logs-*', 'logs-edge_logs', '-logs-edge_logs-2024.01.02'],
  ignore_unavailable: true,
  allow_no_indices: true,
  filter_path: ['hits.hits._id', 'hits.hits._source', 'error'],
  size: 100,
  track_total_hits: false,
  query: { bool: { filter: [{ term: { project: 'p é' } }] } },
  sort: [{ timestamp: { order: 'desc' } }, { id: { order: 'desc' } }],
  _source: ['id', 'timestamp'],
};

const ANSWER = '{"hits":{"hits":[{"_id":"a","_source":{"id":"a","timestamp":"2024-01-01T00:00:00Z"}}]}}';
/** The client checks that a node it answers from says it is Elasticsearch. */
const ELASTICSEARCH = { 'content-type': 'application/json', 'x-elastic-product': 'Elasticsearch' };
const answered = (_: Received, response: http.ServerResponse) => response.writeHead(200, ELASTICSEARCH).end(ANSWER);

describe('a search as a plain request on the client connection', () => {
  let store: Awaited<ReturnType<typeof node>>;

  beforeAll(async () => {
    store = await node(answered);
  });

  afterAll(() => store.close());

  it('sends the path, query string, body and credentials the client sends, under the node URL path', async () => {
    for (const base of ['', '/es']) {
      const client = createElasticsearchClient({ url: `${store.url}${base}`, credentials: { username: 'u', password: 'p w' } });
      store.received.length = 0;
      await client.search(REQUEST);
      const answer = await plainSearch(client, REQUEST, { requestTimeout: 5000 });
      await client.close();
      expect(answer).toEqual({ statusCode: 200, text: ANSWER });
      const [byClient, plain] = store.received;
      expect(plain!.method).toBe(byClient!.method);
      expect(plain!.url).toBe(byClient!.url);
      expect(plain!.url.startsWith(`${base}/`)).toBe(true);
      expect(plain!.headers.authorization).toBe(byClient!.headers.authorization);
      expect(JSON.parse(plain!.body)).toEqual(JSON.parse(byClient!.body));
    }
  });

  it('leaves to the client a request holding a parameter it does not place', async () => {
    const client = createElasticsearchClient({ url: store.url });
    expect(await plainSearch(client, { ...REQUEST, request_cache: true }, { requestTimeout: 5000 })).toBeUndefined();
    expect(await plainSearch(client, { ...REQUEST, index: undefined }, { requestTimeout: 5000 })).toBeUndefined();
    await client.close();
  });

  it('answers the store text through searchText, and a refusal as the client reports it', async () => {
    const refusing = await node((_, response) => {
      response.writeHead(400, ELASTICSEARCH);
      response.end(JSON.stringify({ error: { type: 'parsing_exception', reason: 'unknown query [nope]' }, status: 400 }));
    });
    const client = createElasticsearchClient({ url: refusing.url });
    const error = await searchText(REQUEST, { elasticsearch: client, timeoutMs: 5000 }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'invalid_query', message: 'the log store refused the query: unknown query [nope]; change the query' });
    // one request, the plain one: a refusal is not asked again
    expect(refusing.received).toHaveLength(1);
    await client.close();
    refusing.close();
    const ok = createElasticsearchClient({ url: store.url });
    expect(await searchText(REQUEST, { elasticsearch: ok, timeoutMs: 5000 })).toBe(ANSWER);
    await ok.close();
  });

  it('answers search with the plain answer parsed, and a refusal as the client reports it, each in one request', async () => {
    const client = createElasticsearchClient({ url: store.url });
    store.received.length = 0;
    expect(await search(REQUEST, { elasticsearch: client, timeoutMs: 5000 })).toEqual(JSON.parse(ANSWER));
    expect(store.received).toHaveLength(1);
    await client.close();
    const refusing = await node((_, response) => {
      response.writeHead(400, ELASTICSEARCH);
      response.end(JSON.stringify({ error: { type: 'parsing_exception', reason: 'unknown query [nope]' }, status: 400 }));
    });
    const refused = createElasticsearchClient({ url: refusing.url });
    const error = await search(REQUEST, { elasticsearch: refused, timeoutMs: 5000 }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'invalid_query', message: 'the log store refused the query: unknown query [nope]; change the query' });
    expect(refusing.received).toHaveLength(1);
    await refused.close();
    refusing.close();
  });

  it('leaves to the client a search answered with what is not JSON, and one answered 502', async () => {
    let turn = 0;
    const odd = await node((_, response) => {
      turn += 1;
      if (turn <= 2) response.writeHead(200, { ...ELASTICSEARCH, 'content-type': 'text/plain' }).end('not json');
      else if (turn === 3) response.writeHead(502, { 'content-type': 'text/plain' }).end('bad gateway');
      else response.writeHead(200, ELASTICSEARCH).end(ANSWER);
    });
    const client = createElasticsearchClient({ url: odd.url });
    // asked again through the client, which reads a text answer as its text
    expect(await search(REQUEST, { elasticsearch: client, timeoutMs: 5000 })).toBe('not json');
    // the 502 asked again through the client, which the store then answers
    expect(await search(REQUEST, { elasticsearch: client, timeoutMs: 5000 })).toEqual(JSON.parse(ANSWER));
    expect(odd.received).toHaveLength(4);
    await client.close();
    odd.close();
  });

  it('times out as the client does: a store that never answers is a query timeout', async () => {
    const silent = await node(() => undefined);
    const client = createElasticsearchClient({ url: silent.url });
    const error = await plainSearch(client, REQUEST, { requestTimeout: 100 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(errors.TimeoutError);
    expect(storeError(error, 100)).toBeInstanceOf(QueryTimeout);
    await client.close();
    silent.close();
  });

  it('reports an abort as the client does', async () => {
    const silent = await node(() => undefined);
    const client = createElasticsearchClient({ url: silent.url });
    const controller = new AbortController();
    const pending = plainSearch(client, REQUEST, { requestTimeout: 5000, signal: controller.signal }).catch((caught: unknown) => caught);
    setTimeout(() => controller.abort(), 20);
    expect(await pending).toBeInstanceOf(errors.RequestAbortedError);
    await client.close();
    silent.close();
  });

  it('an answer cut short is a connection failure: the store is unavailable', async () => {
    const cut = await node((_, response) => {
      response.writeHead(200, { ...ELASTICSEARCH, 'content-length': '1000' });
      response.write('{"hits":{"hits":[');
      setTimeout(() => response.socket?.destroy(), 20);
    });
    const client = createElasticsearchClient({ url: cut.url });
    const error = await searchText(REQUEST, { elasticsearch: client, timeoutMs: 5000 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StoreUnavailable);
    await client.close();
    cut.close();
  });

  it('a node that refuses the connection leaves the search to the client, which asks the next node', async () => {
    const client = createElasticsearchClient({ url: `http://127.0.0.1:1,${store.url}` });
    store.received.length = 0;
    // the pool's turn may fall on either node first: both orders answer
    for (let turn = 0; turn < 4; turn += 1) expect(await searchText(REQUEST, { elasticsearch: client, timeoutMs: 5000 })).toBe(ANSWER);
    expect(store.received.length).toBeGreaterThanOrEqual(4);
    await client.close();
  });
});
