import type { Client, estypes } from '@elastic/elasticsearch';
import { describe, expect, it } from 'vitest';
import { queryStats, statsRequested, withStats } from '../../src/endpoints/query-stats.ts';
import { search } from '../../src/executor/elasticsearch.ts';
import { StoreReads } from '../../src/executor/store-reads.ts';
import { BoundedLabel } from '../../src/metrics.ts';

describe('the stats object', () => {
  it('is asked for by the parameter or the header, strictly true or false', () => {
    expect(statsRequested({}, undefined)).toBe(false);
    expect(statsRequested({ stats: 'TRUE ' }, undefined)).toBe(true);
    expect(statsRequested({ stats: true }, 'true')).toBe(true);
    expect(statsRequested({}, 'false')).toBe(false);
    expect(() => statsRequested({ stats: 'on' }, undefined)).toThrow(/the stats parameter must be exactly true or false.*got "on"/);
    expect(() => statsRequested({ stats: ['true', 'true'] }, undefined)).toThrow(/sent 2 times/);
    expect(() => statsRequested({}, 'true, true')).toThrow(/the SVC-ENDPOINT-STATS header must be exactly true or false/);
    expect(() => statsRequested({ stats: 'true' }, 'false')).toThrow(/disagree/);
  });

  it('reports what the searches read: events by source, bytes, pushed-down parts and partitions without the index prefix', () => {
    const reads = new StoreReads();
    const request = { index: 'p-edge_logs*', query: { match_all: {} }, aggs: { groups: {} } };
    reads.searched(request, ['p-edge_logs-2024.01.01', '-p-edge_logs-2024.01.02'], { hits: { total: { value: 5 } } });
    reads.scanned(request.index, 5);
    reads.scanned('p-function_edge_logs-2024.01.01,p-function_edge_logs-2024.01.02', 2);
    reads.pushed.add('limit');
    reads.engineRan = true;
    const stats = queryStats({ elapsedMs: 12.34, rows: 1, cache: 'MISS', ageSeconds: 0, reads, indexPrefix: 'p-' });
    expect(stats).toEqual({
      elapsed_ms: 12.3,
      rows_returned: 1,
      events_scanned: { edge_logs: 5, function_edge_logs: 2 },
      bytes_read: Buffer.byteLength('{"hits":{"total":{"value":5}}}'),
      cache: { hit: false, age_seconds: 0 },
      pushed_down: ['filters', 'aggregation', 'limit'],
      engine: { ran: true },
      partitions: ['-edge_logs-2024.01.02', 'edge_logs-2024.01.01'],
    });
  });

  it('goes beside result, leaving the given body as it was', () => {
    const body = Buffer.from('{"result":[{"a":1}]}');
    const stats = queryStats({ elapsedMs: 1, rows: 1, cache: 'HIT', ageSeconds: 7, reads: new StoreReads(), indexPrefix: 'p-' });
    const sent = withStats(body, stats);
    expect(body.toString()).toBe('{"result":[{"a":1}]}');
    expect(JSON.parse(sent.toString())).toEqual({ result: [{ a: 1 }], stats });
    expect(stats.cache).toEqual({ hit: true, age_seconds: 7 });
  });
});

describe('bounded metric labels', () => {
  it('keeps the first values and folds the rest into other', () => {
    const label = new BoundedLabel(2);
    expect(['a', 'b', 'c', 'a', 'd', 'b'].map((value) => label.valueOf(value))).toEqual(['a', 'b', 'other', 'a', 'other', 'b']);
  });
});

describe('what a search sends and collects', () => {
  const aggregation = { index: 'p-edge_logs*', size: 0, track_total_hits: false, query: { match_all: {} }, aggs: { n: { value_count: { field: 'id' } } } };
  const storeAnswering = (sent: estypes.SearchRequest[]) =>
    ({
      // no connection to send a plain request on: the search is the client's
      transport: { getConnection: () => null },
      search: async (request: estypes.SearchRequest) => (sent.push(request), { hits: { total: { value: 4 }, hits: [] }, aggregations: {} }),
    }) as unknown as Client;

  it("without statistics asked, the request is the plan's: hits are not counted", async () => {
    const sent: estypes.SearchRequest[] = [];
    await search(aggregation, { elasticsearch: storeAnswering(sent), timeoutMs: 1000 });
    expect(sent[0]!.track_total_hits).toBe(false);
  });

  it('with statistics asked, an aggregation counts its hits, and the search is collected', async () => {
    const sent: estypes.SearchRequest[] = [];
    const reads = new StoreReads();
    await search(aggregation, { elasticsearch: storeAnswering(sent), timeoutMs: 1000, reads });
    expect(sent[0]!.track_total_hits).toBe(true);
    expect(reads.searches).toEqual([{ indices: ['p-edge_logs*'], bytes: Buffer.byteLength('{"hits":{"total":{"value":4},"hits":[]},"aggregations":{}}') }]);
    expect([...reads.pushed]).toEqual(['filters', 'aggregation']);
  });
});
