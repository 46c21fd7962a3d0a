import { loadConfig } from '../shared/config.ts';
import { createElasticsearchClient, elasticsearchConnection } from '../shared/elasticsearch.ts';
import { checkElasticsearch } from '../shared/startup-checks.ts';
import { ENDPOINTS } from '../queries/index.ts';
import { KeyStore } from '../src/auth/key-store.ts';
import { KeysUsageError, keyTable, parseKeysCommand } from '../src/auth/keys-command.ts';
import { environmentWithStartState } from './start-state.ts';

/** `npm run keys -- create|list|revoke`: manages API keys in <INDEX_PREFIX>api-keys. */
async function main(): Promise<number> {
  const command = parseKeysCommand(process.argv.slice(2), ENDPOINTS);
  const { env, source } = environmentWithStartState(process.env);
  const config = loadConfig(env);
  if (!config.ELASTICSEARCH_URL) throw new KeysUsageError('no Elasticsearch to use: run npm start in another terminal, or set ELASTICSEARCH_URL to the one the query service uses');
  if (source) console.error(`using ${source}`);
  const connection = elasticsearchConnection(config);
  const elasticsearch = createElasticsearchClient(connection);
  const store = new KeyStore(elasticsearch, config.INDEX_PREFIX, config.ELASTICSEARCH_INDEX_REPLICAS);
  try {
    // a refused credential or certificate is reported as such, not as a failed key operation
    await checkElasticsearch(elasticsearch, connection, { waitMs: 0, required: true });
    switch (command.action) {
      case 'create': {
        const { key, record } = await store.create(command);
        console.error(`created key ${record.keyId} for account ${record.account}; it is shown once, store it now:`);
        console.log(key);
        return 0;
      }
      case 'list': {
        const records = await store.list();
        console.log(command.json ? JSON.stringify(records, null, 2) : keyTable(records));
        return 0;
      }
      case 'revoke': {
        const record = await store.revoke(command.keyId);
        if (!record) {
          console.error(`no key with id ${command.keyId} (see npm run keys -- list)`);
          return 1;
        }
        console.error(`key ${record.keyId} revoked at ${record.revokedAt}; running query services refuse it within API_KEY_CACHE_SECONDS (${config.API_KEY_CACHE_SECONDS} s)`);
        return 0;
      }
    }
  } finally {
    await elasticsearch.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(error instanceof KeysUsageError ? 2 : 1);
  },
);
