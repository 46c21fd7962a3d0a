import type { Client } from '@elastic/elasticsearch';
import { answerHelp } from '../shared/command-help.ts';
import { loadConfig, type Config } from '../shared/config.ts';
import { createElasticsearchClient, elasticsearchConnection } from '../shared/elasticsearch.ts';
import { checkElasticsearch } from '../shared/startup-checks.ts';
import { ENDPOINTS } from '../queries/index.ts';
import { KeyStore } from '../src/auth/key-store.ts';
import { EndpointStore } from '../src/endpoints/store.ts';
import { KEYS_USAGE, KeysUsageError, keyTable, parseKeysCommand } from '../src/auth/keys-command.ts';
import { environmentWithStartState } from './start-state.ts';

/** `npm run keys -- create|list|revoke`: manages API keys in <INDEX_PREFIX>api-keys. */
async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  answerHelp(`${KEYS_USAGE}\nUses the Elasticsearch of a running npm start, else ELASTICSEARCH_URL.`, argv);
  // a key limited to endpoints names them as the store knows them (operators add endpoints); any other command is checked offline
  const limitsEndpoints = argv[0] === 'create' && argv.some((arg) => arg === '--endpoints' || arg.startsWith('--endpoints='));
  const offline = limitsEndpoints ? undefined : parseKeysCommand(argv, ENDPOINTS);
  const { env, source } = environmentWithStartState(process.env);
  const config = loadConfig(env);
  if (!config.ELASTICSEARCH_URL)
    throw new KeysUsageError('no Elasticsearch to use: run npm start in another terminal, or set ELASTICSEARCH_URL to the one the query service uses');
  if (source) console.error(`using ${source}`);
  const connection = elasticsearchConnection(config);
  const elasticsearch = createElasticsearchClient(connection);
  const store = new KeyStore(elasticsearch, config.INDEX_PREFIX, config.ELASTICSEARCH_INDEX_REPLICAS);
  try {
    // a refused credential or certificate is reported as such, not as a failed key operation
    await checkElasticsearch(elasticsearch, connection, { waitMs: 0, required: true });
    const command = offline ?? parseKeysCommand(argv, await storedEndpoints(elasticsearch, config));
    switch (command.action) {
      case 'create': {
        const { key, record } = await store.create(command);
        const kind = record.admin ? 'operator key' : 'key';
        console.error(`created ${kind} ${record.keyId} for account ${record.account}; it is shown once, store it now:`);
        console.log(key);
        return 0;
      }
      case 'list': {
        const records = await store.list();
        console.log(command.json ? JSON.stringify(records, null, 2) : keyTable(records, await storedEndpoints(elasticsearch, config)));
        return 0;
      }
      case 'revoke': {
        const record = await store.revoke(command.keyId);
        if (!record) {
          console.error(`no key with id ${command.keyId} (see npm run keys -- list)`);
          return 1;
        }
        console.error(
          `key ${record.keyId} revoked at ${record.revokedAt}; running query services refuse it within API_KEY_CACHE_SECONDS (${config.API_KEY_CACHE_SECONDS} s)`,
        );
        return 0;
      }
    }
  } finally {
    await elasticsearch.close();
  }
}

async function storedEndpoints(elasticsearch: Client, config: Config): Promise<{ id: string; name: string }[]> {
  const store = new EndpointStore(elasticsearch, config.INDEX_PREFIX, config.ELASTICSEARCH_INDEX_REPLICAS);
  await store.ensureIndex();
  return store.current();
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(error instanceof KeysUsageError ? 2 : 1);
  },
);
