import { errors as elasticsearchErrors } from '@elastic/elasticsearch';
import type { Clock } from '../cache/clock.ts';
import { StoreUnavailable, Unauthorized } from '../errors.ts';
import { timingSafeEqual } from 'node:crypto';
import { apiKeyDigest, digestsEqual, keyIdOf } from './api-key.ts';
import type { ApiKeyRecord, KeyStore } from './key-store.ts';
import type { Principal } from './principal.ts';

const HOW_TO_SEND = 'send it in the X-API-KEY header or as Authorization: Bearer <key>';

export const BOOTSTRAP_PRINCIPAL: Principal = { keyId: 'bootstrap', account: 'bootstrap', endpoints: 'all', projects: null };

/** Verified keys remembered at most this many; the oldest is forgotten first. */
const MAX_REMEMBERED_KEYS = 10_000;

export interface AuthenticatorOptions {
  keyStore: KeyStore;
  bootstrapKey: string | undefined;
  clock: Clock;
  /** How long a verified key is trusted without asking Elasticsearch again: the bound on how late a revoke takes effect. */
  cacheSeconds: number;
  /**
   * How long a key id Elasticsearch does not know is refused without asking again (default 0):
   * guessing ids then costs no store look-up, and a new key may be refused this long if its id was tried before.
   */
  missCacheSeconds?: number;
}

interface RememberedKey {
  record: ApiKeyRecord;
  /** The stored hash as bytes, decoded once per look-up rather than on every request. */
  digest: Buffer;
  verifiedAt: number;
  /** The key's principal, made once: requests share it and never change it. */
  principal: Principal;
  /**
   * The key text whose SHA-256 matched `digest`, once a request presented it: the same text is then
   * accepted by a constant-time comparison instead of hashing it again on every request.
   */
  text?: Buffer;
}

// made only when refused: an error captures a stack, a cost the profile showed on every cached answer
const invalidKey = () => new Unauthorized(`invalid API key: no such key; ${HOW_TO_SEND}, exactly as printed by npm run keys -- create`);

/**
 * The key a request presents, from X-API-KEY or `Authorization: Bearer`; undefined when it sends none.
 * An Authorization header of another scheme is an error rather than "no key", so the caller learns why.
 */
export function presentedKey(headers: Record<string, string | string[] | undefined>): string | undefined {
  const header = headers['x-api-key'];
  const apiKey = (Array.isArray(header) ? header[0] : header)?.trim();
  if (apiKey) return apiKey;
  const authorization = headers.authorization?.toString().trim();
  if (!authorization) return undefined;
  const bearer = /^Bearer\s+(\S+)$/i.exec(authorization);
  if (!bearer) throw new Unauthorized('the Authorization header must be "Bearer <key>"; or send the key in the X-API-KEY header');
  return bearer[1];
}

export function principalOf(record: ApiKeyRecord): Principal {
  const principal: Principal = { keyId: record.keyId, account: record.account, endpoints: record.endpoints, projects: record.projects };
  return record.admin ? { ...principal, admin: true } : principal;
}

/** Who sends OPS_TOKEN to the endpoint management routes: an operator, limited to nothing. */
export const OPERATOR_PRINCIPAL: Principal = { keyId: 'ops-token', account: 'operator', endpoints: 'all', projects: null, admin: true };

/**
 * What a failed key (or endpoint) look-up means for the caller: the store's state (503), never the key's fault
 * (401) nor a bug (500). A node still recovering its shards after a restart answers 503 itself.
 */
export function keyLookUpFailure(error: unknown, action = 'cannot verify the API key'): Error {
  if (error instanceof elasticsearchErrors.ConnectionError || error instanceof elasticsearchErrors.NoLivingConnectionsError) {
    return new StoreUnavailable(`${action}: Elasticsearch is unreachable; retry shortly`);
  }
  if (error instanceof elasticsearchErrors.TimeoutError) {
    return new StoreUnavailable(`${action}: Elasticsearch did not answer in time; retry shortly`);
  }
  if (error instanceof elasticsearchErrors.ResponseError && (error.statusCode === 429 || (error.statusCode ?? 0) >= 500)) {
    return new StoreUnavailable(`${action}: Elasticsearch refused the look-up (status ${error.statusCode}); retry shortly`);
  }
  return error instanceof Error ? error : new Error(String(error));
}

/** Whether a key's text is the one remembered as verified, in time independent of where they differ. */
function sameText(presented: string, remembered: Buffer): boolean {
  const bytes = Buffer.from(presented, 'utf8');
  return bytes.length === remembered.length && timingSafeEqual(bytes, remembered);
}

/** The principal of a key not revoked; else a refusal. */
function unlessRevoked(keyId: string, stored: RememberedKey): Principal {
  if (stored.record.revokedAt !== null) {
    throw new Unauthorized(`this API key (id ${keyId}) was revoked at ${stored.record.revokedAt}; ask for a new key`);
  }
  return stored.principal;
}

