import { randomBytes } from 'node:crypto';
import { loadConfig } from '../shared/config.ts';
import { createElasticsearchClient, elasticsearchConnection } from '../shared/elasticsearch.ts';
import { ensureEventIndex } from '../shared/event-index.ts';
import { createLogger } from '../shared/logger.ts';
import { legacyIndexName } from '../shared/partitions.ts';
import { SOURCE_NAMES } from '../shared/sources.ts';
import { KeyStore } from '../src/auth/key-store.ts';
import { buildServer } from '../src/server.ts';
import { measureHttp, percentile } from './latency.ts';
import { answerHelp } from '../shared/command-help.ts';

answerHelp(`Usage: npm run bench:auth-cache
Latency of the auth hook and the result cache over real HTTP: a route without auth, a cached result behind
a stored key (verified-key cache on and off) and behind the bootstrap key.
Needs ELASTICSEARCH_URL and KAFKA_BROKERS (e.g. of a running npm run stack).`);

/**
 * Latency of the auth hook and the result cache over real HTTP: a route without auth, a cached
 * usage.api-counts result behind a stored key (verified-key cache on and off) and behind the
 * bootstrap key. Needs ELASTICSEARCH_URL and KAFKA_BROKERS (e.g. a running `npm run stack`).
 *
 *   ELASTICSEARCH_URL=http://127.0.0.1:39200 KAFKA_BROKERS=127.0.0.1:39092 npx tsx bench/auth-cache.ts
 */
const REQUESTS = 2000;
const BOOTSTRAP = `bench-bootstrap-${randomBytes(16).toString('hex')}`;

async function main(): Promise<void> {
  const base = loadConfig(process.env);
  if (!base.ELASTICSEARCH_URL || !base.KAFKA_BROKERS) throw new Error('set ELASTICSEARCH_URL and KAFKA_BROKERS');
  const prefix = `bench-auth-${randomBytes(4).toString('hex')}-`;
  const elasticsearch = createElasticsearchClient(elasticsearchConnection(base));
  const indices = SOURCE_NAMES.map((source) => legacyIndexName(prefix, source));
  await Promise.all(indices.map((index) => ensureEventIndex(elasticsearch, index, 0)));
  const store = new KeyStore(elasticsearch, prefix, 0);
  const { key } = await store.create({ account: 'bench', endpoints: 'all', projects: null });
  const usage = '/api/endpoints/query/usage.api-counts?interval=hourly&project=bench';

  const rows: string[][] = [];
  try {
    for (const keyCacheSeconds of ['5', '0']) {
      // one key sends every request and the service's own speed is measured: no per-key rate limit
      const config = {
        ...base,
        INDEX_PREFIX: prefix,
        BOOTSTRAP_API_KEY: BOOTSTRAP,
        API_KEY_CACHE_SECONDS: Number(keyCacheSeconds),
        LOG_LEVEL: 'silent' as const,
        RATE_LIMIT_PER_MINUTE: 0,
      };
      const app = await buildServer({ config, logger: createLogger('bench', 'silent'), elasticsearch, kafkaBrokers: base.KAFKA_BROKERS });
      const address = await app.listen({ host: '127.0.0.1', port: 0 });
      const cases: [string, string, Record<string, string>][] = [
        ['no auth: /openapi.json, a 10 KB body', '/openapi.json', {}],
        [`cached result, stored key, key cache ${keyCacheSeconds} s`, usage, { 'x-api-key': key }],
        ['cached result, bootstrap key', usage, { 'x-api-key': BOOTSTRAP }],
      ];
      for (const [label, path, headers] of cases) {
        if (keyCacheSeconds === '0' && !label.includes('stored key')) continue;
        await measureHttp({ url: () => `${address}${path}`, headers, requests: REQUESTS, concurrency: 4 }); // warm up: JIT, first cache fill, key lookup
        for (const concurrency of [1, 16]) {
          const latencies = await measureHttp({ url: () => `${address}${path}`, headers, requests: REQUESTS, concurrency });
          rows.push([label, String(concurrency), percentile(latencies, 50).toFixed(2), percentile(latencies, 99).toFixed(2)]);
        }
      }
      await app.close();
    }
  } finally {
    await elasticsearch.indices.delete({ index: [...indices, store.index], ignore_unavailable: true });
    await elasticsearch.close();
  }
  console.log(`${REQUESTS} requests per row over HTTP on 127.0.0.1\n`);
  console.log('| case | concurrency | p50 ms | p99 ms |\n|---|---|---|---|');
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
