import { errors, type Client, type estypes } from '@elastic/elasticsearch';
import { createIndexUnlessExists } from '../../shared/create-index.ts';
import { generateApiKey } from './api-key.ts';
import type { Principal } from './principal.ts';

/** What is known about a key, never the key itself or its hash: the principal it authenticates, and its life. */
export interface ApiKeyRecord extends Principal {
  createdAt: string;
  revokedAt: string | null;
}

export interface NewKeyRequest {
  account: string;
  endpoints: 'all' | string[];
  projects: string[] | null;
  /** An operator key: it may also manage the saved endpoints. */
  admin?: boolean;
}

/** The stored document: one per key, `_id` = key id. */
interface ApiKeyDocument {
  key_id: string;
  account: string;
  /** null = every endpoint */
  endpoints: string[] | null;
  /** null = every project */
  projects: string[] | null;
  created_at: string;
  revoked_at: string | null;
  key_sha256: string;
  /** Absent on keys made before operator keys existed. */
  admin?: boolean;
}

const KEY_INDEX_MAPPINGS: estypes.MappingTypeMapping = {
  dynamic: 'strict',
  properties: {
    key_id: { type: 'keyword' },
    account: { type: 'keyword' },
    endpoints: { type: 'keyword' },
    projects: { type: 'keyword' },
    created_at: { type: 'date' },
    revoked_at: { type: 'date' },
    admin: { type: 'boolean' },
    // compared only after a get by id: never searched
    key_sha256: { type: 'keyword', index: false, doc_values: false },
  },
};

export function apiKeyIndexName(indexPrefix: string): string {
  return `${indexPrefix}api-keys`;
}

function toRecord(document: ApiKeyDocument): ApiKeyRecord {
  return {
    keyId: document.key_id,
    account: document.account,
    endpoints: document.endpoints ?? 'all',
    projects: document.projects,
    createdAt: document.created_at,
    revokedAt: document.revoked_at,
    ...(document.admin === true ? { admin: true as const } : {}),
  };
}

function isNotFound(error: unknown): boolean {
  return error instanceof errors.ResponseError && error.statusCode === 404;
}

function checkedList(label: string, values: string[]): string[] {
  const cleaned = [...new Set(values.map((value) => value.trim()))];
  if (cleaned.length === 0 || cleaned.some((value) => value === '')) {
    throw new Error(`${label} must be a non-empty comma-separated list without empty names`);
  }
  return cleaned;
}

/** API keys in Elasticsearch, index `<INDEX_PREFIX>api-keys`, stored only as SHA-256 hashes. */
export class KeyStore {
  readonly index: string;

  constructor(
    private readonly elasticsearch: Client,
    indexPrefix: string,
    /** ELASTICSEARCH_INDEX_REPLICAS: on a cluster, keys stay readable while a node is down. */
    private readonly replicas: number,
    /** Bound on one key look-up (the client's own default is 30 s): a stalled store must not hold every request. */
    private readonly lookUpTimeoutMs?: number,
  ) {
    this.index = apiKeyIndexName(indexPrefix);
  }

  async ensureIndex(): Promise<void> {
    const created = await createIndexUnlessExists(this.elasticsearch, {
      index: this.index,
      settings: { number_of_shards: 1, number_of_replicas: this.replicas },
      mappings: KEY_INDEX_MAPPINGS,
    });
    // an index made before a field existed learns it (adding a field to a mapping is allowed in place)
    if (!created) await this.elasticsearch.indices.putMapping({ index: this.index, properties: KEY_INDEX_MAPPINGS.properties });
  }

  /** Creates a key; the returned `key` is the only time it exists outside its owner's hands. */
  async create(request: NewKeyRequest): Promise<{ key: string; record: ApiKeyRecord }> {
    const account = request.account.trim();
    if (account === '') throw new Error('account must not be empty');
    await this.ensureIndex();
    const generated = generateApiKey();
    const document: ApiKeyDocument = {
      key_id: generated.keyId,
      account,
      endpoints: request.endpoints === 'all' ? null : checkedList('endpoints', request.endpoints),
      projects: request.projects === null ? null : checkedList('projects', request.projects),
      created_at: new Date().toISOString(),
      revoked_at: null,
      key_sha256: generated.hash,
      ...(request.admin === true ? { admin: true } : {}),
    };
    await this.elasticsearch.create({ index: this.index, id: generated.keyId, document, refresh: true });
    return { key: generated.key, record: toRecord(document) };
  }

  /** The record and stored hash of one key, or null when there is no such key. */
  async find(keyId: string): Promise<{ record: ApiKeyRecord; hash: string } | null> {
    try {
      const found = await this.elasticsearch.get<ApiKeyDocument>(
        { index: this.index, id: keyId },
        this.lookUpTimeoutMs === undefined ? undefined : { requestTimeout: this.lookUpTimeoutMs },
      );
      if (!found.found || !found._source) return null;
      return { record: toRecord(found._source), hash: found._source.key_sha256 };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async list(): Promise<ApiKeyRecord[]> {
    try {
      const result = await this.elasticsearch.search<ApiKeyDocument>({
        index: this.index,
        size: 10_000,
        sort: [{ created_at: 'asc' }, { key_id: 'asc' }],
        _source: { excludes: ['key_sha256'] },
      });
      return result.hits.hits.flatMap((hit) => (hit._source ? [toRecord(hit._source)] : []));
    } catch (error) {
      if (isNotFound(error)) return [];
      throw error;
    }
  }

  /** Marks a key revoked (idempotent); null when there is no such key. */
  async revoke(keyId: string): Promise<ApiKeyRecord | null> {
    const existing = await this.find(keyId);
    if (!existing) return null;
    if (existing.record.revokedAt !== null) return existing.record;
    const revokedAt = new Date().toISOString();
    await this.elasticsearch.update({ index: this.index, id: keyId, doc: { revoked_at: revokedAt }, refresh: true });
    return { ...existing.record, revokedAt };
  }
}
