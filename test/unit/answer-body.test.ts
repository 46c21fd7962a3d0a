import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeAnswer } from '../../src/endpoints/answer-body.ts';
import { redactPii } from '../../src/redaction.ts';
import { loopTurnsDuring } from '../support/loop-turns.ts';

const decoded = (body: Buffer) => JSON.parse(body.toString('utf8')) as { result: unknown[] };

describe('encodeAnswer', () => {
  it('gives the same bytes as serialising the (redacted) rows whole', async () => {
    const rows = [
      { id: 'a', event_message: 'from 203.0.113.7 to [2001:db8::1]:443', metadata: [{ '198.51.100.2': 'key', n: 1 }] },
      { id: 'b', nested: { list: [1, 'two', null, true] }, text: 'é ✓ 𝄞' },
    ];
    expect((await encodeAnswer(rows, { redact: false })).toString()).toBe(`{"result":${JSON.stringify(rows)}}`);
    expect((await encodeAnswer(rows, { redact: true })).toString()).toBe(`{"result":${JSON.stringify(redactPii(rows))}}`);
    expect((await encodeAnswer([], { redact: true })).toString()).toBe('{"result":[]}');
    expect((await encodeAnswer([undefined, 1], { redact: false })).toString()).toBe('{"result":[null,1]}');
  });

  it('matches whole-array serialisation for any JSON rows', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.jsonValue(), { maxLength: 20 }), fc.boolean(), async (rows, redact) => {
        const expected = JSON.stringify(redact ? redactPii(rows) : rows);
        expect((await encodeAnswer(rows, { redact })).toString()).toBe(`{"result":${expected}}`);
      }),
      { numRuns: 300 },
    );
  });

  it('gives the event loop back while encoding a huge answer, and the bytes stay whole', async () => {
    // 300 rows of 60 KB of address-like text: far more than one slice of work on any machine
    const hostile = ['1.'.repeat(30_000), 'a:'.repeat(30_000), '1:2:3:4:5:6:7:'.repeat(4000)];
    const rows = Array.from({ length: 300 }, (_, i) => ({ id: `h${i}`, event_message: hostile[i % hostile.length], peer: `10.0.${i % 256}.1` }));
    const { result: body, turns } = await loopTurnsDuring(() => encodeAnswer(rows, { redact: true }));
    expect(turns).toBeGreaterThan(1);
    const result = decoded(body).result as Array<{ id: string; peer: string }>;
    expect(result).toHaveLength(300);
    expect(result.map((row) => row.id)).toEqual(rows.map((row) => row.id));
    expect(new Set(result.map((row) => row.peer))).toEqual(new Set(['REDACTED']));
  });
});
