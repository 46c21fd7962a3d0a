import { describe, expect, it } from 'vitest';
import { parseEndpointsCommand } from '../../src/endpoints/endpoints-command.ts';
import { parseExposition, usageRows, usageTable } from '../../src/endpoints/usage-table.ts';

/** /metrics as the query service writes it: other series around the usage ones, a label value with escapes. */
const SAMPLE = `# HELP http_requests_total HTTP requests answered
# TYPE http_requests_total counter
http_requests_total{endpoint="logs.all",status="200"} 12
# HELP endpoint_requests_total Requests to the query route
# TYPE endpoint_requests_total counter
endpoint_requests_total{endpoint="logs.all",key_id="bootstrap",status="200"} 8
endpoint_requests_total{endpoint="logs.all",key_id="bootstrap",status="400"} 1
endpoint_requests_total{endpoint="logs.all",key_id="bootstrap",status="504"} 1
endpoint_requests_total{endpoint="unknown_endpoint",key_id="a1b2",status="404"} 3
endpoint_requests_total{endpoint="odd \\"name\\"",key_id="other",status="200"} 0
# TYPE endpoint_request_duration_seconds histogram
endpoint_request_duration_seconds_bucket{le="0.01",endpoint="logs.all",key_id="bootstrap"} 2
endpoint_request_duration_seconds_bucket{le="0.1",endpoint="logs.all",key_id="bootstrap"} 6
endpoint_request_duration_seconds_bucket{le="1",endpoint="logs.all",key_id="bootstrap"} 10
endpoint_request_duration_seconds_bucket{le="+Inf",endpoint="logs.all",key_id="bootstrap"} 10
endpoint_request_duration_seconds_sum{endpoint="logs.all",key_id="bootstrap"} 1.5
endpoint_request_duration_seconds_count{endpoint="logs.all",key_id="bootstrap"} 10
endpoint_request_duration_seconds_bucket{le="0.01",endpoint="unknown_endpoint",key_id="a1b2"} 3
endpoint_request_duration_seconds_bucket{le="+Inf",endpoint="unknown_endpoint",key_id="a1b2"} 3
endpoint_request_duration_seconds_sum{endpoint="unknown_endpoint",key_id="a1b2"} 0.006
endpoint_request_duration_seconds_count{endpoint="unknown_endpoint",key_id="a1b2"} 3
endpoint_rows_returned_total{endpoint="logs.all",key_id="bootstrap"} 800
endpoint_rows_returned_total{endpoint="unknown_endpoint",key_id="a1b2"} 0
endpoint_bytes_returned_total{endpoint="logs.all",key_id="bootstrap"} 3145728
endpoint_bytes_returned_total{endpoint="unknown_endpoint",key_id="a1b2"} 390
`;

describe('npm run endpoints -- usage', () => {
  it('reads the usage series per endpoint and key id, most requests first', () => {
    const rows = usageRows(parseExposition(SAMPLE));
    expect(rows.map((row) => [row.endpoint, row.keyId, row.requests])).toEqual([
      ['logs.all', 'bootstrap', 10],
      ['unknown_endpoint', 'a1b2', 3],
      ['odd "name"', 'other', 0],
    ]);
    const [logs] = rows;
    expect(logs!.errors).toEqual({ '400': 1, '504': 1 });
    expect(logs!.rows).toBe(800);
    expect(logs!.bytes).toBe(3145728);
    expect(logs!.meanSeconds).toBeCloseTo(0.15);
    // rank 5 of 10 lies in (0.01, 0.1], 3 of its 4: 0.01 + 0.09 * 3/4
    expect(logs!.p50Seconds).toBeCloseTo(0.0775);
    // rank 9.9 lies in (0.1, 1], 3.9 of its 4
    expect(logs!.p99Seconds).toBeCloseTo(0.9775);
  });

  it('prints one aligned line per endpoint and key', () => {
    expect(usageTable(usageRows(parseExposition(SAMPLE)))).toBe(
      [
        'ENDPOINT          KEY        REQUESTS  ERRORS              P50 MS  P99 MS  MEAN MS  ROWS    BYTES',
        'logs.all          bootstrap        10  2 (400: 1, 504: 1)    77.5   977.5    150.0   800  3.0 MiB',
        'unknown_endpoint  a1b2              3  3 (404: 3)             5.0     9.9      2.0     0    390 B',
        'odd "name"        other             0  0                        -       -        -     0      0 B',
      ].join('\n'),
    );
  });

  it('says so when nothing was counted, and names a line it cannot read', () => {
    expect(usageTable(usageRows(parseExposition('# HELP x y\n\n')))).toBe('no query requests counted yet');
    expect(() => parseExposition('endpoint_requests_total{endpoint="a} 1')).toThrow(/line 1 of the metrics/);
  });

  it('parses the usage command', () => {
    expect(parseEndpointsCommand(['usage'])).toEqual({ action: 'usage', json: false });
    expect(parseEndpointsCommand(['usage', '--url', 'http://127.0.0.1:4100', '--json'])).toEqual({ action: 'usage', url: 'http://127.0.0.1:4100', json: true });
    expect(() => parseEndpointsCommand(['list', '--url', 'http://x'])).toThrow(/--url is for usage only/);
    expect(() => parseEndpointsCommand(['usage', 'extra'])).toThrow(/usage needs no argument/);
  });
});
