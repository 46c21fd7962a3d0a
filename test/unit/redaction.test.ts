import fc from 'fast-check';
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
    // every address the issue found coming back in clear
    ['2001:db8::28: connection refused', 'REDACTED: connection refused'],
    ['ip:2001:db8::4', 'ip:REDACTED'],
    ['ip:::1', 'ip:REDACTED'],
    ['host.2001:db8::7', 'host.REDACTED'],
    ['client_2001:db8::5', 'client_REDACTED'],
    ['2001:db8::6ms', 'REDACTEDms'],
    ['2001:db8:85a3:0:0:8a2e:370:7334:443', 'REDACTED:443'],
    ['https://a.example/p?ip=2001:db8::1_end', 'https://a.example/p?ip=REDACTED_end'],
    ['[2001:db8::9]:8080', '[REDACTED]:8080'],
    ['https://a.example/p?host=%5B2001%3Adb8%3A%3A9%5D&x=1', 'https://a.example/p?host=%5BREDACTED%5D&x=1'],
    ['https://a.example/p?ip=198%2E51%2E100%2E14&x=1', 'https://a.example/p?ip=REDACTED&x=1'],
    // more places an address stands
    ['lower-case escapes 10%2e0%2e0%2e1 and %3a%3a1', 'lower-case escapes REDACTED and REDACTED'],
    ['zone in a URL fe80::1%25eth0&next', 'zone in a URL REDACTED&next'],
    ['IPv4-mapped [::ffff:10.1.2.3]:80', 'IPv4-mapped [REDACTED]:80'],
    ['glued ip10.0.0.1, (192.168.0.1); "172.16.0.9"', 'glued ipREDACTED, (REDACTED); "REDACTED"'],
    ['upper case 2001:DB8::A', 'upper case REDACTED'],
    ['after a dot x.10.0.0.1', 'after a dot x.REDACTED'],
    ['list 10.0.0.1,10.0.0.2;10.0.0.3', 'list REDACTED,REDACTED;REDACTED'],
    ['loopback ::1 and unspecified-ish 0.0.0.0', 'loopback REDACTED and unspecified-ish REDACTED'],
    ['2001:db8::1x glued to a word', 'REDACTEDx glued to a word'],
    ['five parts 1.2.3.4.5 are redacted whole', 'five parts REDACTED are redacted whole'],
    // over-redacted on purpose: a short compressed form after a space is read as an address
    ['css a::before', 'css REDACTEDore'],
  ])('redacts %j', (input, expected) => {
    expect(redactText(input)).toBe(expected);
  });

  // near misses: things that only look like addresses (docs/api.md "Redaction rules")
  it.each([
    'at 2024-01-01T00:00:00.123456Z',
    'took 12:30:45 and 12:30:45.123',
    'std::io::Error in self::add via Foo::Bar and Vec::new',
    'mac 00:1a:2b:3c:4d:5e and 00-1A-2B-3C-4D-5E and 001a.2b3c.4d5e',
    'version 1.2.3 released, v10.20.30-rc.1',
    'ratio 12:30',
    'a :: b',
    'hash deadbeef:cafe, id 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
    'uuid 123e4567-e89b-12d3-a456-426614174000',
    'date 2024.01.31, pi 3.14159, price 1.50',
    'url https://example.com:443/a/b.c?x=%20y%2Fz',
    'c++ std::vector<int>::iterator',
  ])('leaves %j alone', (input) => {
    expect(redactText(input)).toBe(input);
  });

  it('finds every generated address written on its own', () => {
    const address = fc.oneof(
      fc.ipV4(),
      fc.ipV6().filter((text) => text !== '::'),
    );
    fc.assert(
      fc.property(address, (text) => redactText(text) === 'REDACTED'),
      { numRuns: 2000 },
    );
  });

  it('never leaks an address embedded at a random position of random text, however it is written', () => {
    const separator = fc.constantFrom(
      ' ',
      ',',
      ';',
      '/',
      '=',
      '(',
      ')',
      '"',
      "'",
      '<',
      '>',
      '|',
      '\t',
      '\n',
      '@',
      '&',
      '?',
      '#',
      '!',
      '_',
      '-',
      '.',
      ':',
      '[',
      ']',
      '{',
      '}',
    );
    const written = fc.oneof(
      fc.ipV4().map((address) => ({ address, forms: [address, `${address}:8080`, address.replaceAll('.', '%2E')] })),
      fc
        .ipV6()
        .filter((address) => address !== '::')
        .map((address) => ({
          address,
          forms: [address, `[${address}]:443`, `${address}%eth0`, `%5B${address.replaceAll(':', '%3A')}%5D`, `${address.replaceAll(':', '%3a')}`],
        })),
    );
    const filler = fc.string({ unit: 'binary', maxLength: 40 });
    fc.assert(
      fc.property(filler, separator, written, fc.nat(), separator, filler, (left, before, { address, forms }, choice, after, right) => {
        const form = forms[choice % forms.length]!;
        const text = `${left}${before}${form}${after}${right}`;
        const redacted = redactText(text);
        const decoded = redacted.replace(/%2e/gi, '.').replace(/%3a/gi, ':');
        // the filler may hold the address by chance only if it held it before
        return !decoded.includes(address) || `${left}${right}`.includes(address);
      }),
      { numRuns: 5000 },
    );
  });

  it('leaves text without addresses exactly as it was', () => {
    const plain = fc.string({ unit: 'binary', maxLength: 200 }).filter((text) => !/[.:%]/.test(text));
    fc.assert(
      fc.property(plain, (text) => redactText(text) === text),
      { numRuns: 1000 },
    );
  });
});

describe('redactPii', () => {
  it('redacts strings at any depth and leaves numbers and booleans alone', () => {
    const rows = [
      {
        id: '1.2.3.4',
        timestamp: 1_704_067_200_000_000,
        metadata: [
          {
            request: [
              { headers: [{ 'x-real-ip': '192.168.1.20', cf_connecting_ip: '2a02:1388:1:2::dead:beef' }], ports: [80, 443], ips: ['10.1.1.1', 'none'] },
            ],
            ok: true,
          },
        ],
      },
    ];
    const redacted = redactPii(rows);
    expect(redacted).toEqual([
      {
        id: 'REDACTED',
        timestamp: 1_704_067_200_000_000,
        metadata: [
          { request: [{ headers: [{ 'x-real-ip': 'REDACTED', cf_connecting_ip: 'REDACTED' }], ports: [80, 443], ips: ['REDACTED', 'none'] }], ok: true },
        ],
      },
    ]);
    expect(rows[0]!.id).toBe('1.2.3.4');
  });

  it('redacts object keys at any depth, keeping every value when redacted keys collide', () => {
    const redacted = redactPii({ '203.0.113.50': 'yes', nested: [{ '2001:db8::1': 1, '2001:db8::2': 2, 'host 10.0.0.1': 3 }], plain: { 'std::io': 4 } });
    expect(redacted).toEqual({ REDACTED: 'yes', nested: [{ REDACTED: 1, REDACTED_2: 2, 'host REDACTED': 3 }], plain: { 'std::io': 4 } });
    expect(JSON.stringify(redacted)).not.toMatch(/203\.0\.113|2001:db8|10\.0\.0/);
  });
});
