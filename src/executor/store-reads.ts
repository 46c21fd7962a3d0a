import type { estypes } from '@elastic/elasticsearch';

/** A part of a query the store did itself rather than the engine. */
export type PushedPart = 'filters' | 'aggregation' | 'limit' | 'sort';

/** One search as sent and answered: the index expressions it named and the response body's size. */
export interface StoreSearch {
  indices: string[];
  bytes: number;
}

/**
 * What one caller's run really did: the searches it sent, the events each scan read, the parts the
 * store ran and whether a residual ran in the engine. The executor and its searches add to it as
 * they go; only a run whose caller asked for statistics carries one, so other runs pay nothing.
 */
export class StoreReads {
  readonly searches: StoreSearch[] = [];
  /** Events scanned by index expression (the first one a search named): a search's hits, or an aggregation's hits total. */
  readonly scannedByIndex = new Map<string, number>();
  readonly pushed = new Set<PushedPart>();
  engineRan = false;

  /** A search sent to the store and its response: the parts its request pushed down, its indices and bytes. */
  searched(request: estypes.SearchRequest, indices: string[], response: unknown): void {
    this.searches.push({ indices, bytes: Buffer.byteLength(JSON.stringify(response) ?? '') });
    if (request.query) this.pushed.add('filters');
    if (request.aggs) this.pushed.add('aggregation');
    if (request.sort && !isDocOrder(request.sort)) this.pushed.add('sort');
  }

  scanned(index: estypes.Indices | undefined, events: number): void {
    const key = (Array.isArray(index) ? index[0] : index?.split(',')[0]) ?? '';
    this.scannedByIndex.set(key, (this.scannedByIndex.get(key) ?? 0) + events);
  }
}

/** `_doc` order is the store's cheapest, used for paging when the query asks for no order. */
function isDocOrder(sort: estypes.Sort): boolean {
  const first = Array.isArray(sort) ? sort[0] : sort;
  return first === '_doc' || (typeof first === 'object' && first !== null && '_doc' in first);
}

/** The hits total of a response (0 when the request did not count them). */
export function hitsTotal(response: estypes.SearchResponse<unknown>): number {
  const total = response.hits?.total;
  return typeof total === 'number' ? total : (total?.value ?? 0);
}
