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
});