/** The principal of a presented key whose digest matches the stored one and which is not revoked; else a refusal. */
function verified(keyId: string, key: string, presented: Buffer, stored: RememberedKey | null): Principal {
  if (!stored || !digestsEqual(presented, stored.digest)) throw invalidKey();
  stored.text ??= Buffer.from(key, 'utf8');
  return unlessRevoked(keyId, stored);
}

/** Turns the key a request presents into a Principal, or refuses it with 401. */
export class Authenticator {
  private readonly remembered = new Map<string, RememberedKey>();
  /** Key ids Elasticsearch did not know, and when it said so. */
  private readonly missing = new Map<string, number>();

  /** BOOTSTRAP_API_KEY's SHA-256, compared with each presented key's (constant time, lengths never compared). */
  private readonly bootstrapDigest: Buffer | undefined;

  constructor(private readonly options: AuthenticatorOptions) {
    this.bootstrapDigest = options.bootstrapKey === undefined ? undefined : apiKeyDigest(options.bootstrapKey);
  }

  /**
   * The principal of the key the request presents, or a refusal (thrown or rejected). Answered at once,
   * without a promise, for the bootstrap key and for a key verified within cacheSeconds (every cached
   * answer's case); a promise when Elasticsearch has to be asked.
   */
  authenticate(headers: Record<string, string | string[] | undefined>): Principal | Promise<Principal> {
    const key = presentedKey(headers);
    if (key === undefined) throw new Unauthorized(`missing API key: ${HOW_TO_SEND}`);
    const keyId = keyIdOf(key);
    const remembered = keyId === null ? undefined : this.remembered.get(keyId);
    const fresh = remembered !== undefined && this.options.clock.now() - remembered.verifiedAt < this.options.cacheSeconds * 1000;
    // the text was hashed and matched once in this window (never the bootstrap key's, which is checked first): no hash again
    if (fresh && remembered.text !== undefined && sameText(key, remembered.text)) return unlessRevoked(keyId!, remembered);
    const presented = apiKeyDigest(key);
    if (this.bootstrapDigest !== undefined && digestsEqual(presented, this.bootstrapDigest)) return BOOTSTRAP_PRINCIPAL;
    if (keyId === null) throw invalidKey();
    if (fresh) return verified(keyId, key, presented, remembered);
    return this.lookUp(keyId).then((stored) => verified(keyId, key, presented, stored));
  }

  /**
   * The principal `authenticate` would accept at once, with nothing changed: the bootstrap key, or a
   * key whose text was verified within cacheSeconds and is not revoked. Undefined for anything else
   * (no key, a refusal, a key Elasticsearch must be asked about), which the full path then decides.
   */
  acceptedNow(headers: Record<string, string | string[] | undefined>): Principal | undefined {
    let key: string | undefined;
    try {
      key = presentedKey(headers);
    } catch {
      return undefined;
    }
    if (key === undefined) return undefined;
    const keyId = keyIdOf(key);
    const remembered = keyId === null ? undefined : this.remembered.get(keyId);
    if (remembered?.text !== undefined && this.options.clock.now() - remembered.verifiedAt < this.options.cacheSeconds * 1000) {
      return sameText(key, remembered.text) && remembered.record.revokedAt === null ? remembered.principal : undefined;
    }
    if (this.bootstrapDigest !== undefined && digestsEqual(apiKeyDigest(key), this.bootstrapDigest)) return BOOTSTRAP_PRINCIPAL;
    return undefined;
  }

  /** The key's stored record, from Elasticsearch (or the missing-key cache): the remembered one, if any, is out of date. */
  private async lookUp(keyId: string): Promise<RememberedKey | null> {
    const now = this.options.clock.now();
    this.remembered.delete(keyId);
    const missSeconds = this.options.missCacheSeconds ?? 0;
    const missedAt = this.missing.get(keyId);
    if (missedAt !== undefined && now - missedAt < missSeconds * 1000) return null;
    this.missing.delete(keyId);

    let found: Awaited<ReturnType<KeyStore['find']>>;
    try {
      found = await this.options.keyStore.find(keyId);
    } catch (error) {
      throw keyLookUpFailure(error);
    }
    if (!found) {
      if (missSeconds > 0) {
        this.missing.set(keyId, now);
        if (this.missing.size > MAX_REMEMBERED_KEYS) this.missing.delete(this.missing.keys().next().value!);
      }
      return null;
    }
    const remembered: RememberedKey = { record: found.record, digest: Buffer.from(found.hash, 'hex'), verifiedAt: now, principal: principalOf(found.record) };
    if (this.options.cacheSeconds > 0) {
      this.remembered.set(keyId, remembered);
      if (this.remembered.size > MAX_REMEMBERED_KEYS) this.remembered.delete(this.remembered.keys().next().value!);
    }
    return remembered;
  }
}
