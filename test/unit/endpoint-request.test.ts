import { describe, expect, it } from 'vitest';
import { logsAll } from '../../queries/logs-all.ts';
import { findEndpoint, type EndpointDefinition } from '../../queries/index.ts';
import { usageApiCounts } from '../../queries/usage-api-counts.ts';
import type { Principal } from '../../src/auth/principal.ts';
import { assertEndpointAllowed, sandboxRequest, cacheKey, mergedParameters, redactionRequested, validateParameters } from '../../src/endpoints/request.ts';

const usage = usageApiCounts as unknown as EndpointDefinition;
const everything: Principal = { keyId: 'k', account: 'a', endpoints: 'all', projects: null };

describe('saved endpoints', () => {
  it("are found by name and by UUID, and carry the spec's settings", () => {
    expect(findEndpoint('usage.api-counts')).toBe(usage);
    expect(findEndpoint(logsAll.id.toUpperCase())?.name).toBe('logs.all');
    expect(findEndpoint('nothing')).toBeUndefined();
    expect(usageApiCounts).toMatchObject({ maxRows: 1000, cache: { ttlSeconds: 900, warmEverySeconds: 300 }, sandboxable: true, redactPii: false });
    expect(logsAll).toMatchObject({ maxRows: 1000, cache: null, sandboxable: true, redactPii: false });
  });
});

describe('request rules', () => {
  it('merges query string and body, the body winning, the last repeated value winning', () => {
    expect(mergedParameters({ project: ['a', 'b'], interval: 'hourly' }, { project: 'c', n: 5 })).toEqual({ project: 'c', interval: 'hourly', n: 5 });
    expect(Object.getPrototypeOf(mergedParameters(JSON.parse('{"__proto__": {"project": "x"}}'), undefined))).toBeNull();
  });

  it('checks the endpoint scope by name or id', () => {
    expect(() => assertEndpointAllowed({ ...everything, endpoints: ['logs.all'] }, usage)).toThrow(/may not query endpoint usage.api-counts/);
    expect(() => assertEndpointAllowed({ ...everything, endpoints: [usage.id] }, usage)).not.toThrow();
    expect(() => assertEndpointAllowed(everything, usage)).not.toThrow();
  });

  it('takes a non-empty sql over lql, ignores empty ones and names a non-string one', () => {
    expect(sandboxRequest({ sql: 'select 1', lql: 'x' })).toEqual({ language: 'sql', text: 'select 1' });
    expect(sandboxRequest({ sql: '  ', lql: 'x' })).toEqual({ language: 'lql', text: 'x' });
    expect(sandboxRequest({})).toBeUndefined();
    expect(() => sandboxRequest({ sql: '  ' })).toThrow(/^Query cannot be empty$/);
    expect(() => sandboxRequest({ sql: '', lql: ' ' })).toThrow(/^Query cannot be empty$/);
    expect(() => sandboxRequest({ lql: '' })).toThrow(/^Query cannot be empty$/);
    expect(() => sandboxRequest({ sql: { select: 1 } })).toThrow(/sql must be a string/);
    expect(() => sandboxRequest({ sql: ['a', 'b'] })).toThrow(/got an array/);
    expect(() => sandboxRequest(mergedParameters(undefined, { sql: 5 }))).toThrow(/sql must be a string holding the query text; got number/);
    expect(() => sandboxRequest(mergedParameters(undefined, { lql: true }))).toThrow(/lql must be a string .* got boolean/);
  });

  it('names the parameter and the allowed values when validation fails, and drops undeclared parameters', () => {
    expect(() => validateParameters(usage, { interval: 'weekly', project: 'a' })).toThrow(/interval must be one of hourly, daily, minutely/);
    expect(validateParameters(usage, { interval: 'daily', project: 'a', extra: 'x' })).toEqual({ interval: 'daily', project: 'a' });
    expect(validateParameters(usage, { interval: 'daily', project: 42 })).toEqual({ interval: 'daily', project: '42' });
  });

  const svc = (value: string | string[] | undefined) => ({ 'SVC-ENDPOINT-REDACT-PII': value });
  const lf = (value: string | string[] | undefined) => ({ 'LF-ENDPOINT-REDACT-PII': value });

  it.each([svc, lf])('reads the redaction header and its alias case-insensitively, ignoring surrounding spaces', (as) => {
    expect(redactionRequested(as('TRUE'), usage)).toBe(true);
    expect(redactionRequested(as(' True\t'), usage)).toBe(true);
    expect(redactionRequested(as('false'), usage)).toBe(false);
    expect(redactionRequested(as(' FALSE '), usage)).toBe(false);
    expect(redactionRequested(as(undefined), usage)).toBe(false);
  });

  it.each(['1', 'yes', 'on', '"true"', 'true;', 'true, true', 'true, false', '', 'tru', 'false x'])(
    'refuses the redaction header %j naming the allowed values',
    (value) => {
      expect(() => redactionRequested(svc(value), usage)).toThrow(/^SVC-ENDPOINT-REDACT-PII must be exactly true or false/);
      expect(() => redactionRequested(lf(value), usage)).toThrow(/^LF-ENDPOINT-REDACT-PII must be exactly true or false/);
    },
  );

  it('refuses a repeated redaction header', () => {
    expect(() => redactionRequested(svc(['true', 'true']), usage)).toThrow(/sent 2 times/);
    expect(() => redactionRequested(lf(['true', 'true']), usage)).toThrow(/sent 2 times/);
  });

  it('takes both headers with the same value as one, and refuses them with different values naming both', () => {
    expect(redactionRequested({ ...svc('true'), ...lf(' TRUE ') }, usage)).toBe(true);
    expect(redactionRequested({ ...svc('false'), ...lf('False') }, usage)).toBe(false);
    expect(() => redactionRequested({ ...svc('true'), ...lf('false') }, usage)).toThrow(
      'SVC-ENDPOINT-REDACT-PII: true, LF-ENDPOINT-REDACT-PII: false disagree; send one of these headers, or both with the same value',
    );
  });

  it('builds cache keys from declared parameters in any order, the redaction flag and the project restriction', () => {
    const key = cacheKey(usage, { project: 'a', interval: 'daily' }, false, everything);
    expect(cacheKey(usage, { interval: 'daily', project: 'a' }, false, everything)).toBe(key);
    expect(cacheKey(usage, { interval: 'daily', project: 'a' }, true, everything)).not.toBe(key);
    const limited = cacheKey(usage, { interval: 'daily', project: 'a' }, false, { ...everything, projects: ['y', 'x'] });
    expect(limited).not.toBe(key);
    expect(cacheKey(usage, { interval: 'daily', project: 'a' }, false, { ...everything, keyId: 'other', projects: ['x', 'y'] })).toBe(limited);
  });
});
