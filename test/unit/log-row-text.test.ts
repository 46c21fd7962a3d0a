import fc from 'fast-check';
import type { estypes } from '@elastic/elasticsearch';
import { describe, expect, it, vi } from 'vitest';
import { answerRowCount, encodeAnswer } from '../../src/endpoints/answer-body.ts';
import { hitSort, LogRowJson, writtenRows } from '../../src/executor/rows/log-row-text.ts';
import { columnRows } from '../../src/executor/rows/logs.ts';
import { loopTurnsDuring } from '../support/loop-turns.ts';

/** The answer the parsed path gives for a response text: JSON.parse, columnRows, redactPii, JSON.stringify. */
async function parsedAnswer(text: string, redact: boolean): Promise<string> {
  const hits = (JSON.parse(text) as estypes.SearchResponse<Record<string, unknown>>).hits?.hits ?? [];
  return (await encodeAnswer(columnRows(hits, ['id', 'timestamp', 'event_message', 'metadata']), { redact })).toString();
}

/** The answer of the rows writtenRows writes in one walk over the text as it is read. */
async function writtenAnswer(text: string, redact: boolean): Promise<string> {
  const page = await writtenRows(text, redact);
  expect(page, text).toBeDefined();
  return (await encodeAnswer(page!.rows, { redact })).toString();
}

async function expectSameBytes(text: string): Promise<void> {
  for (const redact of [false, true]) {
    const parsed = await parsedAnswer(text, redact);
    expect(await writtenAnswer(text, redact), `redact ${redact}: ${text}`).toBe(parsed);
  }
}

const response = (hits: string[]) => `{"hits":{"hits":[${hits.join(',')}]}}`;
const hit = (source: string, id = 'doc-1') => `{"_id":${JSON.stringify(id)},"_source":${source},"sort":[1704067200123,"${id}"]}`;
const TS = '"2024-01-01T00:00:00.123456789Z"';

/** Stored events in the text forms Elasticsearch may write, hostile to a text walk: escapes, PII, odd numbers, odd shapes. */
const CORPUS: string[] = [
  `{"id":"a","timestamp":${TS},"event_message":"plain","metadata":[{"request":[{"method":"GET","path":"/x"}]}]}`,
  `{"id":"b","timestamp":${TS},"event_message":"from 203.0.113.7 to [2001:db8::1]:443","metadata":{"request":{"headers":{"x-forwarded-for":"10.0.0.1, 198.51.100.2"}},"ip":"::ffff:192.0.2.1"}}`,
  `{"id":"c","timestamp":${TS},"event_message":"quote \\" backslash \\\\ slash \\/ tab \\t nl \\n \\u001F \\u00e9 \\uD834\\uDD1E \\ud800 lone","metadata":[]}`,
  `{"id":"d\\u002e1","timestamp":${TS},"event_message":"ip in escape 10\\u002e0\\u002e0\\u002e1 and url http%3A%2F%2F192%2E168%2E1%2E1","metadata":[{"n":1.0,"e":1E3,"neg":-0,"big":12345678901234567890,"small":1.5e-7,"inf":1e400,"t":true,"f":false,"z":null}]}`,
  `{"metadata":{"a":{"b":{"c":[{"d":[1,[2,{"e":"f"}],null]},"s",3]}}},"event_message":"metadata first","timestamp":${TS},"id":"e"}`,
  `{"id":"f","timestamp":${TS},"metadata":[1,"x",null,{"k":"v"},[{"k":2}],{"l":[]}]}`,
  `{"id":"g","timestamp":${TS},"event_message":42,"metadata":"scalar"}`,
  `{"id":"h","timestamp":${TS},"event_message":null,"metadata":null}`,
  `{"id":"i","timestamp":"2024-02-29T23:59:59Z"}`,
  `{"id":"j","timestamp":${TS},"event_message":"keys","metadata":{"10.0.0.1":"a","REDACTED":"b","10.0.0.2":"c","REDACTED_2":"d","k\\u0065y":"escaped key","__proto__":{"polluted":true}}}`,
  `{"id":"k","timestamp":${TS},"event_message":"array-index keys move first when parsed","metadata":{"b":1,"2":2,"a":3,"1":{"0":"x"}}}`,
  `{"id":"m","timestamp":${TS},"event_message":"set aside","metadata":{"a":{"b":1}},"metadata_unindexed":[{"path":["a","c"],"value":"long 10.0.0.9"}]}`,
  `{"id":7,"timestamp":${TS},"event_message":"numeric id: the hit's _id"}`,
  `{"timestamp":${TS},"event_message":"no id: the hit's _id"}`,
  `{"id":"n","id":"n2","timestamp":${TS},"event_message":"once","event_message":"twice"}`,
  `{"id":"o","timestamp":${TS},"event_message":"unicode é ✓ 𝄞 \u2028 \u2029 – mail me@example.com, mac 00:1a:2b:3c:4d:5e, std::io, 12:30:45, v1.2.3"}`,
  `{"id":"p","timestamp":${TS},"event_message":"${'1.2.3.4 '.repeat(5000)}","metadata":[{"huge":"${'a:'.repeat(20000)}","deep":${'['.repeat(50)}1${']'.repeat(50)}}]}`,
  `{"id":"q","timestamp":${TS},"event_message":"ends in backslash \\\\","metadata":{"x":"\\\\\\"","y":"\\\\"}}`,
  `{"id":"r","timestamp":${TS},"project":"p1","shape":{"request":1},"other":{"nested":[1,2,{"x":"}]\\""}]},"event_message":"unread fields skipped"}`,
];

