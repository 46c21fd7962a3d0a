import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { loadConfig, type Config } from '../../shared/config.ts';

/**
 * A name no other test file uses, for topics, indices, consumer groups and prefixes:
 * `t<run id><8 hex>-<label>` (8 random hex digits per name: a run makes hundreds of names, and
 * two alike would share a topic or consumer group). The run id (from the global setup) lets the end of the run delete
 * whatever this run left on shared servers, and nothing of anyone else's.
 */
export function uniqueName(label: string): string {
  const run = inject('testRunId') ?? randomBytes(2).toString('hex');
  return `t${run}${randomBytes(4).toString('hex')}-${label}`.toLowerCase();
}

/** Whether a name was made by uniqueName: clean-up deletes only such names, never a server's own. */
export function isTestName(name: string): boolean {
  return /^t[0-9a-f]{12}-/.test(name);
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
