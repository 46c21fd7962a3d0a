import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOTSTRAP_KEY, startEndpointServer, type EndpointTestServer } from '../support/endpoint-server.ts';

const NOW = Date.UTC(2024, 0, 1, 1);
const ADDRESS = '203.0.113.50';
let server: EndpointTestServer;

beforeAll(async () => {
  server = await startEndpointServer({ now: NOW, overrides: { RATE_LIMIT_PER_MINUTE: '0' } });
}, 180_000);

afterAll(async () => {
  await server?.close();
});

async function ask(sql: string, redact: string | undefined): Promise<{ status: number; body: { error?: { code: string; message: string } } }> {
  const headers: Record<string, string> = { 'x-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' };
  if (redact !== undefined) headers['svc-endpoint-redact-pii'] = redact;
  const response = await server.app.inject({ method: 'POST', url: '/api/endpoints/query/logs.all', headers, payload: { project: 'default', sql } });
  return { status: response.statusCode, body: response.json() };
}

// issue 18 finding 9: an error message quotes the value that failed; with redaction on it must not carry an address
describe('error messages under PII redaction', () => {
  const failing = [
    `select cast(ip as int64) as n from unnest(['${ADDRESS}']) as ip`,
    `select parse_timestamp('%Y', ip) as t from unnest(['${ADDRESS}']) as ip`,
    `select * from edge_logs where timestamp > '${ADDRESS}'`,
  ];

  it.each(failing)('redacts the address in the message of %s', async (sql) => {
    const redacted = await ask(sql, 'true');
    expect(redacted.status).toBe(400);
    expect(redacted.body.error?.message).not.toContain(ADDRESS);
    expect(redacted.body.error?.message).toContain('REDACTED');
    // the same failure without redaction still names the value, so the caller can fix it
    const clear = await ask(sql, 'false');
    expect(clear.status).toBe(400);
    expect(clear.body.error?.code).toBe(redacted.body.error?.code);
    expect(clear.body.error?.message).toContain(ADDRESS);
  });

  it('a bad parameter value is redacted too', async () => {
    const response = await server.app.inject({
      method: 'GET',
      url: `/api/endpoints/query/logs.all?project=default&iso_timestamp_start=${ADDRESS}`,
      headers: { 'x-api-key': BOOTSTRAP_KEY, 'svc-endpoint-redact-pii': 'true' },
    });
    expect(response.statusCode).toBe(400);
    expect(response.body).not.toContain(ADDRESS);
  });
});
