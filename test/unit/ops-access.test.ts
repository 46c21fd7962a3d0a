import { describe, expect, it } from 'vitest';
import { opsAccess } from '../../shared/ops-access.ts';

describe('opsAccess', () => {
  it('lets everyone in when no token is configured', () => {
    const allowed = opsAccess(undefined);
    expect(allowed(undefined)).toBe(true);
    expect(allowed('Bearer anything')).toBe(true);
  });

  it('accepts exactly the bearer token, the scheme in any case', () => {
    const allowed = opsAccess('s3cret-token-0123456789');
    expect(allowed('Bearer s3cret-token-0123456789')).toBe(true);
    expect(allowed('bearer s3cret-token-0123456789 ')).toBe(true);
    for (const refused of [
      undefined,
      '',
      'Bearer',
      'Bearer s3cret-token-012345678',
      'Bearer s3cret-token-01234567890',
      's3cret-token-0123456789',
      'Basic s3cret-token-0123456789',
      'Bearer s3cret-token-0123456789 extra',
      ['Bearer s3cret-token-0123456789'],
    ]) {
      expect(allowed(refused as string | undefined)).toBe(false);
    }
  });
});
