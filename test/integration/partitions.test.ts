import type { Client } from '@elastic/elasticsearch';
import { describe, expect, it } from 'vitest';
import { applyRetention, type RetentionPolicy } from '../../ingest/retention.ts';
import { sourceTopic } from '../../ingest/topics.ts';
import { startIngestWorker } from '../../ingest/worker.ts';
import { logsAll } from '../../queries/logs-all.ts';
import { usageApiCounts } from '../../queries/usage-api-counts.ts';
import { spawnSync } from 'node:child_process';
import { partitionPeriodOf, repositoryRoot } from '../../shared/config.ts';
import { ensureEventIndex, ensureEventIndexTemplate, type StoredEvent } from '../../shared/event-index.ts';
import { eventShape } from '../../shared/event-shape.ts';
import { expressionReads, legacyIndexName, partitionIndexName } from '../../shared/partitions.ts';
import { SOURCE_NAMES, deadLetterTopicName } from '../../shared/sources.ts';
import { microsecondsFromStoredTimestamp } from '../../shared/stored-timestamp.ts';
import { planEndpointQuery } from '../../src/planner/index.ts';
import { BOOTSTRAP_KEY, startEndpointServer, storedTimestamp } from '../support/endpoint-server.ts';
import {
  ingestTestConfig,
  produce,
  readDeadLetters,
  removeTestData,
  replayFromStart,
  silentLogger,
  sourceIndex,
  storeClient,
  storeForFile,
  storedById,
  waitFor,
  waitForCommittedToEnd,
  workerForFile,
} from '../support/ingest.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** Every stored document of a source as id -> the partition holding it; a second copy of an id fails. */
async function partitionsById(client: Client, index: string): Promise<Map<string, string>> {
  await client.indices.refresh({ index, ignore_unavailable: true });
  const response = await client.search({ index, size: 10_000, _source: false, ignore_unavailable: true });
  const byId = new Map<string, string>();
  for (const hit of response.hits.hits) {
    expect(byId.has(hit._id!), `${hit._id} stored twice: ${byId.get(hit._id!)} and ${hit._index}`).toBe(false);
    byId.set(hit._id!, hit._index);
  }
  return byId;
}

describe('partitions: the worker writes each event into the partition of its own time', () => {
  const { config, client } = workerForFile('partitions', { PARTITION_PERIODS: 'auth_logs=hourly,storage_logs=weekly' });

  it('events over several days land in the daily, hourly or weekly partition of their UTC time', async () => {
    const times = ['2024-03-17T23:59:59.999999Z', '2024-03-18T00:00:00Z', '2024-03-18T13:30:00+02:00', '2024-03-24T23:00:00Z', '2024-03-25T00:00:00.000001Z'];
    for (const source of ['edge_logs', 'auth_logs', 'storage_logs'] as const) {
      await produce(
        config,
        source,
        times.map((timestamp, n) => ({ id: `${source}-${n}`, timestamp, event_message: `event ${n}`, project: 'p' })),
      );
    }
    await waitForCommittedToEnd(
      config,
      ['edge_logs', 'auth_logs', 'storage_logs'].map((source) => sourceTopic(config, source as 'edge_logs')),
    );
    const expected = {
      edge_logs: ['2024.03.17', '2024.03.18', '2024.03.18', '2024.03.24', '2024.03.25'],
      auth_logs: ['2024.03.17.23', '2024.03.18.00', '2024.03.18.11', '2024.03.24.23', '2024.03.25.00'],
      storage_logs: ['2024.03.11w', '2024.03.18w', '2024.03.18w', '2024.03.18w', '2024.03.25w'],
    };
    for (const [source, suffixes] of Object.entries(expected)) {
      const stored = await partitionsById(client, sourceIndex(config, source as 'edge_logs'));
      expect(Object.fromEntries(stored), source).toEqual(
        Object.fromEntries(suffixes.map((suffix, n) => [`${source}-${n}`, `${config.INDEX_PREFIX}${source}-${suffix}`])),
      );
    }
    // every partition has the event mapping from the template
    const mapping = await client.indices.getMapping({ index: `${config.INDEX_PREFIX}auth_logs-2024.03.18.11` });
    expect(Object.values(mapping)[0]!.mappings.properties?.timestamp).toMatchObject({ type: 'date_nanos' });
  });

  it('an event older than the retention is dead-lettered as expired; inside it, it is stored', async () => {
    const expiring = ingestTestConfig('expired', { RETENTION_DAYS: '30', RETENTION_INTERVAL_SECONDS: '0' });
    const worker = await startIngestWorker(expiring, silentLogger);
    const expiringClient = storeClient(expiring);
    try {
      const now = Date.now();
      await produce(expiring, 'edge_logs', [
        { id: 'old', timestamp: new Date(now - 40 * DAY).toISOString(), event_message: 'too old', project: 'p' },
        { id: 'recent', timestamp: new Date(now - 2 * DAY).toISOString(), event_message: 'recent', project: 'p' },
      ]);
      const [letter] = await readDeadLetters(expiring, deadLetterTopicName({ topicPrefix: expiring.TOPIC_PREFIX }, 'edge_logs'), 1);
      expect(letter!.headers['dead-letter-reason']).toBe('expired');
      expect(JSON.parse(letter!.value)).toMatchObject({ id: 'old' });
      await waitForCommittedToEnd(expiring, [sourceTopic(expiring, 'edge_logs')]);
      expect((await storedById(expiringClient, sourceIndex(expiring, 'edge_logs'), 'recent')).found).toBe(true);
      expect((await storedById(expiringClient, sourceIndex(expiring, 'edge_logs'), 'old')).found).toBe(false);
    } finally {
      await worker.stop();
      await removeTestData(expiringClient, expiring.INDEX_PREFIX);
      await expiringClient.close();
    }
  });
});

