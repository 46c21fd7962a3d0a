import { describe, expect, it } from 'vitest';
import { restoreSetAsideFields, type StoredEvent } from '../../shared/event-index.ts';
import { conflictingField, setAsideField } from '../../ingest/type-conflict.ts';
import { classifyItem } from '../../ingest/bulk.ts';

const event = (metadata: StoredEvent['metadata']): StoredEvent => ({ id: '1', timestamp: '2024-01-01T00:00:00.000000Z', event_message: 'm', metadata });

describe('type conflicts', () => {
  it('reads the clashing field from the errors Elasticsearch gives', () => {
    expect(conflictingField('[1:89] object mapping for [metadata.a] tried to parse field [a] as object, but found a concrete value')).toBe('metadata.a');
    expect(conflictingField("[1:97] failed to parse field [metadata.s.t] of type [keyword] in document with id '2'. Preview of field's value: '{obj=1}'")).toBe(
      'metadata.s.t',
    );
    expect(conflictingField('failed to parse field [timestamp] of type [date_nanos]')).toBeUndefined();
  });

  it('classifies bulk items: indexed, retriable, conflict, rejected', () => {
    expect(classifyItem({ _index: 'i', status: 201 })).toEqual({ kind: 'indexed' });
    expect(classifyItem({ _index: 'i', status: 429, error: { type: 'es_rejected_execution_exception', reason: 'queue full' } })).toMatchObject({
      kind: 'retry',
    });
    expect(classifyItem({ _index: 'i', status: 503, error: { type: 'unavailable_shards_exception', reason: '' } })).toMatchObject({ kind: 'retry' });
    expect(
      classifyItem({
        _index: 'i',
        status: 400,
        error: {
          type: 'document_parsing_exception',
          reason: '[1:2] object mapping for [metadata.a] tried to parse field [a] as object, but found a concrete value',
        },
      }),
    ).toMatchObject({ kind: 'type_conflict', field: 'metadata.a' });
    expect(classifyItem({ _index: 'i', status: 400, error: { type: 'illegal_argument_exception', reason: 'Limit of total fields' } })).toMatchObject({
      kind: 'rejected',
    });
  });

  it('moves the clashing subtree aside, through arrays, and restores the event exactly', () => {
    const original = event([{ a: { b: 1 }, keep: 'x' }, { a: 'scalar' }, { other: true }]);
    const reduced = setAsideField(original, 'metadata.a');
    expect(reduced?.metadata).toEqual([{ keep: 'x' }, {}, { other: true }]);
    expect(reduced?.metadata_unindexed).toEqual([
      { path: [0, 'a'], value: { b: 1 } },
      { path: [1, 'a'], value: 'scalar' },
    ]);
    expect(restoreSetAsideFields(reduced!)).toEqual(original);
    expect(original.metadata).toEqual([{ a: { b: 1 }, keep: 'x' }, { a: 'scalar' }, { other: true }]);
  });

  it('finds keys that contain dots and nested request records', () => {
    const original = event({ 'x.y': { z: 1 }, request: [{ url: { bad: 1 }, path: '/p' }] });
    const first = setAsideField(original, 'metadata.x.y.z');
    expect(first?.metadata).toEqual({ 'x.y': {}, request: [{ url: { bad: 1 }, path: '/p' }] });
    const second = setAsideField(first!, 'metadata.request.url');
    expect(second?.metadata).toEqual({ 'x.y': {}, request: [{ path: '/p' }] });
    expect(restoreSetAsideFields(second!)).toEqual(original);
  });

  it('gives up when nothing lives at the path, so the event goes to the dead-letter topic', () => {
    expect(setAsideField(event({ a: 1 }), 'metadata.b')).toBeUndefined();
    expect(setAsideField(event(undefined), 'metadata.a')).toBeUndefined();
  });
});
