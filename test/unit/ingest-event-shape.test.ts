import { describe, expect, it } from 'vitest';
import { eventShape } from '../../shared/event-shape.ts';

describe('event shape: the record arrays of the BigQuery view of metadata', () => {
  it('lists every non-empty array path, metadata included, and the ones with two or more elements', () => {
    const metadata = {
      request: { method: 'GET', headers: [{ name: 'a' }, { name: 'b' }], cf: {} },
      response: { status_code: 200 },
      tags: [],
      ips: ['1.1.1.1'],
    };
    expect(eventShape(metadata)).toEqual({
      version: 1,
      arrays: ['metadata', 'metadata.ips', 'metadata.request', 'metadata.request.cf', 'metadata.request.headers', 'metadata.response'],
      multi: ['metadata.request.headers'],
    });
  });

  it('counts an array of metadata records, and a path once however many records reach it', () => {
    const shape = eventShape([{ request: [{ path: '/a' }] }, { request: [{ path: '/b' }, { path: '/c' }] }, { other: 1 }]);
    expect(shape.arrays).toEqual(['metadata', 'metadata.request']);
    expect(shape.multi).toEqual(['metadata', 'metadata.request']);
  });

  it('marks a path multi when any one of its arrays has two elements, nested arrays included', () => {
    const shape = eventShape({ a: [{ b: [1] }, { b: [] }], c: [[1, 2], [3]], d: [[]] });
    expect(shape.arrays).toEqual(['metadata', 'metadata.a', 'metadata.a.b', 'metadata.c', 'metadata.d']);
    expect(shape.multi).toEqual(['metadata.a', 'metadata.c']);
  });

  it('is empty without metadata and ignores what the view drops (scalars at the top of an array)', () => {
    expect(eventShape(undefined)).toEqual({ version: 1, arrays: [], multi: [] });
    expect(eventShape([])).toEqual({ version: 1, arrays: [], multi: [] });
    expect(eventShape({})).toEqual({ version: 1, arrays: ['metadata'], multi: [] });
    expect(eventShape([1, { x: { y: 1 } }] as unknown[])).toEqual({ version: 1, arrays: ['metadata', 'metadata.x'], multi: [] });
  });
});
