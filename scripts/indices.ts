import { answerHelp } from '../shared/command-help.ts';
import { loadConfig, retentionDaysOf } from '../shared/config.ts';
import { createElasticsearchClient, elasticsearchConnection } from '../shared/elasticsearch.ts';
import { SOURCE_NAMES } from '../shared/sources.ts';
import { partitionReport, reportText } from './partition-report.ts';
import { environmentWithStartState } from './start-state.ts';

/** `npm run indices [-- --json]`: each source's partitions with documents, size and age, and what retention deletes next. */
async function main(): Promise<number> {
  answerHelp(`Usage: npm run indices [-- --json]
Each source's time partitions with their documents, size and age, and which ones retention deletes next.
  --json   the same as JSON
Uses the Elasticsearch of a running npm start, else ELASTICSEARCH_URL.`);
  const json = process.argv.includes('--json');
  const { env, source: serversSource } = environmentWithStartState(process.env);
  const config = loadConfig(env);
  if (!config.ELASTICSEARCH_URL) {
    console.error('no Elasticsearch to read: run npm start in another terminal, or set ELASTICSEARCH_URL to the one the platform writes to');
    return 2;
  }
  if (serversSource) console.error(`using ${serversSource}`);
  const elasticsearch = createElasticsearchClient(elasticsearchConnection(config));
  try {
    const rows = await elasticsearch.cat.indices({
      index: `${config.INDEX_PREFIX}*`,
      format: 'json',
      bytes: 'b',
      h: 'index,docs.count,store.size',
      expand_wildcards: 'open',
    });
    const listed = rows.map((row) => ({ index: String(row.index), docs: Number(row['docs.count'] ?? 0), bytes: Number(row['store.size'] ?? 0) }));
    const now = Date.now();
    const reports = partitionReport(
      listed,
      { indexPrefix: config.INDEX_PREFIX, sources: SOURCE_NAMES, retentionDays: (source) => retentionDaysOf(config, source) },
      now,
    );
    process.stdout.write(json ? `${JSON.stringify(reports, null, 2)}\n` : reportText(reports, now));
    return 0;
  } finally {
    await elasticsearch.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`indices: ${(error as Error).message}`);
    process.exit(1);
  },
);