describe('partitions: redelivery across a day boundary', () => {
  const { config, client } = storeForFile('partition-redelivery');

  it('a batch spanning midnight, delivered again from offset 0, overwrites each event in its own partition and duplicates none', async () => {
    const events = Array.from({ length: 400 }, (_, n) => ({
      id: `r-${n}`,
      timestamp: new Date(Date.UTC(2024, 4, 1) - 200_000 + n * 1000).toISOString(),
      event_message: `event ${n}`,
      project: 'p',
    }));
    const topic = sourceTopic(config, 'postgres_logs');
    const worker = await startIngestWorker(config, silentLogger);
    await produce(config, 'postgres_logs', events);
    await waitForCommittedToEnd(config, [topic]);
    await worker.stop();
    const first = await partitionsById(client, sourceIndex(config, 'postgres_logs'));
    expect(first.size).toBe(400);
    expect(new Set(first.values())).toEqual(new Set([`${config.INDEX_PREFIX}postgres_logs-2024.04.30`, `${config.INDEX_PREFIX}postgres_logs-2024.05.01`]));

    await replayFromStart(config, topic);
    const second = await partitionsById(client, sourceIndex(config, 'postgres_logs'));
    expect(second).toEqual(first);
    const versions = await client.search({ index: sourceIndex(config, 'postgres_logs'), size: 400, version: true, _source: false });
    expect(new Set(versions.hits.hits.map((hit) => hit._version))).toEqual(new Set([2]));
  });
});

