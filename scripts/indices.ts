import { loadConfig, retentionDaysOf } from '../shared/config.ts';
import { createElasticsearchClient } from '../shared/elasticsearch.ts';
import { SOURCE_NAMES } from '../shared/sources.ts';
import { partitionReport, reportText } from '../ingest/partition-report.ts';

/** `npm run indices [-- --json]`: each source's partitions with documents, size and age, and what retention deletes next. */
async function main(): Promise<number> {
  const json = process.argv.includes('--json');
  const config = loadConfig(process.env);
  if (!config.ELASTICSEARCH_URL) {
    console.error('set ELASTICSEARCH_URL to the Elasticsearch the platform writes to');
    return 2;
  }
  const elasticsearch = createElasticsearchClient({ url: config.ELASTICSEARCH_URL });
  try {
    const rows = await elasticsearch.cat.indices({ index: `${config.INDEX_PREFIX}*`, format: 'json', bytes: 'b', h: 'index,docs.count,store.size', expand_wildcards: 'open' });
    const listed = rows.map((row) => ({ index: String(row.index), docs: Number(row['docs.count'] ?? 0), bytes: Number(row['store.size'] ?? 0) }));
    const now = Date.now();
    const reports = partitionReport(listed, { indexPrefix: config.INDEX_PREFIX, sources: SOURCE_NAMES, retentionDays: (source) => retentionDaysOf(config, source) }, now);
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