describe('logs.all rows written from the store text', () => {
  it('gives the bytes of the parsed path for every stored event of the corpus, redacted and not', async () => {
    for (const source of CORPUS) await expectSameBytes(response([hit(source)]));
    await expectSameBytes(response(CORPUS.map((source, i) => hit(source, `doc-${i}`))));
    await expectSameBytes('{}');
    await expectSameBytes('{"hits":{"hits":[]}}');
  });

  it('copies records held in an array and keys that start with a digit from the text, parsing nothing', async () => {
    const text = response([
      hit(`{"id":"a","timestamp":${TS},"event_message":"m","metadata":[{"10.0.0.1":5,"2xx":{"a":[1,{"b":"c"}]},"k":"v"},{"r":{"s":-0.5e1}}]}`),
      hit(`{"id":"b","timestamp":${TS},"metadata":{"10.0.0.1":5,"1st":{"x":"y"},"k":"v"}}`, 'doc-2'),
      hit(`{"id":"c","timestamp":${TS},"metadata":{"1st":{"x":"y"},"0":"index key: parsed"}}`, 'doc-3'),
    ]);
    await expectSameBytes(text);
    const parse = vi.spyOn(JSON, 'parse');
    try {
      await writtenRows(response([hit(`{"id":"a","timestamp":${TS},"metadata":[{"10.0.0.1":5,"2xx":{"a":[1,{"b":"c"}]}},{"r":{"s":-0.5e1}}]}`)]), false);
      await writtenRows(response([hit(`{"id":"b","timestamp":${TS},"metadata":{"10.0.0.1":5,"1st":{"x":"y"},"k":"v"}}`)]), false);
      expect(parse).not.toHaveBeenCalled();
      // an array-index key ("0") moves first in a parsed object: that hit still takes the parsed path
      await writtenRows(response([hit(`{"id":"c","timestamp":${TS},"metadata":{"1st":{"x":"y"},"0":"index key: parsed"}}`)]), false);
      expect(parse).toHaveBeenCalledTimes(1);
    } finally {
      parse.mockRestore();
    }
  });

  it('leaves a response it cannot read to the parser', async () => {
    for (const text of ['{"hits": {"hits": []}}', '{"hits":{"hits":[{"_source":{"id":"a"}}]}} ', '{"took":1,"hits":{"hits":[]}}', '{"hits":{"hits":[1 2]}}']) {
      expect(await writtenRows(text, false), text).toBeUndefined();
    }
  });

  it('writes a page in one walk and keeps its last hit, where the next page starts', async () => {
    const text = response([hit(CORPUS[0]!), hit(CORPUS[4]!, 'doc-2'), hit(CORPUS[12]!, 'doc-3')]);
    const page = (await writtenRows(text, false))!;
    expect(page.rows).toHaveLength(3);
    expect(hitSort(page.last!)).toEqual([1704067200123, 'doc-3']);
    expect(await writtenRows('{}', false)).toEqual({ rows: [], last: undefined });
    expect(await writtenRows('{"hits":{"hits":[]}}', true)).toEqual({ rows: [], last: undefined });
  });

  it('gives the event loop back while writing a huge page as it is read', async () => {
    const huge = (i: number) =>
      hit(`{"id":"h${i}","timestamp":${TS},"event_message":"${'1.'.repeat(30_000)}","metadata":{"peer":"10.0.${i % 256}.1"}}`, `h${i}`);
    const text = response(Array.from({ length: 200 }, (_, i) => huge(i)));
    const { result: page, turns } = await loopTurnsDuring(async () => (await writtenRows(text, true))!);
    expect(turns).toBeGreaterThan(1);
    const rows = (
      JSON.parse((await encodeAnswer(page.rows, { redact: true })).toString()) as { result: Array<{ id: string; metadata: Array<{ peer: string }> }> }
    ).result;
    expect(rows.map((row) => row.id)).toEqual(Array.from({ length: 200 }, (_, i) => `h${i}`));
    expect(new Set(rows.map((row) => row.metadata[0]!.peer))).toEqual(new Set(['REDACTED']));
  });

  it('reports a stored timestamp out of form as the parsed path does', async () => {
    for (const [text, quoted] of [
      [response([hit(`{"id":"a","timestamp":"yesterday"}`)]), '"yesterday"'],
      ['{"hits":{"hits":[{"_id":"x","sort":[1]}]}}', '"undefined"'],
    ]) {
      await expect(parsedAnswer(text!, false)).rejects.toThrow(`stored timestamp ${quoted}`);
      await expect(writtenAnswer(text!, false)).rejects.toThrow(`stored timestamp ${quoted}`);
    }
  });

  it('gives the bytes of the parsed path for any JSON metadata and strings', async () => {
    const address = fc.constantFrom('10.1.2.3', '2001:db8::7', 'fe80::1%eth0', '::1', '1.2.3', 'a::b', '%3A%3A1', '%2E');
    const text = fc.oneof(
      fc.string({ unit: 'binary' }),
      fc.string(),
      address,
      fc.tuple(fc.string(), address, fc.string()).map((parts) => parts.join('')),
    );
    const value = fc.letrec<{ json: unknown }>((tie) => ({
      json: fc.oneof(
        { depthSize: 'small' },
        text,
        fc.double(),
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('json'), { maxLength: 4 }),
        fc.dictionary(fc.oneof(text, address), tie('json'), { maxKeys: 4 }),
      ),
    })).json;
    // JSON.stringify writes each escape one way; Elasticsearch may write others: \u escapes for any character, \/ for a slash
    const rewritten = (json: string, seed: number) =>
      json.replace(/"(?:[^"\\]|\\.)*"/g, (string) =>
        string.replace(/\\u00([0-9a-f]{2})|[./:é]/g, (match, hex: string | undefined) =>
          (match.charCodeAt(0) + seed) % 3 === 0
            ? match
            : hex
              ? `\\u00${hex.toUpperCase()}`
              : match === '/'
                ? '\\/'
                : `\\u${match.charCodeAt(0).toString(16).padStart(4, '0')}`,
        ),
      );
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(text, text, value), { minLength: 1, maxLength: 5 }), fc.nat(), async (events, seed) => {
        const sources = events.map(([id, message, metadata]) => JSON.stringify({ id, timestamp: '2024-01-01T00:00:00.5Z', event_message: message, metadata }));
        await expectSameBytes(response(sources.map((source, i) => hit(rewritten(source, seed + i), `d${i}`))));
      }),
      { numRuns: 400 },
    );
  });

  it('reads any stored timestamp as the parsed path does, and refuses the same ones with the same message', async () => {
    const stamp = fc
      .tuple(fc.date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2255-12-31T23:59:59Z'), noInvalidDate: true }), fc.stringMatching(/^\d{0,9}$/))
      .map(([date, fraction]) => `${date.toISOString().slice(0, 19)}${fraction === '' ? '' : `.${fraction}`}Z`);
    await fc.assert(
      fc.asyncProperty(fc.array(stamp, { minLength: 1, maxLength: 5 }), async (stamps) => {
        await expectSameBytes(response(stamps.map((stamp, i) => hit(`{"id":"s${i}","timestamp":"${stamp}"}`, `s${i}`))));
      }),
      { numRuns: 300 },
    );
    for (const odd of [
      '2024-01-01T00:00:00.12a4Z',
      '2024-01-01T00:00:00.1234567890Z',
      '2024-01-0xT00:00:00.1Z',
      '2024-01-01T0x:00:00.1Z',
      '2024-01-01T00:00:00.Z',
    ]) {
      const text = response([hit(`{"id":"a","timestamp":"${odd}"}`)]);
      await expect(parsedAnswer(text, false)).rejects.toThrow(`stored timestamp "${odd}"`);
      await expect(writtenAnswer(text, false)).rejects.toThrow(`stored timestamp "${odd}"`);
    }
  });

  it('answers each hit as its own row object in the answer, so a cached body counts them', async () => {
    const { rows } = (await writtenRows(response([hit(CORPUS[0]!), hit(CORPUS[1]!, 'doc-2')]), false))!;
    expect(rows.every((each) => each instanceof LogRowJson)).toBe(true);
    const body = await encodeAnswer(rows, { redact: false });
    expect((JSON.parse(body.toString()) as { result: unknown[] }).result).toHaveLength(2);
    expect(answerRowCount(body)).toBe(2);
  });
});
