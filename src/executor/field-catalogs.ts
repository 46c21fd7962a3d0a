import type { Client } from '@elastic/elasticsearch';
import { fieldCatalog, type FieldCatalog } from '../planner/field-catalog.ts';
import { sourceIndexPattern } from '../../shared/partitions.ts';
import type { SourceName } from '../../shared/sources.ts';
import { fieldTypes } from './elasticsearch.ts';

/**
 * The mapped field types of each source (all its partitions together), read with _field_caps and kept for a short while:
 * a new field appears in the mapping when its first event is indexed, and until then a predicate
 * on it is simply not pushed down (the engine still applies it).
 */
export class FieldCatalogs {
  private readonly cached = new Map<string, { catalog: FieldCatalog; readAt: number }>();

  constructor(
    private readonly client: Client,
    private readonly ttlMs: number,
    private readonly clock: { now(): number },
    private readonly timeoutMs: number,
  ) {}

  /** Each source's field types, over all its partitions; `fresh` reads them again whatever is kept. */
  async forSources(indexPrefix: string, sources: readonly SourceName[], options: { fresh?: boolean } = {}): Promise<Map<string, FieldCatalog>> {
    const entries = await Promise.all(
      [...new Set(sources)].map(async (source) => [source, await this.forIndex(sourceIndexPattern(indexPrefix, source), options.fresh ?? false)] as const),
    );
    return new Map(entries);
  }

  private async forIndex(index: string, fresh: boolean): Promise<FieldCatalog> {
    const now = this.clock.now();
    const hit = this.cached.get(index);
    if (hit && !fresh && now - hit.readAt < this.ttlMs) return hit.catalog;
    const catalog = fieldCatalog(await fieldTypes(index, { elasticsearch: this.client, timeoutMs: this.timeoutMs }));
    this.cached.set(index, { catalog, readAt: now });
    return catalog;
  }
}
