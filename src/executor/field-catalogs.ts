import type { Client } from '@elastic/elasticsearch';
import { fieldCatalog, type FieldCatalog } from '../planner/field-catalog.ts';
import { fieldTypes } from './elasticsearch.ts';

/**
 * The mapped field types of each source index, read with _field_caps and kept for a short while:
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

  async forIndices(indices: readonly string[]): Promise<Map<string, FieldCatalog>> {
    const entries = await Promise.all([...new Set(indices)].map(async (index) => [index, await this.forIndex(index)] as const));
    return new Map(entries);
  }

  private async forIndex(index: string): Promise<FieldCatalog> {
    const now = this.clock.now();
    const hit = this.cached.get(index);
    if (hit && now - hit.readAt < this.ttlMs) return hit.catalog;
    const catalog = fieldCatalog(await fieldTypes(index, { elasticsearch: this.client, timeoutMs: this.timeoutMs }));
    this.cached.set(index, { catalog, readAt: now });
    return catalog;
  }
}