describe('partitions: queries read only the partitions their time bounds overlap', () => {
  const now = Date.UTC(2024, 4, 10, 12, 30);

  /** One edge event every 20 minutes over five days, in partitions as the worker writes them. */
  function events(): StoredEvent[] {
    return Array.from({ length: 5 * 72 }, (_, n) => {
      const ms = now - 5 * DAY + n * 20 * 60_000 + 7_000;
      const metadata = { request: [{ url: `https://p.supabase.co/rest/v1/t?n=${n}`, path: '/rest/v1/t' }] };
      return { id: `e-${n}`, timestamp: storedTimestamp(ms), event_message: `event ${n}`, project: 'p', metadata, shape: eventShape(metadata) };
    });
  }

  it('a bounded logs.all plans a search over the overlapping partitions only, and answers the rows of an unbounded query filtered by hand', async () => {
    const server = await startEndpointServer({ now });
    try {
      const all = events();
      await server.index('edge_logs', all);
      const start = new Date(now - 2 * DAY - 3 * HOUR).toISOString();
      const end = new Date(now - 2 * DAY + HOUR).toISOString();
      const plan = planEndpointQuery(logsAll, logsAll.parameters.parse({ project: 'p', iso_timestamp_start: start, iso_timestamp_end: end }), {
        now,
        projects: null,
        indexPrefix: server.config.INDEX_PREFIX,
      });
      const index = (plan.scans[0] as { index: string }).index.split(',');
      const day = (offset: number) => partitionIndexName(server.config.INDEX_PREFIX, 'edge_logs', 'daily', now + offset * DAY);
      expect(expressionReads(index, day(-2))).toBe(true);
      for (const other of [-5, -4, -3, -1, 0]) expect(expressionReads(index, day(other)), `day ${other}`).toBe(false);

      const bounded = await server.app.inject({
        method: 'GET',
        url: '/api/endpoints/query/logs.all',
        query: { project: 'p', iso_timestamp_start: start, iso_timestamp_end: end, sql: 'select id, timestamp from edge_logs' },
        headers: { 'x-api-key': BOOTSTRAP_KEY },
      });
      const unbounded = await server.app.inject({
        method: 'GET',
        url: '/api/endpoints/query/logs.all',
        query: { project: 'p', sql: 'select id, timestamp from edge_logs' },
        headers: { 'x-api-key': BOOTSTRAP_KEY },
      });
      expect(bounded.statusCode).toBe(200);
      expect(unbounded.statusCode).toBe(200);
      const inWindow = (unbounded.json().result as { id: string; timestamp: number }[]).filter(
        (row) => row.timestamp > Date.parse(start) * 1000 && row.timestamp <= Date.parse(end) * 1000,
      );
      expect(inWindow.length).toBe(12);
      expect((bounded.json().result as { id: string }[]).map((row) => row.id).sort()).toEqual(inWindow.map((row) => row.id).sort());
    } finally {
      await server.close();
    }
  });

  it('usage.api-counts reads only the partitions of its look-back window', async () => {
    const server = await startEndpointServer({ now });
    try {
      await server.index('edge_logs', events());
      const params = usageApiCounts.parameters.parse({ project: 'p\\.supabase\\.co', interval: 'hourly' });
      const plan = planEndpointQuery(usageApiCounts, params, { now, projects: null, indexPrefix: server.config.INDEX_PREFIX });
      const indices = plan.scans.flatMap((scan) => ('index' in scan ? (scan.index as string).split(',') : []));
      const day = (offset: number) => partitionIndexName(server.config.INDEX_PREFIX, 'edge_logs', 'daily', now + offset * DAY);
      expect(expressionReads(indices, day(0))).toBe(true);
      for (const other of [-5, -4, -3, -2]) expect(expressionReads(indices, day(other)), `day ${other}`).toBe(false);
      const response = await server.app.inject({
        method: 'GET',
        url: '/api/endpoints/query/usage.api-counts',
        query: { project: 'p\\.supabase\\.co', interval: 'hourly' },
        headers: { 'x-api-key': BOOTSTRAP_KEY },
      });
      expect(response.statusCode).toBe(200);
      const counted = (response.json().result as { total_rest_requests: number }[]).reduce((sum, row) => sum + row.total_rest_requests, 0);
      // the hourly window is the last hour: three events at 20-minute steps, each one rest request
      const inWindow = events().filter((event) => microsecondsFromStoredTimestamp(event.timestamp) >= (now - HOUR) * 1000);
      expect(inWindow).toHaveLength(3);
      expect(counted).toBe(inWindow.length);
    } finally {
      await server.close();
    }
  });

  it('the legacy single index is read beside the partitions until retention removes it', async () => {
    const server = await startEndpointServer({ now });
    try {
      const legacy = legacyIndexName(server.config.INDEX_PREFIX, 'edge_logs');
      await ensureEventIndex(server.elasticsearch, legacy, 0);
      const old: StoredEvent = {
        id: 'legacy-1',
        timestamp: storedTimestamp(now - 3 * DAY),
        event_message: 'written before partitioning',
        project: 'p',
        metadata: {},
      };
      await server.elasticsearch.index({ index: legacy, id: old.id, document: old, refresh: true });
      await server.index('edge_logs', [
        { id: 'partitioned-1', timestamp: storedTimestamp(now - DAY), event_message: 'partitioned', project: 'p', metadata: {} },
      ]);
      const ids = async (query: Record<string, string>) => {
        const response = await server.app.inject({
          method: 'GET',
          url: '/api/endpoints/query/logs.all',
          query: { project: 'p', ...query },
          headers: { 'x-api-key': BOOTSTRAP_KEY },
        });
        expect(response.statusCode).toBe(200);
        return (response.json().result as { id: string }[]).map((row) => row.id).sort();
      };
      expect(await ids({})).toEqual(['legacy-1', 'partitioned-1']);
      expect(await ids({ iso_timestamp_start: new Date(now - 4 * DAY).toISOString(), iso_timestamp_end: new Date(now - 2 * DAY).toISOString() })).toEqual([
        'legacy-1',
      ]);

      const policy: RetentionPolicy = { indexPrefix: server.config.INDEX_PREFIX, sources: SOURCE_NAMES, retentionDays: () => 2 };
      const { deleted } = await applyRetention(server.elasticsearch, policy, now, silentLogger);
      expect(deleted).toEqual([legacy]);
      expect(await ids({})).toEqual(['partitioned-1']);
    } finally {
      await server.close();
    }
  });
});

