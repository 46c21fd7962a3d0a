import { randomBytes } from 'node:crypto';
import { loadConfig } from '../shared/config.ts';
import { createElasticsearchClient } from '../shared/elasticsearch.ts';
import { createLogger } from '../shared/logger.ts';
import { generateApiKey } from '../src/auth/api-key.ts';
import { KeyStore } from '../src/auth/key-store.ts';
import { buildServer } from '../src/server.ts';
import { percentile } from './latency.ts';
import { answerHelp } from '../shared/command-help.ts';

answerHelp(`Usage: npm run bench:auth-timing
What a wrong key costs to refuse over real HTTP, by path, with the refusal floor (AUTH_FAILURE_MIN_MS) off and on.
Needs ELASTICSEARCH_URL and KAFKA_BROKERS (e.g. of a running npm run stack).`);

/**
 * `npm run bench:auth-timing`: what a wrong key costs to refuse over real HTTP, by path, with the
 * refusal floor (AUTH_FAILURE_MIN_MS) off and on: an unknown key id (each new: a store look-up;
 * repeated: the miss cache) against a known key id with a wrong secret (verified-key cache). With the
 * floor the columns should match: key existence no longer shows in the timing.
 * Needs ELASTICSEARCH_URL and KAFKA_BROKERS (e.g. a running `npm run stack`).
 */
const REQUESTS = 300;

async function main(): Promise<void> {
  const base = loadConfig(process.env);
  if (!base.ELASTICSEARCH_URL || !base.KAFKA_BROKERS) throw new Error('set ELASTICSEARCH_URL and KAFKA_BROKERS');
  const prefix = `bench-authtiming-${randomBytes(4).toString('hex')}-`;
  const elasticsearch = createElasticsearchClient({ url: base.ELASTICSEARCH_URL });
  const store = new KeyStore(elasticsearch, prefix, 0);
  const { key } = await store.create({ account: 'bench', endpoints: 'all', projects: null });
  const wrongSecret = key.slice(0, -4) + (key.endsWith('AAAA') ? 'BBBB' : 'AAAA');
  const repeatedUnknown = generateApiKey().key;
  const rows: string[][] = [];
  try {
    for (const floorMs of [0, 50]) {
      const config = {
        ...base,
        INDEX_PREFIX: prefix,
        LOG_LEVEL: 'silent' as const,
        RATE_LIMIT_PER_MINUTE: 0,
        AUTH_FAILURES_PER_MINUTE: 0,
        AUTH_FAILURE_MIN_MS: floorMs,
      };
      const app = await buildServer({ config, logger: createLogger('bench', 'silent'), elasticsearch, kafkaBrokers: base.KAFKA_BROKERS });
      const address = await app.listen({ host: '127.0.0.1', port: 0 });
      const cases: Array<[string, () => string]> = [
        ['unknown key id, new each time (store look-up)', () => generateApiKey().key],
        ['unknown key id, repeated (miss cache)', () => repeatedUnknown],
        ['known key id, wrong secret (key cache)', () => wrongSecret],
      ];
      for (const [label, keyFor] of cases) {
        const latencies: number[] = [];
        for (let i = 0; i < REQUESTS; i += 1) {
          const started = performance.now();
          const response = await fetch(`${address}/api/endpoints/query/logs.all?project=x`, { headers: { 'x-api-key': keyFor() } });
          await response.arrayBuffer();
          if (response.status !== 401) throw new Error(`${label}: expected 401, got ${response.status}`);
          latencies.push(performance.now() - started);
        }
        latencies.sort((a, b) => a - b);
        rows.push([`${floorMs} ms`, label, percentile(latencies, 50).toFixed(2), percentile(latencies, 90).toFixed(2), percentile(latencies, 99).toFixed(2)]);
      }
      await app.close();
    }
  } finally {
    await elasticsearch.indices.delete({ index: store.index, ignore_unavailable: true });
    await elasticsearch.close();
  }
  console.log(`refusing a wrong key over HTTP, ${REQUESTS} sequential requests per row`);
  console.log('| AUTH_FAILURE_MIN_MS | path | p50 ms | p90 ms | p99 ms |');
  console.log('|---|---|---|---|---|');
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
}

await main();
