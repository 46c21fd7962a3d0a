import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../shared/config.ts';

describe('configuration', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    expect(config.HOST).toBe('127.0.0.1');
    expect(config.PORT).toBe(4000);
    expect(config.KAFKA_BROKERS).toBeUndefined();
    expect(config.ELASTICSEARCH_URL).toBeUndefined();
  });

  it('splits the broker list and treats empty values as unset', () => {
    const config = loadConfig({ KAFKA_BROKERS: ' a:1, b:2 ,', ELASTICSEARCH_URL: '' });
    expect(config.KAFKA_BROKERS).toEqual(['a:1', 'b:2']);
    expect(config.ELASTICSEARCH_URL).toBeUndefined();
  });

  it('names every invalid variable', () => {
    expect(() => loadConfig({ PORT: 'eighty', LOG_LEVEL: 'loud' })).toThrow(ConfigError);
    try {
      loadConfig({ PORT: 'eighty', LOG_LEVEL: 'loud' });
    } catch (error) {
      expect((error as ConfigError).issues.join('\n')).toMatch(/PORT/);
      expect((error as ConfigError).issues.join('\n')).toMatch(/LOG_LEVEL/);
    }
  });

  it('bounds the HTTP timeouts against each other and the query timeout', () => {
    const config = loadConfig({});
    expect([config.HTTP_HEADERS_TIMEOUT_MS, config.HTTP_REQUEST_TIMEOUT_MS, config.HTTP_KEEP_ALIVE_TIMEOUT_MS, config.HTTP_CONNECTION_TIMEOUT_MS]).toEqual([
      10_000, 30_000, 5000, 120_000,
    ]);
    expect(() => loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '40000' })).toThrow(/HTTP_HEADERS_TIMEOUT_MS: must not exceed HTTP_REQUEST_TIMEOUT_MS/);
    expect(() => loadConfig({ QUERY_TIMEOUT_MS: '200000' })).toThrow(/HTTP_CONNECTION_TIMEOUT_MS: must exceed QUERY_TIMEOUT_MS/);
    expect(() => loadConfig({ HTTP_MAX_HEADER_BYTES: '1000' })).toThrow(/HTTP_MAX_HEADER_BYTES/);
    expect(() => loadConfig({ SANDBOX_MAX_SCAN_EVENTS: '1000', SANDBOX_MAX_HELD_EVENTS: '1000' })).toThrow(
      /SANDBOX_MAX_HELD_EVENTS: must exceed SANDBOX_MAX_SCAN_EVENTS \(1000\)/,
    );
  });
});
