import { describe, expect, it } from 'vitest';
import { ENDPOINTS } from '../../queries/index.ts';
import { generateApiKey, hashApiKey, hashesEqual, keyIdOf, secretsEqual } from '../../src/auth/api-key.ts';
import { presentedKey } from '../../src/auth/authenticator.ts';
import { KeysUsageError, keyTable, parseKeysCommand } from '../../src/auth/keys-command.ts';
import { Unauthorized } from '../../src/errors.ts';

describe('API key format', () => {
  it('carries a public key id and 256 random bits', () => {
    const { key, keyId, hash } = generateApiKey();
    expect(key).toMatch(/^lpk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(key.split('_').slice(2).join('_'), 'base64url')).toHaveLength(32);
    expect(keyIdOf(key)).toBe(keyId);
    expect(hash).toBe(hashApiKey(key));
  });

  it('never repeats', () => {
    const keys = new Set(Array.from({ length: 1000 }, () => generateApiKey().key));
    expect(keys.size).toBe(1000);
  });

  it('rejects anything that is not a well-formed key', () => {
    const { key } = generateApiKey();
    expect(keyIdOf(`${key}x`)).toBeNull();
    expect(keyIdOf(key.replace('lpk_', 'xyz_'))).toBeNull();
    expect(keyIdOf('lpk_0123456789abcdef_short')).toBeNull();
    expect(keyIdOf('')).toBeNull();
  });

  it('compares secrets and hashes exactly', () => {
    expect(secretsEqual('bootstrap-key-123456', 'bootstrap-key-123456')).toBe(true);
    expect(secretsEqual('bootstrap-key-123456', 'bootstrap-key-12345')).toBe(false);
    const hash = hashApiKey('a');
    expect(hashesEqual(hash, hashApiKey('a'))).toBe(true);
    expect(hashesEqual(hash, hashApiKey('b'))).toBe(false);
    expect(hashesEqual(hash, 'not hex')).toBe(false);
  });
});

describe('presentedKey', () => {
  it('reads X-API-KEY first, then Authorization: Bearer (any letter case)', () => {
    expect(presentedKey({ 'x-api-key': ' k1 ', authorization: 'Bearer k2' })).toBe('k1');
    expect(presentedKey({ authorization: 'Bearer k2' })).toBe('k2');
    expect(presentedKey({ authorization: 'bearer   k3' })).toBe('k3');
  });

  it('is undefined when no key is sent', () => {
    expect(presentedKey({})).toBeUndefined();
    expect(presentedKey({ 'x-api-key': '', authorization: '  ' })).toBeUndefined();
  });

  it('refuses another Authorization scheme, saying how to send the key', () => {
    expect(() => presentedKey({ authorization: 'Basic dXNlcjpwYXNz' })).toThrow(Unauthorized);
    expect(() => presentedKey({ authorization: 'Basic dXNlcjpwYXNz' })).toThrow(/Bearer <key>.*X-API-KEY/);
  });
});

describe('npm run keys arguments', () => {
  it('creates an operator key with --admin', () => {
    expect(parseKeysCommand(['create', '--account', 'ops', '--admin'], ENDPOINTS)).toEqual({
      action: 'create',
      account: 'ops',
      endpoints: 'all',
      projects: null,
      admin: true,
    });
  });

  it('creates a key for every endpoint and project by default', () => {
    expect(parseKeysCommand(['create', '--account', 'acme'], ENDPOINTS)).toEqual({ action: 'create', account: 'acme', endpoints: 'all', projects: null });
  });

  it('limits a key to endpoints (by name or id, stored as ids, which outlive a rename) and projects', () => {
    const logsAll = ENDPOINTS.find((e) => e.name === 'logs.all')!;
    const usage = ENDPOINTS.find((e) => e.name === 'usage.api-counts')!;
    expect(
      parseKeysCommand(['create', '--account', 'acme', '--endpoints', `usage.api-counts, ${logsAll.id.toUpperCase()}`, '--projects', 'p1,p2'], ENDPOINTS),
    ).toEqual({
      action: 'create',
      account: 'acme',
      endpoints: [usage.id, logsAll.id],
      projects: ['p1', 'p2'],
    });
  });

  it('names what is wrong', () => {
    expect(() => parseKeysCommand(['create'], ENDPOINTS)).toThrow(/--account/);
    expect(() => parseKeysCommand(['create', '--account', 'a', '--endpoints', 'logs.everything'], ENDPOINTS)).toThrow(
      /unknown endpoint "logs.everything".*usage.api-counts, logs.all/,
    );
    expect(() => parseKeysCommand(['create', '--account', 'a', '--projects', ','], ENDPOINTS)).toThrow(/--projects/);
    expect(() => parseKeysCommand(['revoke'], ENDPOINTS)).toThrow(/key id/);
    expect(() => parseKeysCommand(['rotate'], ENDPOINTS)).toThrow(KeysUsageError);
    expect(() => parseKeysCommand([], ENDPOINTS)).toThrow(/missing command/);
  });

  it('parses list and revoke', () => {
    expect(parseKeysCommand(['list', '--json'], ENDPOINTS)).toEqual({ action: 'list', json: true });
    expect(parseKeysCommand(['revoke', 'abc'], ENDPOINTS)).toEqual({ action: 'revoke', keyId: 'abc' });
  });

  it('lists keys as a table of id, account, scopes, projects, created, revoked', () => {
    const table = keyTable([
      { keyId: '0123456789abcdef', account: 'acme', endpoints: 'all', projects: null, createdAt: '2024-01-01T00:00:00.000Z', revokedAt: null },
      {
        keyId: 'fedcba9876543210',
        account: 'b',
        endpoints: ['logs.all'],
        projects: ['p1', 'p2'],
        createdAt: '2024-01-02T00:00:00.000Z',
        revokedAt: '2024-01-03T00:00:00.000Z',
      },
    ]).split('\n');
    expect(table[0]).toMatch(/^KEY ID +ACCOUNT +ENDPOINTS +PROJECTS +CREATED +REVOKED$/);
    expect(table[1]!.split(/ +/)).toEqual(['0123456789abcdef', 'acme', 'all', 'all', '2024-01-01T00:00:00.000Z', '-']);
    expect(table[2]!.split(/ +/)).toEqual(['fedcba9876543210', 'b', 'logs.all', 'p1,p2', '2024-01-02T00:00:00.000Z', '2024-01-03T00:00:00.000Z']);
  });

  it("shows a key's endpoint ids by the endpoints' names now, and an id no endpoint has as it is", () => {
    const logsAll = ENDPOINTS.find((e) => e.name === 'logs.all')!;
    const renamed = [{ id: logsAll.id, name: 'logs.everything' }];
    const record = {
      keyId: 'fedcba9876543210',
      account: 'b',
      endpoints: [logsAll.id, 'gone-id'],
      projects: null,
      createdAt: '2024-01-02T00:00:00.000Z',
      revokedAt: null,
    };
    expect(keyTable([record], renamed).split('\n')[1]!.split(/ +/)[2]).toBe('logs.everything,gone-id');
  });
});
