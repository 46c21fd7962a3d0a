import type { EndpointDefinition } from '../../queries/endpoint.ts';
import type { EndpointRecord } from '../../queries/endpoint-record.ts';
import { SEEDED_ENDPOINTS } from '../../queries/seeds.ts';
import { definitionOf } from '../../queries/stored-endpoint.ts';
import type { Logger } from '../../shared/logger.ts';
import { keyLookUpFailure } from '../auth/authenticator.ts';
import type { EndpointStore } from './store.ts';

/** A stored endpoint as this replica serves it: its latest version and the definition made from it. */
export interface CatalogEntry {
  record: EndpointRecord;
  definition: EndpointDefinition;
}

export interface EndpointCatalogOptions {
  store: EndpointStore;
  logger: Logger;
  /** ENDPOINT_REFRESH_SECONDS: how often the store is read again, the bound on how late another replica's change is seen. */
  refreshSeconds: number;
  /** Called with the id of each endpoint whose version changed or that was deleted since the last read. */
  onChange: (id: string) => void;
}

/** The spec's endpoints as seeded, for look-ups while the store has never been read. */
const SEEDED_ENTRIES: ReadonlyMap<string, CatalogEntry> = new Map(
  SEEDED_ENDPOINTS.map((seed) => {
    // version 1 is what the store seeds; savedAt is unknown without the store
    const record: EndpointRecord = { ...seed.record, version: 1, savedAt: new Date(0).toISOString() };
    return [record.id, { record, definition: definitionOf(record) }];
  }),
);

/** An endpoint by UUID (any letter case), else by name. */
function lookUp(entries: ReadonlyMap<string, CatalogEntry>, idOrName: string): CatalogEntry | undefined {
  const byId = entries.get(idOrName.toLowerCase());
  if (byId) return byId;
  // a loop, not a copied array: twice on every request called by name (the route and its metrics label)
  for (const entry of entries.values()) if (entry.record.name === idOrName) return entry;
  return undefined;
}

/**
 * This replica's view of the endpoint store, read again every refreshSeconds (and at once after
 * this replica's own saves). The store is the truth: the view only spares each request a search.
 * Until the first read succeeds, a look-up reads the store itself; if it cannot, the spec's two
 * endpoints answer as seeded (every query of them reads the store anyway, so what they would do
 * differently once edited is refused 503 there) and any other name is 503, never a 404.
 */
export class EndpointCatalog {
  private entries: Map<string, CatalogEntry> | undefined;
  private indexReady = false;
  private reading: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: EndpointCatalogOptions) {}

  /**
   * The first read, then the periodic refresh. A store that is down is logged, not fatal: the
   * service starts, and requests read the store themselves until a read succeeds.
   */
  async start(): Promise<void> {
    await this.refresh().catch((error: unknown) => this.options.logger.warn({ err: error }, 'cannot read the saved endpoints yet; requests retry the read'));
    this.timer = setInterval(() => {
      // a store slower than the period gets one read at a time, not a queue of them
      if (this.reading) return;
      this.refresh().catch((error: unknown) => this.options.logger.warn({ err: error }, 'refreshing the saved endpoints failed; serving the last ones read'));
    }, this.options.refreshSeconds * 1000);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
  }

  /** The enabled or disabled endpoint a path segment names, by UUID (any letter case) or name. */
  async find(idOrName: string): Promise<CatalogEntry | undefined> {
    try {
      return lookUp(await this.loaded(), idOrName);
    } catch (error) {
      const seeded = lookUp(SEEDED_ENTRIES, idOrName);
      if (seeded) return seeded;
      throw error;
    }
  }

  /** Every endpoint: the seeded ones first, as the spec lists them, then the others by name. */
  async list(): Promise<CatalogEntry[]> {
    const rank = (entry: CatalogEntry) => {
      const seeded = SEEDED_ENDPOINTS.findIndex((seed) => seed.record.id === entry.record.id);
      return seeded === -1 ? SEEDED_ENDPOINTS.length : seeded;
    };
    return [...(await this.loaded()).values()].sort((a, b) => rank(a) - rank(b) || a.record.name.localeCompare(b.record.name));
  }

  /** The last view read, without waiting for the store (for metrics labels and the like). */
  known(idOrName: string): CatalogEntry | undefined {
    return this.entries && lookUp(this.entries, idOrName);
  }

  /**
   * Reads the store now. Reads run one at a time, and each call gets a read that starts after it was
   * made, so a save followed by a refresh always sees the save.
   */
  refresh(): Promise<void> {
    const next = (this.reading ?? Promise.resolve()).catch(() => undefined).then(() => this.read());
    this.reading = next;
    next.then(
      () => this.settled(next),
      () => this.settled(next),
    );
    return next;
  }

  /** Every endpoint of a read made now. */
  async fresh(): Promise<CatalogEntry[]> {
    await this.refresh();
    return this.list();
  }

  private settled(read: Promise<void>): void {
    if (this.reading === read) this.reading = undefined;
  }

  private async loaded(): Promise<Map<string, CatalogEntry>> {
    if (!this.entries) {
      try {
        await this.refresh();
      } catch (error) {
        throw keyLookUpFailure(error, 'cannot read the saved endpoints');
      }
    }
    return this.entries!;
  }

  private async read(): Promise<void> {
    if (!this.indexReady) {
      await this.options.store.ensureIndex();
      this.indexReady = true;
    }
    const records = await this.options.store.current();
    const next = new Map<string, CatalogEntry>();
    for (const record of records) {
      const kept = this.entries?.get(record.id);
      next.set(record.id, kept && kept.record.version === record.version ? kept : { record, definition: definitionOf(record) });
    }
    const previous = this.entries;
    this.entries = next;
    if (!previous) return;
    for (const [id, entry] of previous) {
      if (next.get(id)?.record.version !== entry.record.version) this.options.onChange(id);
    }
  }
}
