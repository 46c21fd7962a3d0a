import { randomUUID } from 'node:crypto';
import { endpointInputSchema, issuesText, type EndpointInput, type EndpointRecord } from '../../queries/endpoint-record.ts';
import { keyLookUpFailure } from '../auth/authenticator.ts';
import { ApiError, BadParameter, Conflict, InvalidEndpoint, NotFound } from '../errors.ts';
import type { EndpointCatalog } from './catalog.ts';
import { checkSavedQuery, type SavedQueryCheckDependencies } from './saved-query-check.ts';
import { MAX_ENDPOINTS, type EndpointStore, type StoredVersion } from './store.ts';

export interface EndpointManagementOptions {
  store: EndpointStore;
  catalog: EndpointCatalog;
  check: SavedQueryCheckDependencies;
}

/** A version as the API shows it: the record, and whether that save deleted the endpoint. */
export type VersionView = EndpointRecord & { deleted: boolean };

/**
 * What operators do to saved endpoints: every save is checked whole (the record, its name against
 * the others, its SQL through the sandbox pipeline) before it is appended to the store as a new
 * version; nothing is stored when a check fails. Each call reads the store afresh (never a view
 * older than the call), and the view is read again after each save so this replica serves the
 * change at once.
 */
export class EndpointManagement {
  constructor(private readonly options: EndpointManagementOptions) {}

  async list(): Promise<EndpointRecord[]> {
    return this.current();
  }

  async get(idOrName: string): Promise<EndpointRecord> {
    const found = (await this.current()).find((record) => record.id === idOrName.toLowerCase() || record.name === idOrName);
    if (!found) throw new NotFound('no endpoint with this name or UUID (GET /api/endpoints lists them)', 'endpoint_not_found');
    return found;
  }

  async create(body: unknown): Promise<EndpointRecord> {
    const input = parsedInput(body);
    const current = await this.current();
    if (current.length >= MAX_ENDPOINTS)
      throw new Conflict(`the store holds ${MAX_ENDPOINTS} endpoints, the most it serves; delete one first`, 'too_many_endpoints');
    return this.save(randomUUID(), 1, input, current);
  }

  /** PUT: the body is the whole endpoint; anything left out takes its default. */
  async replace(idOrName: string, body: unknown): Promise<EndpointRecord> {
    const existing = await this.get(idOrName);
    return this.save(existing.id, existing.version + 1, parsedInput(body), await this.current());
  }

  /** PATCH: the body's fields replace the stored ones; the result is checked like a whole endpoint. */
  async patch(idOrName: string, body: unknown): Promise<EndpointRecord> {
    const existing = await this.get(idOrName);
    return this.save(existing.id, existing.version + 1, parsedInput({ ...inputOf(existing), ...patchFields(body) }), await this.current());
  }

  /** A deletion is a version of its own: the endpoint answers 404 from then on, and its history stays. */
  async remove(idOrName: string): Promise<EndpointRecord> {
    const existing = await this.get(idOrName);
    const deleted = await this.storeCall(() => this.options.store.append(existing.id, existing.version + 1, inputOf(existing), true));
    await this.options.catalog.refresh();
    return deleted;
  }

  /** Every version of an endpoint, deleted or not, oldest first. */
  async versions(id: string): Promise<VersionView[]> {
    const versions = await this.storeCall(() => this.options.store.versions(id.toLowerCase()));
    if (versions.length === 0) throw new NotFound('no endpoint with this UUID (versions are listed by UUID)', 'endpoint_not_found');
    return versions.map(view);
  }

  /** Saves version `n`'s endpoint again as the newest version (also after a deletion), checked as any save is. */
  async restore(id: string, version: number): Promise<EndpointRecord> {
    const versions = await this.versions(id);
    const wanted = versions.find((candidate) => candidate.version === version);
    if (!wanted || wanted.deleted) {
      const restorable = versions.filter((candidate) => !candidate.deleted).map((candidate) => candidate.version);
      throw new NotFound(`endpoint ${id} has no version ${version} to restore; its versions are ${restorable.join(', ')}`, 'version_not_found');
    }
    return this.save(wanted.id, versions[versions.length - 1]!.version + 1, inputOf(wanted), await this.current());
  }

  private async save(id: string, version: number, input: EndpointInput, current: readonly EndpointRecord[]): Promise<EndpointRecord> {
    const clash = current.find((record) => record.name === input.name && record.id !== id);
    if (clash) throw new Conflict(`the name ${input.name} is taken by endpoint ${clash.id}; choose another or edit that one`, 'name_taken');
    await checkSavedQuery({ ...input, id }, this.options.check);
    const saved = await this.storeCall(() => this.options.store.append(id, version, input));
    await this.options.catalog.refresh();
    return saved;
  }

  /** The endpoints as the store holds them now (a read of its own, which also refreshes this replica's view). */
  private async current(): Promise<EndpointRecord[]> {
    return (await this.storeCall(() => this.options.catalog.fresh())).map((entry) => entry.record);
  }

  private async storeCall<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof ApiError) throw error;
      throw keyLookUpFailure(error, 'cannot read or write the saved endpoints');
    }
  }
}

/** A POST or PUT body as an endpoint, or the error naming what is wrong with it (also the route's body validator). */
export function parsedInput(body: unknown): EndpointInput {
  if (body === undefined) throw new BadParameter('send the endpoint as a JSON body (content-type: application/json)', 'bad_request');
  const parsed = endpointInputSchema.safeParse(body);
  if (!parsed.success) throw new InvalidEndpoint(issuesText(parsed.error));
  return parsed.data;
}

/** A PATCH body as the fields to change, or the error saying it is not (also the route's body validator). */
export function patchFields(body: unknown): object {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new InvalidEndpoint('a PATCH body must be a JSON object holding the fields to change');
  return body;
}

function inputOf(record: EndpointRecord): EndpointInput {
  const { id: _id, version: _version, savedAt: _savedAt, ...input } = record;
  return input;
}

function view(stored: StoredVersion): VersionView {
  return { ...stored.record, deleted: stored.deleted };
}
