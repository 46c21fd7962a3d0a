import type { estypes } from '@elastic/elasticsearch';
import { search, type StoreOptions } from '../executor/elasticsearch.ts';
import { columnRows } from '../executor/rows/logs.ts';
import type { EventScan } from '../planner/plan.ts';
import { nanosTextFromMillis } from '../../shared/stored-timestamp.ts';

/** Events per store request while a page streams: one such chunk is held at a time, whatever the page's size. */
export const CHUNK_ROWS = 1000;

/** Elasticsearch's max_result_window: from + size of one search stays within it. */
const MAX_RESULT_WINDOW = 10_000;

/** An event's place in the export's order: its timestamp (text, nanoseconds) and id. */
export type SortKey = [string, string];

/**
 * Newest first, ties broken by id; the timestamp's sort value as text, since date_nanos sort values as
 * JSON numbers lose their last digits in JavaScript and search_after would skip or repeat events.
 */
const SORT: estypes.Sort = [{ timestamp: { order: 'desc', format: 'strict_date_optional_time_nanos' } }, { id: { order: 'desc' } }];

/**
 * The events of a raw-event scan exported page by page with search_after: scope and pushed-down
 * predicates as planned, bounded above by the window's end fixed at page 1, so events arriving
 * meanwhile are neither skipped nor repeated.
 */
export class EventPages {
  private readonly filter: estypes.QueryDslQueryContainer[];
  private readonly columns: string[];

  constructor(
    private readonly scan: EventScan,
    windowEnd: number,
    private readonly store: StoreOptions,
  ) {
    this.filter = [...scan.scope, ...scan.predicates, { range: { timestamp: { lte: nanosTextFromMillis(windowEnd) } } }];
    this.columns = scan.columns.map((column) => column.name);
  }

  /**
   * The key of the `count`-th event after `after` (the page's last), or undefined when fewer remain.
   * Only sort values are read, in hops of at most the store's result window.
   */
  async keyAfter(after: SortKey | undefined, count: number): Promise<SortKey | undefined> {
    let position = after;
    for (let left = count; left > 0; ) {
      const step = Math.min(left, MAX_RESULT_WINDOW);
      // the store takes no `from` with search_after: the events after the position are a filter here
      const shape = { from: step - 1, size: 1, _source: false, filter_path: ['hits.hits.sort', 'error'] };
      const response = await search(this.request(shape, undefined, position ? [strictlyAfter(position)] : []), this.store);
      const hit = response.hits?.hits?.[0];
      if (!hit?.sort) return undefined;
      position = sortKeyOf(hit.sort);
      left -= step;
    }
    return position;
  }

  /**
   * The rows after `after` up to and including `last` (every remaining one when absent), one chunk
   * per store request; the next chunk is asked for only when the caller takes it.
   */
  async *rows(after: SortKey | undefined, last: SortKey | undefined): AsyncGenerator<Record<string, unknown>[]> {
    const bound = last === undefined ? [] : [atOrBefore(last)];
    let position = after;
    for (;;) {
      const shape = { size: CHUNK_ROWS, _source: this.scan.search._source, filter_path: ['hits.hits._id', 'hits.hits._source', 'hits.hits.sort', 'error'] };
      const request = this.request(shape, position, bound);
      const hits = (await search(request, this.store)).hits?.hits ?? [];
      if (hits.length > 0) yield columnRows(hits, this.columns);
      if (hits.length < CHUNK_ROWS) return;
      position = sortKeyOf(hits[hits.length - 1]!.sort!);
    }
  }

  private request(shape: Partial<estypes.SearchRequest>, after: SortKey | undefined, bound: estypes.QueryDslQueryContainer[] = []) {
    return {
      index: this.scan.index,
      ignore_unavailable: true,
      allow_no_indices: true,
      track_total_hits: false,
      query: { bool: { filter: [...this.filter, ...bound] } },
      sort: SORT,
      ...(after ? { search_after: after } : {}),
      ...shape,
    };
  }
}

function sortKeyOf(sort: estypes.SortResults): SortKey {
  return [String(sort[0]), String(sort[1])];
}

/** Events after `position` in the export's order: older, or as old with a lower id. */
function strictlyAfter(position: SortKey): estypes.QueryDslQueryContainer {
  const [timestamp, id] = position;
  return {
    bool: {
      should: [{ range: { timestamp: { lt: timestamp } } }, { bool: { filter: [{ term: { timestamp } }, { range: { id: { lt: id } } }] } }],
      minimum_should_match: 1,
    },
  };
}

/** Events at or before `last` in the export's order (newest first, then id descending). */
function atOrBefore(last: SortKey): estypes.QueryDslQueryContainer {
  const [timestamp, id] = last;
  return {
    bool: {
      should: [{ range: { timestamp: { gt: timestamp } } }, { bool: { filter: [{ term: { timestamp } }, { range: { id: { gte: id } } }] } }],
      minimum_should_match: 1,
    },
  };
}
