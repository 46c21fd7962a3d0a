import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_FUNCTION_NAMES } from '../../src/sql/functions.ts';
import { ORACLE_CASES, type OracleCase } from '../fixtures/bigquery-oracle.ts';
import { BOOTSTRAP_KEY, edgeEvent, startEndpointServer, storedTimestamp, type EndpointTestServer } from '../support/endpoint-server.ts';

/**
 * The independent oracle: each case's expected rows are BigQuery's documented answer, written by
 * hand in the fixture, never computed by the service's code; each runs over HTTP through the real
 * service and Elasticsearch.
 */

const EVENTS = [
  edgeEvent('oracle-1', storedTimestamp(Date.UTC(2024, 0, 1, 0, 30, 15, 123), 456), 'default', {
    method: 'GET',
    path: '/rest/v1/a',
    url: 'https://x/rest/v1/a',
  }),
  edgeEvent('oracle-2', storedTimestamp(Date.UTC(2024, 0, 1, 0, 10)), 'default', [
    { method: 'GET', path: '/rest/v1/b', url: 'https://x/rest/v1/b' },
    { method: 'GET', path: '/storage/x', url: 'https://x/storage/x' },
  ]),
  edgeEvent('oracle-3', storedTimestamp(Date.UTC(2024, 0, 1, 0, 5)), 'default', { method: 'POST', path: '/auth/v1/token', url: 'https://x/auth/v1/token' }),
  // another project's event, outside every answer
  edgeEvent('oracle-other', storedTimestamp(Date.UTC(2024, 0, 1, 0, 20)), 'other', { method: 'GET', path: '/rest/v1/z', url: 'https://x/rest/v1/z' }),
];

let server: EndpointTestServer;

beforeAll(async () => {
  server = await startEndpointServer({ now: Date.UTC(2024, 0, 1, 1), overrides: { RATE_LIMIT_PER_MINUTE: '0' } });
  await server.index('edge_logs', EVENTS);
}, 60_000);

afterAll(async () => {
  await server?.close();
});

async function query(sql: string) {
  return server.app.inject({
    method: 'POST',
    url: '/api/endpoints/query/logs.all',
    headers: { 'x-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' },
    payload: { project: 'default', iso_timestamp_start: '2023-12-31T23:00:00Z', sql },
  });
}

function canonical(rows: unknown[], unordered: boolean): string[] {
  const texts = rows.map((row) => JSON.stringify(sortKeys(row)));
  return unordered ? texts.sort() : texts;
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([key, inner]) => [key, sortKeys(inner)]),
    );
  return value;
}

/** Whether the service answers as BigQuery documents; the failure message says what it answered. */
async function check(oracle: OracleCase): Promise<void> {
  const response = await query(oracle.sql);
  if (oracle.refused) {
    expect(response.statusCode, response.body).toBe(oracle.refused.status);
    expect(response.json().error.code, response.body).toBe(oracle.refused.code);
    return;
  }
  expect(response.statusCode, response.body).toBe(200);
  const rows = response.json().result as unknown[];
  expect(canonical(rows, oracle.unordered ?? false)).toEqual(canonical(oracle.expected!, oracle.unordered ?? false));
}

function cases(oracles: OracleCase[]): void {
  for (const oracle of oracles) {
    const title = `${oracle.name} (${oracle.source})`;
    if (oracle.knownGap) it.fails(`known gap, ${oracle.knownGap}: ${title}`, () => check(oracle));
    else it(title, () => check(oracle));
  }
}

describe('BigQuery documented answers over HTTP, constant queries', () => {
  cases(ORACLE_CASES.filter((oracle) => !oracle.overEvents));
});

describe('BigQuery documented answers over HTTP, over indexed events', () => {
  cases(ORACLE_CASES.filter((oracle) => oracle.overEvents));
});

describe('the oracle covers the registry', () => {
  it('every allowed function has at least one documented case', () => {
    const covered = new Set(ORACLE_CASES.flatMap((oracle) => oracle.covers));
    expect(SANDBOX_FUNCTION_NAMES.filter((name) => !covered.has(name))).toEqual([]);
  });

  it('every case names its documentation source', () => {
    expect(ORACLE_CASES.filter((oracle) => !/^(example|semantics): \S/.test(oracle.source)).map((oracle) => oracle.name)).toEqual([]);
  });
});
