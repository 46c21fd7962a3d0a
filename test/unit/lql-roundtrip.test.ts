/**
 * Property: printing a parsed query and parsing it again gives the same tree (offsets aside, as they
 * point into the text). Queries are generated over every construct of the grammar.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LqlSyntax } from '../../src/errors.ts';
import { parseLql, printLql } from '../../src/lql/index.ts';
import type { LqlQuery } from '../../src/lql/syntax.ts';

function withoutOffsets(query: LqlQuery): unknown {
  return JSON.parse(JSON.stringify(query, (key, value: unknown) => (key === 'offset' ? undefined : value)));
}

const name = fc.stringMatching(/^[A-Za-z0-9_]{1,8}$/);
const metadataPath = fc
  .tuple(fc.constantFrom('m', 'metadata'), fc.array(name, { minLength: 1, maxLength: 3 }))
  .map(([prefix, parts]) => `${prefix}.${parts.join('.')}`);
const topPath = name.filter((n) => !['t', 'timestamp', 'c', 'chart', 's', 'select', 'f', 'from'].includes(n));
const path = fc.oneof(metadataPath, topPath, fc.constantFrom('id', 'event_message', 'project', 'created_at', 'metadata.level'));

/** Any text, including quotes, backslashes, colons and non-ASCII, for quoted values. */
const anyText = fc.string({ unit: fc.constantFrom('a', 'Z', '1', ' ', '"', '\\', ':', '.', '-', '~', '@', '\t', 'é', '🚀', '{', '}', '*'), maxLength: 12 });
const quoted = anyText.map((text) => `"${text.replace(/[\\"]/g, (ch) => `\\${ch}`)}"`);
/** Bare words: no whitespace, `:` or `"` (a `\"` pair is allowed). */
const bareWord = fc
  .array(fc.constantFrom('a', 'B', '9', '.', '$', '%', '^', '&', '[', ']', '(', ')', '/', '\\"', '*', 'ü', '=', '-', '@'), { minLength: 1, maxLength: 10 })
  .map((parts) => parts.join(''));
const number = fc
  .tuple(fc.boolean(), fc.nat(99999), fc.option(fc.nat(999)))
  .map(([negative, whole, fraction]) => `${negative ? '-' : ''}${whole}${fraction === null ? '' : `.${fraction}`}`);
const fieldValue = fc.oneof(
  quoted,
  bareWord,
  number,
  fc.constantFrom('NULL', 'true', 'false', 'error..critical', '1..10', '0.5..2.25', 'a..b', '2024-01-01T10:00:00Z'),
);
const operator = fc.constantFrom(':', ':>', ':>=', ':<', ':<=', ':~', ':@>', ':@>~');

const date = fc
  .tuple(fc.integer({ min: 1970, max: 2099 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 28 }))
  .map(([y, m, d]) => `${y}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`);
const clock = fc
  .tuple(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 }), fc.integer({ min: 0, max: 59 }))
  .map((parts) => parts.map((p) => String(p).padStart(2, '0')).join(':'));
const datetime = fc
  .tuple(date, clock, fc.option(fc.stringMatching(/^[0-9]{1,6}$/)), fc.constantFrom('', 'Z', '+02:00', '-05:30'))
  .map(([d, c, fraction, zone]) => `${d}T${c}${fraction === null ? '' : `.${fraction}`}${zone}`);
