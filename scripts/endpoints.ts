import { readFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';
import { answerHelp } from '../shared/command-help.ts';
import { loadConfig } from '../shared/config.ts';
import { createElasticsearchClient, elasticsearchConnection } from '../shared/elasticsearch.ts';
import { createLogger } from '../shared/logger.ts';
import { checkElasticsearch } from '../shared/startup-checks.ts';
import { SystemClock } from '../src/cache/clock.ts';
import { EndpointCatalog } from '../src/endpoints/catalog.ts';
import {
  ENDPOINTS_USAGE,
  EndpointsUsageError,
  endpointTable,
  parseEndpointsCommand,
  versionTable,
  type JsonSource,
} from '../src/endpoints/endpoints-command.ts';
import { EndpointManagement } from '../src/endpoints/management.ts';
import { EndpointStore } from '../src/endpoints/store.ts';
import { parseExposition, usageRows, usageTable } from '../src/endpoints/usage-table.ts';
import { ApiError } from '../src/errors.ts';
import { FieldCatalogs } from '../src/executor/field-catalogs.ts';
import { parseJsonBody } from '../src/http/json-body.ts';
import { planningSettings } from '../src/server.ts';
import { initSqlParser, parseSandboxQuery } from '../src/sql/index.ts';
import { environmentWithStartState } from './start-state.ts';

async function readJson(source: JsonSource): Promise<unknown> {
  const body = source.kind === 'file' ? await readFile(source.path, 'utf8') : await text(process.stdin);
  return parseJsonBody(body);
}

/** The query service's /metrics text, with the operator token when one is configured. */
async function serviceMetrics(url: string, opsToken: string | undefined): Promise<string> {
  const address = `${url.replace(/\/+$/, '')}/metrics`;
  let response: Response;
  try {
    response = await fetch(address, { headers: opsToken === undefined ? {} : { authorization: `Bearer ${opsToken}` } });
  } catch (error) {
    const reason = (error as Error).cause ?? (error as Error).message;
    throw new Error(`no query service answers at ${address} (${String(reason)}): start it (npm start), or pass --url`);
  }
  if (response.status === 401) throw new Error(`${address} needs the operator token: set OPS_TOKEN to the one the query service runs with`);
  if (!response.ok) throw new Error(`${address} answered ${response.status}`);
  return response.text();
}

/**
 * `npm run endpoints -- list|show|create|edit|delete|versions|restore|usage`: manages the saved endpoints in
 * <INDEX_PREFIX>endpoints with the checks the management API makes; running query services serve a
 * change within ENDPOINT_REFRESH_SECONDS. `usage` reads a running query service's /metrics instead.
 */
async function main(): Promise<number> {
  answerHelp(`${ENDPOINTS_USAGE}\nUses the Elasticsearch of a running npm start, else ELASTICSEARCH_URL.`);
  const command = parseEndpointsCommand(process.argv.slice(2));
  const { env, source } = environmentWithStartState(process.env);
  const config = loadConfig(env);
  if (command.action === 'usage') {
    // the service listens on every address with 0.0.0.0, but is reached on one
    const host = config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
    const rows = usageRows(parseExposition(await serviceMetrics(command.url ?? `http://${host}:${config.PORT}`, config.OPS_TOKEN)));
    console.log(command.json ? JSON.stringify(rows, null, 2) : usageTable(rows));
    return 0;
  }
  if (!config.ELASTICSEARCH_URL)
    throw new EndpointsUsageError('no Elasticsearch to use: run npm start in another terminal, or set ELASTICSEARCH_URL to the one the query service uses');
  if (source) console.error(`using ${source}`);
  const connection = elasticsearchConnection(config);
  const elasticsearch = createElasticsearchClient(connection);
  try {
    await checkElasticsearch(elasticsearch, connection, { waitMs: 0, required: true });
    const store = new EndpointStore(elasticsearch, config.INDEX_PREFIX, config.ELASTICSEARCH_INDEX_REPLICAS);
    // this command's own view of the store, read afresh by every call: never refreshed on a timer
    const logger = createLogger('endpoints', 'warn');
    const catalog = new EndpointCatalog({ store, logger, refreshSeconds: config.ENDPOINT_REFRESH_SECONDS, onChange: () => undefined });
    await initSqlParser();
    const clock = new SystemClock();
    const planning = planningSettings(config);
    const management = new EndpointManagement({
      store,
      catalog,
      check: {
        indexPrefix: config.INDEX_PREFIX,
        partitionPeriods: planning.partitionPeriods,
        regexLimits: planning.regexLimits,
        clock,
        sandbox: {
          limits: planning.sandboxLimits,
          maxTranslatedChars: config.SANDBOX_MAX_TRANSLATED_CHARS,
          maxValueBytes: config.SANDBOX_MAX_RESULT_BYTES,
          fieldCatalogs: new FieldCatalogs(elasticsearch, 0, clock, config.QUERY_TIMEOUT_MS),
          parseSql: async (sql, options) => parseSandboxQuery(sql, options),
        },
      },
    });
    const print = (value: unknown) => console.log(JSON.stringify(value, null, 2));
    const refreshNote = `running query services serve it within ENDPOINT_REFRESH_SECONDS (${config.ENDPOINT_REFRESH_SECONDS} s)`;
    switch (command.action) {
      case 'list': {
        const records = await management.list();
        console.log(command.json ? JSON.stringify(records, null, 2) : endpointTable(records));
        return 0;
      }
      case 'show':
        print(await management.get(command.endpoint));
        return 0;
      case 'create': {
        const record = await management.create(await readJson(command.from));
        console.error(`created endpoint ${record.name} (${record.id}), version 1; ${refreshNote}`);
        print(record);
        return 0;
      }
      case 'edit': {
        const record = await management.patch(command.endpoint, await readJson(command.from));
        console.error(`saved endpoint ${record.name} as version ${record.version}; ${refreshNote}`);
        print(record);
        return 0;
      }
      case 'delete': {
        const record = await management.remove(command.endpoint);
        console.error(
          `deleted endpoint ${record.name} (${record.id}) as version ${record.version}; ${refreshNote}; restoring a version by its id brings it back`,
        );
        return 0;
      }
      case 'versions': {
        const versions = await management.versions((await idOf(management, command.endpoint)) ?? command.endpoint);
        console.log(command.json ? JSON.stringify(versions, null, 2) : versionTable(versions));
        return 0;
      }
      case 'restore': {
        const record = await management.restore((await idOf(management, command.endpoint)) ?? command.endpoint, command.version);
        console.error(`restored version ${command.version} of ${record.name} as version ${record.version}; ${refreshNote}`);
        print(record);
        return 0;
      }
    }
  } finally {
    await elasticsearch.close();
  }
}

/** The id of a current endpoint named so; undefined for a UUID or a deleted endpoint (whose versions are found by UUID). */
async function idOf(management: EndpointManagement, endpoint: string): Promise<string | undefined> {
  return (await management.list()).find((record) => record.name === endpoint)?.id;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof ApiError) {
      console.error(`${error.code}: ${error.message}`);
      process.exit(1);
    }
    console.error(error instanceof Error ? error.message : error);
    process.exit(error instanceof EndpointsUsageError ? 2 : 1);
  },
);