describe('retention on a manual clock', () => {
  const { config, client } = storeForFile('retention');

  it('two workers at once delete exactly the partitions past retention, each once, never the current or a future one', async () => {
    const now = Date.UTC(2024, 5, 15, 9, 0);
    await ensureEventIndexTemplate(client, config.INDEX_PREFIX, 0);
    const dayOffsets = [-45, -31, -30, -29, -7, -1, 0, 1];
    const created: string[] = [];
    for (const source of ['edge_logs', 'auth_logs'] as const) {
      for (const offset of dayOffsets) {
        const ms = now + offset * DAY;
        const index = partitionIndexName(config.INDEX_PREFIX, source, partitionPeriodOf(config, source), ms);
        await client.index({
          index,
          id: `${source}${offset}`,
          document: { id: `${source}${offset}`, timestamp: storedTimestamp(ms), event_message: 'x', project: 'p' },
        });
        created.push(index);
      }
    }
    await client.index({ index: `${config.INDEX_PREFIX}api-keys`, document: { note: 'not a partition' } });
    // edge_logs keeps 30 days, auth_logs 7
    const policy: RetentionPolicy = { indexPrefix: config.INDEX_PREFIX, sources: SOURCE_NAMES, retentionDays: (source) => (source === 'auth_logs' ? 7 : 30) };
    const other = storeClient(config);
    const [a, b] = await Promise.all([applyRetention(client, policy, now, silentLogger), applyRetention(other, policy, now, silentLogger)]);
    await other.close();

    const name = (source: string, offset: number) => partitionIndexName(config.INDEX_PREFIX, source as 'edge_logs', 'daily', now + offset * DAY);
    const expected = [
      name('edge_logs', -45),
      name('edge_logs', -31),
      name('auth_logs', -45),
      name('auth_logs', -31),
      name('auth_logs', -30),
      name('auth_logs', -29),
    ].sort();
    expect([...a.deleted, ...b.deleted].sort()).toEqual(expected);
    const remaining = Object.keys(await client.indices.get({ index: `${config.INDEX_PREFIX}*` })).sort();
    expect(remaining).toEqual([...created.filter((index) => !expected.includes(index)), `${config.INDEX_PREFIX}api-keys`].sort());
    // a day later, the next day of each source is due
    const next = await applyRetention(client, policy, now + DAY, silentLogger);
    expect(next.deleted.sort()).toEqual([name('edge_logs', -30), name('auth_logs', -7)].sort());
  });

  it('npm run indices lists the partitions that remain with their documents, and what expires next', async () => {
    const result = spawnSync('npx', ['tsx', 'scripts/indices.ts'], {
      cwd: repositoryRoot,
      encoding: 'utf8',
      env: {
        ...process.env,
        ELASTICSEARCH_URL: config.ELASTICSEARCH_URL,
        INDEX_PREFIX: config.INDEX_PREFIX,
        RETENTION_DAYS: '30',
        RETENTION_DAYS_BY_SOURCE: 'auth_logs=7',
      },
      timeout: 60_000,
    });
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain('edge_logs (keeps 30 days)');
    expect(result.stdout).toContain('auth_logs (keeps 7 days)');
    // left by the test above (days -29, -7, -1, 0 and 1 of its clock): one event each
    const lines = result.stdout.split('\n').filter((line) => line.startsWith(`  ${config.INDEX_PREFIX}edge_logs-`));
    expect(lines).toHaveLength(5);
    for (const line of lines) expect(line).toMatch(/ daily .* 1 /);
    // by the real clock those days of 2024 are long past every retention
    expect(result.stdout).toContain(`retention deletes at its next run: ${config.INDEX_PREFIX}edge_logs-2024.05.17`);
  });

  it('the worker runs retention on its own schedule and counts what it deleted', async () => {
    const scheduled = ingestTestConfig('retention-schedule', { RETENTION_DAYS: '30', RETENTION_INTERVAL_SECONDS: '1' });
    const scheduledClient = storeClient(scheduled);
    await ensureEventIndexTemplate(scheduledClient, scheduled.INDEX_PREFIX, 0);
    const expired = partitionIndexName(scheduled.INDEX_PREFIX, 'edge_logs', 'daily', Date.now() - 40 * DAY);
    const current = partitionIndexName(scheduled.INDEX_PREFIX, 'edge_logs', 'daily', Date.now());
    for (const index of [expired, current]) await scheduledClient.indices.create({ index });
    const worker = await startIngestWorker(scheduled, silentLogger);
    try {
      await waitFor(`retention to delete ${expired}`, async () => ((await scheduledClient.indices.exists({ index: expired })) ? undefined : true), 30_000);
      expect(await scheduledClient.indices.exists({ index: current })).toBe(true);
      const metrics = await (await fetch(`http://127.0.0.1:${worker.port}/metrics`)).text();
      expect(metrics).toMatch(/^ingest_retention_deleted_indices_total\{source="edge_logs"\} 1$/m);
      expect(metrics).toMatch(/^ingest_retention_runs_total\{outcome="ok"\} [1-9]/m);
    } finally {
      await worker.stop();
      await removeTestData(scheduledClient, scheduled.INDEX_PREFIX);
      await scheduledClient.close();
    }
  });
});
