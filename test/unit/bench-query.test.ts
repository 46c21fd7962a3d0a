import { describe, expect, it } from 'vitest';
import { edgeEvent, projectName } from '../../bench/query-data.ts';
import { searchHttpRequest, shiftStudioQuery } from '../../bench/query-phase.ts';

const END = Date.UTC(2026, 10, 21, 18, 30);

describe('the query benchmark data', () => {
  it('spreads edge events over the 7 days before the end, whatever the data set size', () => {
    const times = Array.from({ length: 2000 }, (_, n) => Date.parse(edgeEvent(n, END).timestamp));
    expect(Math.max(...times)).toBeLessThanOrEqual(END);
    expect(Math.min(...times)).toBeGreaterThan(END - 7 * 24 * 3600 * 1000);
    // every day of the week gets some: the spread does not depend on how many events are loaded
    const days = new Set(times.map((time) => Math.floor((END - time) / (24 * 3600 * 1000))));
    expect(days.size).toBe(7);
  });

  it('gives each event a url of its project, so the usage pattern finds exactly that project', () => {
    const event = edgeEvent(142, END);
    expect(event.project).toBe(projectName(142));
    expect(event.project).toBe('proj042');
    expect((event.metadata as { request: { url: string } }).request.url).toMatch(/^https:\/\/proj042\.supabase\.co\//);
  });
});

describe('shiftStudioQuery', () => {
  it('moves every date by whole days so 2024-01-02 becomes the day the data ends, and asks for the bench project', () => {
    const shifted = shiftStudioQuery(
      {
        id: 'q',
        sql: "select countif(t.timestamp >= '2024-01-01T00:00:00.000Z') as c from edge_logs t",
        params: { project: 'default', iso_timestamp_start: '2023-12-31T00:00:00.000Z', iso_timestamp_end: '2024-01-01T01:00:00.000Z' },
      },
      END,
    );
    expect(shifted.params).toEqual({ project: 'proj042', iso_timestamp_start: '2026-11-19T00:00:00.000Z', iso_timestamp_end: '2026-11-20T01:00:00.000Z' });
    expect(shifted.sql).toBe("select countif(t.timestamp >= '2026-11-20T00:00:00.000Z') as c from edge_logs t");
  });
});

describe('searchHttpRequest', () => {
  it('puts the index in the path, the URL parameters in the query string and the rest in the body', () => {
    const request = searchHttpRequest({
      index: 'p-edge_logs-2026.11.21,p-edge_logs',
      ignore_unavailable: true,
      allow_no_indices: true,
      size: 100,
      _source: ['id'],
      query: { bool: { filter: [] } },
    });
    expect(request.path).toBe('/p-edge_logs-2026.11.21%2Cp-edge_logs/_search?ignore_unavailable=true&allow_no_indices=true');
    expect(JSON.parse(request.body)).toEqual({ size: 100, _source: ['id'], query: { bool: { filter: [] } } });
  });
});
