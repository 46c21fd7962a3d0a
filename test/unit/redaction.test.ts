import { describe, expect, it } from 'vitest';
import { redactPii, redactText } from '../../src/redaction.ts';

describe('redactText', () => {
  it.each([
    ['GET | 200 | 203.0.113.42 | abc', 'GET | 200 | REDACTED | abc'],
    ['client 10.0.0.1:8080 connected', 'client REDACTED:8080 connected'],
    ['sample anonymised 37.5.20.481 too', 'sample anonymised REDACTED too'],
    ['v6 2001:db8::1 here', 'v6 REDACTED here'],
    ['full 2001:0db8:85a3:0000:0000:8a2e:0370:7334.', 'full REDACTED.'],
    ['[::1]:443', '[REDACTED]:443'],
    ['mapped ::ffff:192.0.2.128 end', 'mapped REDACTED end'],
    ['zone fe80::1%eth0 end', 'zone REDACTED end'],
    ['x-forwarded-for: 198.51.100.7, 2001:db8:0:0:1:0:0:1', 'x-forwarded-for: REDACTED, REDACTED'],
  ])('redacts %j', (input, expected) => {
    expect(redactText(input)).toBe(expected);
  });

  it.each([
    'at 2024-01-01T00:00:00.123456Z',
    'std::io::Error',
    'mac 00:1a:2b:3c:4d:5e',
    'version 1.2.3 released',
    'ratio 12:30',
    'a :: b',
    'token 2001:db8::1x glued to a word',
    'hash deadbeef:cafe',
  ])('leaves %j alone', (input) => {
    expect(redactText(input)).toBe(input);
  });
});

describe('redactPii', () => {
  it('redacts strings at any depth and leaves keys and other types alone', () => {
    const rows = [
      {
        id: '1.2.3.4',
        timestamp: 1_704_067_200_000_000,
        metadata: [{ request: [{ headers: [{ 'x-real-ip': '192.168.1.20', cf_connecting_ip: '2a02:1388:1:2::dead:beef' }], ports: [80, 443], ips: ['10.1.1.1', 'none'] }], ok: true }],
      },
    ];
    const redacted = redactPii(rows);
    expect(redacted).toEqual([
      {
        id: 'REDACTED',
        timestamp: 1_704_067_200_000_000,
        metadata: [{ request: [{ headers: [{ 'x-real-ip': 'REDACTED', cf_connecting_ip: 'REDACTED' }], ports: [80, 443], ips: ['REDACTED', 'none'] }], ok: true }],
      },
    ]);
    expect(rows[0]!.id).toBe('1.2.3.4');
  });
});
