import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { loadConfig, type Config } from '../../shared/config.ts';

/** A name no other test file uses, for topics, indices, consumer groups and prefixes. */
export function uniqueName(label: string): string {
  return `t${randomBytes(4).toString('hex')}-${label}`.toLowerCase();
}

/** Configuration pointing at the suite's Kafka and Elasticsearch, with per-test overrides. */
export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({
    KAFKA_BROKERS: inject('kafkaBrokers').join(','),
    ELASTICSEARCH_URL: inject('elasticsearchUrl'),
    LOG_LEVEL: 'silent',
    PORT: '0',
    // test events carry fixed dates from years ago: kept unless a test is about retention
    RETENTION_DAYS: '36500',
    ...overrides,
  });
}
