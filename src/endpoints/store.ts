import { errors, type Client, type estypes } from '@elastic/elasticsearch';
import type { EndpointInput, EndpointRecord } from '../../queries/endpoint-record.ts';
import { SEEDED_ENDPOINTS } from '../../queries/seeds.ts';
import { createIndexUnlessExists } from '../../shared/create-index.ts';
import { Conflict } from '../errors.ts';

/** One stored version: `_id` = `<endpoint id>:<version>`, written once and never changed. */
interface EndpointVersionDocument {
  endpoint_id: string;
  version: number;
  name: string;
  /** A deletion is a version of its own, so the history stays whole. */
  deleted: boolean;
  saved_at: string;
  /** The record as the API shows it; never searched. */
  record: EndpointInput;
}

/**
 * Who holds a name: `_id` = `name:<name>`. Two saves racing for one name both try to write it, and
 * only one can; a claim whose endpoint no longer has that name (renamed, deleted) may be taken over.
 */
interface NameClaimDocument {
  endpoint_id: string;
  name: string;
  saved_at: string;
}

/** A claim whose endpoint wrote no version this long after claiming is a save that failed half-way. */
const UNFINISHED_CLAIM_MS = 60_000;

/** A stored version as the management API lists it. */
export interface StoredVersion {
  record: EndpointRecord;
  deleted: boolean;
}

const ENDPOINT_INDEX_MAPPINGS: estypes.MappingTypeMapping = {
  dynamic: 'strict',
  properties: {
    endpoint_id: { type: 'keyword' },
    version: { type: 'integer' },
    name: { type: 'keyword' },
    deleted: { type: 'boolean' },
    saved_at: { type: 'date' },
    record: { type: 'object', enabled: false },
  },
};

/** Every endpoint's versions fit one search: the API refuses more endpoints than this. */
export const MAX_ENDPOINTS = 10_000;

export function endpointIndexName(indexPrefix: string): string {
  return `${indexPrefix}endpoints`;
}

function toStored(document: EndpointVersionDocument): StoredVersion {
  return { record: { ...document.record, id: document.endpoint_id, version: document.version, savedAt: document.saved_at }, deleted: document.deleted };
}

function isConflict(error: unknown): boolean {
  return error instanceof errors.ResponseError && error.statusCode === 409;
}

/**
 * Saved endpoints in Elasticsearch, index `<INDEX_PREFIX>endpoints`, one document per version.
 * Every save appends a version under an id no other save can take (a racing save gets 409), so
 * nothing is overwritten in place and every replica reads the same history.
 */
export class EndpointStore {
  readonly index: string;

  constructor(
    private readonly elasticsearch: Client,
    indexPrefix: string,
    /** ELASTICSEARCH_INDEX_REPLICAS: on a cluster, endpoints stay readable while a node is down. */
    private readonly replicas: number,
  ) {
    this.index = endpointIndexName(indexPrefix);
  }

  /** Creates the index unless it exists, and writes version 1 of each seeded endpoint that has none. */
  async ensureIndex(): Promise<void> {
    await createIndexUnlessExists(this.elasticsearch, {
      index: this.index,
      settings: { number_of_shards: 1, number_of_replicas: this.replicas },
      mappings: ENDPOINT_INDEX_MAPPINGS,
    });
    for (const seed of SEEDED_ENDPOINTS) {
      const { id, ...input } = seed.record;
      try {
        await this.write({ endpoint_id: id, version: 1, name: input.name, deleted: false, saved_at: new Date().toISOString(), record: input });
        await this.claimName(input.name, id);
      } catch (error) {
        // another replica seeded it, or it was seeded at an earlier start
        if (!(error instanceof Conflict)) throw error;
      }
    }
  }

  /** The latest version of every endpoint that is not deleted. */
  async current(): Promise<EndpointRecord[]> {
    const result = await this.elasticsearch.search<EndpointVersionDocument>({
      index: this.index,
      size: MAX_ENDPOINTS,
      // name claims have no version: only versions are read
      query: { exists: { field: 'version' } },
      collapse: { field: 'endpoint_id' },
      sort: [{ version: 'desc' }],
    });
    return result.hits.hits
      .flatMap((hit) => (hit._source ? [toStored(hit._source)] : []))
      .filter((stored) => !stored.deleted)
      .map((stored) => stored.record);
  }

  /** Every version of one endpoint, oldest first; empty when there is no such endpoint. */
  async versions(id: string): Promise<StoredVersion[]> {
    const result = await this.elasticsearch.search<EndpointVersionDocument>({
      index: this.index,
      size: MAX_ENDPOINTS,
      query: { bool: { filter: [{ term: { endpoint_id: id } }, { exists: { field: 'version' } }] } },
      sort: [{ version: 'asc' }],
    });
    return result.hits.hits.flatMap((hit) => (hit._source ? [toStored(hit._source)] : []));
  }

  /**
   * Stores `version` of an endpoint; Conflict when that version exists (a concurrent save took it)
   * or when another endpoint holds its name.
   */
  async append(id: string, version: number, input: EndpointInput, deleted = false): Promise<EndpointRecord> {
    if (!deleted) await this.claimName(input.name, id);
    const document: EndpointVersionDocument = { endpoint_id: id, version, name: input.name, deleted, saved_at: new Date().toISOString(), record: input };
    await this.write(document);
    return toStored(document).record;
  }

  /** Makes `id` the holder of `name`, unless an endpoint that still has that name holds it. */
  private async claimName(name: string, id: string): Promise<void> {
    const claimId = `name:${name}`;
    const claim: NameClaimDocument = { endpoint_id: id, name, saved_at: new Date().toISOString() };
    try {
      await this.elasticsearch.create({ index: this.index, id: claimId, document: claim, refresh: true });
      return;
    } catch (error) {
      if (!isConflict(error)) throw error;
    }
    const held = await this.elasticsearch.get<NameClaimDocument>({ index: this.index, id: claimId });
    const holder = held._source!.endpoint_id;
    if (holder === id) return;
    const latest = (await this.versions(holder)).at(-1);
    const taken = () => new Conflict(`the name ${name} is taken by endpoint ${holder}; choose another or edit that one`, 'name_taken');
    // no version yet: the holder's first save is under way, unless it was left unfinished long ago
    const stillSaving = latest === undefined && Date.now() - Date.parse(held._source!.saved_at) < UNFINISHED_CLAIM_MS;
    if (stillSaving || (latest && !latest.deleted && latest.record.name === name)) throw taken();
    try {
      // the holder let the name go: take it over, unless another save does so first
      const unchanged = { if_seq_no: held._seq_no, if_primary_term: held._primary_term };
      await this.elasticsearch.index({ index: this.index, id: claimId, document: claim, ...unchanged, refresh: true });
    } catch (error) {
      if (isConflict(error)) throw taken();
      throw error;
    }
  }

  private async write(document: EndpointVersionDocument): Promise<void> {
    try {
      // searchable on return (saves are rare, so forcing a refresh costs little): a replica reading right after sees it
      await this.elasticsearch.create({ index: this.index, id: `${document.endpoint_id}:${document.version}`, document, refresh: true });
    } catch (error) {
      if (isConflict(error)) {
        const message = `endpoint ${document.endpoint_id} was changed by another save (version ${document.version} exists); read it again and retry`;
        throw new Conflict(message, 'endpoint_changed');
      }
      throw error;
    }
  }
}
