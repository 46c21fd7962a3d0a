import { describe, expect, it } from 'vitest';
import { QueryTooExpensive } from '../../src/errors.ts';
import { duckDbTypeName } from '../../src/executor/engine/duckdb-type.ts';
import { inferTableSchema, inferType } from '../../src/executor/engine/schema-inference.ts';
import type { SqlType } from '../../src/sql/types.ts';

const string: SqlType = { kind: 'string' };
const int64: SqlType = { kind: 'int64' };
const float64: SqlType = { kind: 'float64' };
const json: SqlType = { kind: 'json' };
const unknown: SqlType = { kind: 'unknown' };
const struct = (fields: Record<string, SqlType>): SqlType => ({ kind: 'struct', fields: Object.entries(fields).map(([name, type]) => ({ name, type })) });
const array = (element: SqlType): SqlType => ({ kind: 'array', element });

describe('inferType', () => {
  it('reads scalars', () => {
    expect(inferType(['a'], 'c')).toEqual(string);
    expect(inferType([1], 'c')).toEqual(int64);
    expect(inferType([1.5], 'c')).toEqual(float64);
    expect(inferType([true], 'c')).toEqual({ kind: 'bool' });
    // Beyond 2^53 a JSON number is no longer an exact integer.
    expect(inferType([2 ** 60], 'c')).toEqual(float64);
  });

  it('merges the keys of records across rows in order of first appearance', () => {
    expect(inferType([[{ b: 1 }], [{ a: 'x', b: 2 }], [{ c: [{ d: true }] }]], 'metadata')).toEqual(
      array(struct({ b: int64, a: string, c: array(struct({ d: { kind: 'bool' } })) })),
    );
  });

  it('widens int64 with float64 to float64, in either order', () => {
    expect(inferType([{ n: 1 }, { n: 2.5 }], 'c')).toEqual(struct({ n: float64 }));
    expect(inferType([{ n: 2.5 }, { n: 1 }], 'c')).toEqual(struct({ n: float64 }));
  });

  it('lets null, absent keys and empty arrays contribute nothing', () => {
    expect(inferType([null, undefined], 'c')).toEqual(unknown);
    expect(inferType([], 'c')).toEqual(unknown);
    expect(inferType([{ a: null }, {}, { b: [] }], 'c')).toEqual(struct({ a: unknown, b: array(unknown) }));
    expect(inferType([{ a: null }, { a: 'x' }, { a: null }], 'c')).toEqual(struct({ a: string }));
  });

  it('falls back to string when scalar kinds conflict', () => {
    expect(inferType([{ status: 200 }, { status: '200' }], 'c')).toEqual(struct({ status: string }));
    expect(inferType([true, 1.5], 'c')).toEqual(string);
  });

  it('falls back to json when a record or array meets anything else', () => {
    expect(inferType([{ a: [{ x: 1 }] }, { a: 'text' }], 'c')).toEqual(struct({ a: json }));
    expect(inferType([{ a: 'text' }, { a: [1] }], 'c')).toEqual(struct({ a: json }));
    expect(inferType([[1], { x: 1 }], 'c')).toEqual(json);
    expect(inferType([[1, 'a', { x: 1 }]], 'c')).toEqual(array(json));
  });

  it('falls back to json for keys differing only in case, which one DuckDB struct cannot hold', () => {
    expect(inferType([{ h: [{ Accept: 'a' }] }, { h: [{ accept: 'b' }] }], 'c')).toEqual(struct({ h: array(json) }));
  });

  it('turns records that never have a key into json, as DuckDB has no empty STRUCT', () => {
    expect(inferType([[{}]], 'c')).toEqual(array(json));
  });

  it('keeps keys that are not identifiers as they are', () => {
    const keys = ['with space', 'q"uote', "apo'strophe", 'dot.ted', 'select', '', 'ünïcode', '1leading'];
    const type = inferType([Object.fromEntries(keys.map((key) => [key, 1]))], 'c');
    expect(type).toEqual(struct(Object.fromEntries(keys.map((key) => [key, int64]))));
  });

  it('refuses nesting deeper than the limit with QueryTooExpensive', () => {
    let deep: unknown = 'leaf';
    for (let level = 0; level < 40; level++) deep = [{ next: deep }];
    expect(() => inferType([deep], 'metadata')).toThrow(QueryTooExpensive);
    expect(() => inferType([deep], 'metadata')).toThrow(/"metadata" nests records or arrays deeper than 32 levels/);
    expect(() => inferType([deep], 'metadata', { maxDepth: 100, maxFields: 2000 })).not.toThrow();
  });

  it('refuses more distinct keys than the limit, counted over all rows, with QueryTooExpensive', () => {
    const rows = Array.from({ length: 30 }, (_, row) => Object.fromEntries(Array.from({ length: 100 }, (_, key) => [`k${row}_${key}`, key])));
    expect(() => inferType(rows, 'metadata')).toThrow(/"metadata" has more than 2000 distinct record keys/);
    expect(inferType(rows.slice(0, 20), 'metadata')).toMatchObject({ kind: 'struct' });
  });
});

describe('inferTableSchema', () => {
  it('keeps declared columns and infers the others', () => {
    const schema = inferTableSchema(
      'edge_logs',
      [
        { name: 'id', type: string },
        { name: 'timestamp', type: { kind: 'timestamp' } },
        { name: 'metadata', type: 'inferred' },
      ],
      [
        { id: 'a', timestamp: 1, metadata: [{ request: [{ path: '/' }] }] },
        { id: 'b', timestamp: 2 },
      ],
    );
    expect(schema).toEqual({
      name: 'edge_logs',
      columns: [
        { name: 'id', type: string },
        { name: 'timestamp', type: { kind: 'timestamp' } },
        { name: 'metadata', type: array(struct({ request: array(struct({ path: string })) })) },
      ],
    });
  });
});

describe('duckDbTypeName', () => {
  it.each<[SqlType, string]>([
    [{ kind: 'timestamp' }, 'TIMESTAMPTZ'],
    [{ kind: 'datetime' }, 'TIMESTAMP'],
    [string, 'VARCHAR'],
    [int64, 'BIGINT'],
    [float64, 'DOUBLE'],
    [{ kind: 'numeric' }, 'DECIMAL(38,9)'],
    [{ kind: 'bool' }, 'BOOLEAN'],
    [{ kind: 'bytes' }, 'BLOB'],
    [{ kind: 'date' }, 'DATE'],
    [{ kind: 'time' }, 'TIME'],
    [json, 'JSON'],
    [unknown, '"NULL"'],
    [array(int64), 'BIGINT[]'],
    [array(struct({ a: string, 'q"b': array(unknown) })), 'STRUCT("a" VARCHAR, "q""b" "NULL"[])[]'],
  ])('%j -> %s', (type, text) => {
    expect(duckDbTypeName(type)).toBe(text);
  });
});
