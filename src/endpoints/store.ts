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
      query: { match_all: {} },
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
      query: { term: { endpoint_id: id } },
      sort: [{ version: 'asc' }],
    });
    return result.hits.hits.flatMap((hit) => (hit._source ? [toStored(hit._source)] : []));
  }

  /** Stores `version` of an endpoint; Conflict when that version exists (a concurrent save took it). */
  async append(id: string, version: number, input: EndpointInput, deleted = false): Promise<EndpointRecord> {
    const document: EndpointVersionDocument = { endpoint_id: id, version, name: input.name, deleted, saved_at: new Date().toISOString(), record: input };
    await this.write(document);
    return toStored(document).record;
  }

  private async write(document: EndpointVersionDocument): Promise<void> {
    try {
      // visible to the next search on return, so a replica reading right after sees it
      await this.elasticsearch.create({ index: this.index, id: `${document.endpoint_id}:${document.version}`, document, refresh: 'wait_for' });
    } catch (error) {
      if (isConflict(error)) throw new Conflict(`endpoint ${document.endpoint_id} was changed by another save (version ${document.version} exists); read it again and retry`, 'endpoint_changed');
      throw error;
    }
  }
}