const unix = fc.constantFrom(10, 13, 16).chain((length) => fc.stringMatching(new RegExp(`^[1-9][0-9]{${length - 1}}$`)));
const absolute = fc.oneof(date, datetime, unix);
const shorthandTime = fc.oneof(
  fc.constantFrom('now', 'today', 'yesterday'),
  fc.constantFrom('s', 'seconds', 'minute', 'hour', 'day', 'week', 'month', 'year', 'h', 'mm', 'y').map((u) => `this@${u}`),
  fc
    .tuple(fc.option(fc.integer({ min: 1, max: 9999 })), fc.constantFrom('minute', 'minutes', 'm', 'hours', 'h', 'day', 'd', 'weeks', 'w', 'months', 'mm'))
    .map(([amount, unit]) => `last@${amount ?? ''}${unit}`),
);
const timestampClause = fc.oneof(
  fc
    .tuple(fc.constantFrom('t', 'timestamp'), fc.constantFrom(':', ':>', ':>=', ':<', ':<='), fc.oneof(absolute, shorthandTime))
    .map(([k, op, v]) => `${k}${op}${v}`),
  fc.tuple(absolute, absolute).map(([a, b]) => `t:${a}..${b}`),
  fc.constantFrom('t:2022-04-{07..09}T00:{00..40}:00', 't:2020-{01..12}-01', 't:2020-01-01T13:14:15.{1..7}Z'),
);
const filterClause = fc.oneof(
  fc.tuple(path, operator, fieldValue).map(([p, op, v]) => `${p}${op}${v}`),
  bareWord.filter((w) => !w.startsWith('-')),
  quoted,
  fc
    .oneof(
      bareWord.filter((w) => !w.startsWith('~')),
      quoted,
    )
    .map((v) => `~${v}`),
  timestampClause,
);
const chartClauses = fc
  .tuple(
    fc.option(
      fc
        .tuple(fc.constantFrom('count', 'countd', 'avg', 'sum', 'max', 'min', 'p50', 'p95', 'p99'), fc.oneof(path, fc.constant('*')))
        .map(([aggregate, p]) => `c:${aggregate}(${aggregate === 'count' ? p : p === '*' ? 'x' : p})`),
    ),
    fc.option(
      fc
        .tuple(fc.constantFrom('t', 'timestamp'), fc.constantFrom('second', 'minute', 'hour', 'day', 's', 'm', 'h', 'd'))
        .map(([t, p]) => `chart:group_by(${t}::${p})`),
    ),
  )
  .map(([aggregate, groupBy]) => [aggregate, groupBy].filter((c): c is string => c !== null));
const selectClause = fc.oneof(
  fc.constant('s:*'),
  fc.tuple(path, fc.option(name)).map(([p, alias]) => `select:${p}${alias === null ? '' : `@${alias}`}`),
);

const query = fc
  .tuple(
    fc.array(
      fc.tuple(fc.boolean(), filterClause).map(([negated, clause]) => `${negated ? '-' : ''}${clause}`),
      { maxLength: 8 },
    ),
    chartClauses,
    fc.array(selectClause, { maxLength: 3 }),
    fc.option(name.map((n) => `from:${n}`)),
  )
  .chain(([filters, chart, selects, from]) =>
    fc.shuffledSubarray([...filters, ...chart, ...selects, ...(from ? [from] : [])], {
      minLength: filters.length + chart.length + selects.length + (from ? 1 : 0),
    }),
  )
  .chain((clauses) => fc.constantFrom(' ', '  ', '\n', '\t').map((gap) => clauses.join(gap)));

describe('LQL print and parse', () => {
  it('parse(print(parse(text))) is the parsed tree, and printing is canonical', () => {
    let parsed = 0;
    fc.assert(
      fc.property(query, (text) => {
        let tree: LqlQuery;
        try {
          tree = parseLql(text);
        } catch (error) {
          // generated parts may combine into something refused (e.g. a range on `:>`): that must be LqlSyntax
          expect(error).toBeInstanceOf(LqlSyntax);
          return;
        }
        parsed += 1;
        const printed = printLql(tree);
        const again = parseLql(printed);
        expect(withoutOffsets(again)).toEqual(withoutOffsets(tree));
        expect(printLql(again)).toBe(printed);
      }),
      { numRuns: 3000 },
    );
    // most generated queries must parse, or the property says little
    expect(parsed).toBeGreaterThan(1500);
  });

  it('prints the canonical spelling', () => {
    expect(printLql(parseLql('metadata.a:1 timestamp:>=last@2h chart:group_by(timestamp::h) chart:avg(metadata.x) select:m.y@z from:logs'))).toBe(
      'm.a:1 t:>=last@2hours c:avg(m.x) c:group_by(t::hour) s:m.y@z f:logs',
    );
    expect(printLql(parseLql('t:2022-04-{07..09}T00:{00..40}:00'))).toBe('t:2022-04-07T00:00:00..2022-04-09T00:40:00');
    expect(printLql(parseLql('"a \\"b\\" \\\\" m.x:"1.0" m.y:"NULL" m.z:"a..b" ~^er\\"ror'))).toBe(
      '"a \\"b\\" \\\\" m.x:"1.0" m.y:"NULL" m.z:"a..b" ~^er\\"ror',
    );
  });
});
