import type { estypes } from '@elastic/elasticsearch';
import { describe, expect, it } from 'vitest';
import { pageAfter } from '../../src/executor/index.ts';

describe('the next page of a composite aggregation', () => {
  const query = { bool: { filter: [{ regexp: { path: { value: '.*a.*', flags: 'NONE' } } }] } };
  const search: estypes.SearchRequest = {
    index: 'x',
    query,
    aggs: {
      requests: {
        nested: { path: 'metadata.request' },
        aggs: { groups: { composite: { size: 2, sources: [{ p: { terms: { field: 'path' } } }] }, aggs: { n: { value_count: { field: 'id' } } } } },
      },
      other: { max: { field: 'timestamp' } },
    },
  };
  const before = structuredClone(search);

  it("sets after on the composite at the path, sharing the query and leaving the plan's search as it was", () => {
    const { request, container } = pageAfter(search, ['requests', 'groups'], { p: '/rest' });
    expect(container.composite?.after).toEqual({ p: '/rest' });
    expect((request.aggs!.requests!.aggs!.groups as estypes.AggregationsAggregationContainer).composite?.after).toEqual({ p: '/rest' });
    expect(request.query).toBe(query);
    expect(request.aggs!.other).toBe(search.aggs!.other);
    expect(search).toEqual(before);
  });

  it('the first page has no after', () => {
    const { request } = pageAfter(search, ['requests', 'groups'], undefined);
    expect(request).toEqual(before);
  });
});
