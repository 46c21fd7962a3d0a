import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * API keys look like `lpk_<key id>_<secret>`: the public key id (16 hex digits) names the one stored
 * document to check, the secret is 256 random bits (base64url). Only the SHA-256 of the whole key is
 * stored; a slow password hash buys nothing for a secret with 256 bits of entropy.
 */
const KEY_PATTERN = /^lpk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

export interface NewApiKey {
  keyId: string;
  /** The full key, shown to its owner once. */
  key: string;
  hash: string;
}

export function generateApiKey(): NewApiKey {
  const keyId = randomBytes(8).toString('hex');
  const key = `lpk_${keyId}_${randomBytes(32).toString('base64url')}`;
  return { keyId, key, hash: hashApiKey(key) };
}

/** The key id of a well-formed key, or null for anything else. */
export function keyIdOf(key: string): string | null {
  return KEY_PATTERN.exec(key)?.[1] ?? null;
}

// one-shot hashing: a Hash object per call cost more than the digest itself on every request
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/** The key's SHA-256 as bytes, to compare with a stored hash decoded once (digestsEqual). */
export function apiKeyDigest(key: string): Buffer {
  return hash('sha256', key, 'buffer');
}

/** Constant-time equality of two secrets (hashed first, so their lengths never leak either). */
export function secretsEqual(presented: string, expected: string): boolean {
  return timingSafeEqual(apiKeyDigest(presented), apiKeyDigest(expected));
}

/** Constant-time equality of two SHA-256 digests as bytes. */
export function digestsEqual(a: Buffer, b: Buffer): boolean {
  return a.length === 32 && b.length === 32 && timingSafeEqual(a, b);
}

/** Constant-time equality of two hex SHA-256 digests. */
export function hashesEqual(a: string, b: string): boolean {
  return digestsEqual(Buffer.from(a, 'hex'), Buffer.from(b, 'hex'));
}
