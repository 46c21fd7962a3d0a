import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createElasticsearchClient } from '../../shared/elasticsearch.ts';
import { ensureEventIndexTemplate, eventIndexTemplateName } from '../../shared/event-index.ts';
import { createLogger } from '../../shared/logger.ts';
import { ENDPOINTS } from '../../queries/index.ts';
import { buildServer } from '../../src/server.ts';
import { testConfig, uniqueName } from '../support/stack.ts';
import { ingestTestConfig, removeKafkaTestData, removeTestData, silentLogger, storeClient } from '../support/ingest.ts';
import { startIngestWorker } from '../../ingest/worker.ts';

const BOOTSTRAP = 'bootstrap-key-for-ops-tests-0123456789';

describe('operational endpoints', () => {
  const config = testConfig({ INDEX_PREFIX: `${uniqueName('ops')}-`, BOOTSTRAP_API_KEY: BOOTSTRAP });
  const elasticsearch = createElasticsearchClient({ url: inject('elasticsearchUrl') });
  let app: FastifyInstance;

  beforeAll(async () => {
    app = await buildServer({ config, logger: createLogger('test', 'silent'), elasticsearch, kafkaBrokers: config.KAFKA_BROKERS! });
  });

  afterAll(async () => {
    await app.close();
    await elasticsearch.indices.deleteIndexTemplate({ name: eventIndexTemplateName(config.INDEX_PREFIX) }, { ignore: [404] });
    await elasticsearch.close();
  });

  describe('/ready', () => {
    it('is 503 naming the missing index template, then 200 once the worker has installed it (no partition needs to exist)', async () => {
      const template = eventIndexTemplateName(config.INDEX_PREFIX);
      const missing = await app.inject({ method: 'GET', url: '/ready' });
      expect(missing.statusCode).toBe(503);
      expect(missing.json().error.code).toBe('not_ready');
      expect(missing.json().error.message).toContain(template);

      await ensureEventIndexTemplate(elasticsearch, config.INDEX_PREFIX, 0);
      const ready = await app.inject({ method: 'GET', url: '/ready' });
      expect(ready.statusCode).toBe(200);
      expect(ready.json()).toEqual({ status: 'ready', template });
    });

    it('is 503 when Elasticsearch is unreachable', async () => {
      const unreachable = createElasticsearchClient({ url: 'http://127.0.0.1:1' });
      const down = await buildServer({ config, logger: createLogger('test', 'silent'), elasticsearch: unreachable, kafkaBrokers: [] });
      const response = await down.inject({ method: 'GET', url: '/ready' });
      await down.close();
      await unreachable.close();
      expect(response.statusCode).toBe(503);
      expect(response.json().error).toMatchObject({ code: 'store_unavailable', message: expect.stringMatching(/Elasticsearch is unreachable/) });
    });
  });

  describe('/metrics', () => {
    it('counts requests by endpoint and status, with latency histograms and cache series', async () => {
      await app.inject({ method: 'GET', url: '/health' });
      await app.inject({ method: 'GET', url: '/api/endpoints/query/logs.all' }); // no key: 401
      await app.inject({ method: 'GET', url: '/no/such/route' });
      const response = await app.inject({ method: 'GET', url: '/metrics' });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toMatch(/^text\/plain/);
      const text = response.body;
      expect(text).toMatch(/^http_requests_total\{endpoint="\/health",status="200"\} [1-9]/m);
      expect(text).toMatch(/^http_requests_total\{endpoint="unmatched",status="404"\} [1-9]/m);
      expect(text).toMatch(/^http_request_duration_seconds_bucket\{le="\+Inf",endpoint="\/health"\} [1-9]/m);
      for (const series of [
        'result_cache_lookups_total',
        'result_cache_warming_runs_total',
        'result_cache_evictions_total',
        'result_cache_bytes',
        'elasticsearch_query_duration_seconds',
      ]) {
        expect(text).toContain(`# TYPE ${series} `);
      }
      expect(text).toMatch(/^result_cache_lookups_total\{result="miss"\} \d+/m);
      expect(text).toMatch(/^result_cache_warming_runs_total\{outcome="failed"\} \d+/m);
    });

    it('labels the query route with the endpoint name whether called by name or UUID', async () => {
      const logsAll = ENDPOINTS.find((endpoint) => endpoint.name === 'logs.all')!;
      const before = await app.inject({ method: 'GET', url: '/metrics' });
      const count = (text: string) => Number(/^http_requests_total\{endpoint="logs\.all",status="401"\} (\d+)/m.exec(text)?.[1] ?? 0);
      await app.inject({ method: 'GET', url: `/api/endpoints/query/${logsAll.id}` });
      await app.inject({ method: 'GET', url: '/api/endpoints/query/logs.all' });
      await app.inject({ method: 'GET', url: '/api/endpoints/query/no.such-endpoint' });
      const after = await app.inject({ method: 'GET', url: '/metrics' });
      expect(count(after.body) - count(before.body)).toBe(2);
      expect(after.body).toMatch(/^http_requests_total\{endpoint="unknown_endpoint",status="401"\} [1-9]/m);
    });

    it('records Elasticsearch time and successful requests per endpoint', async () => {
      const response = await app.inject({ method: 'GET', url: '/api/endpoints/query/logs.all?project=p1', headers: { 'x-api-key': BOOTSTRAP } });
      expect(response.statusCode).toBe(200);
      const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(text).toMatch(/^http_requests_total\{endpoint="logs\.all",status="200"\} [1-9]/m);
      expect(text).toMatch(/^http_request_duration_seconds_count\{endpoint="logs\.all"\} [1-9]/m);
      expect(text).toMatch(/^elasticsearch_query_duration_seconds_count\{endpoint="logs\.all"\} [1-9]/m);
    });
  });

  describe('/openapi.json and /docs', () => {
    it('lists both endpoints with their parameters', async () => {
      const response = await app.inject({ method: 'GET', url: '/openapi.json' });
      expect(response.statusCode).toBe(200);
      const document = response.json();
      expect(document.openapi).toBe('3.1.0');
      const paths = Object.keys(document.paths);
      expect(paths.filter((path) => path.startsWith('/api/endpoints/query/'))).toEqual([
        '/api/endpoints/query/usage.api-counts',
        '/api/endpoints/query/logs.all',
      ]);
      // the fixed routes, generated from their schemas; the query route's pattern gives way to the stored endpoints
      expect(paths).toEqual(
        expect.arrayContaining([
          '/health',
          '/ready',
          '/metrics',
          '/openapi.json',
          '/api/endpoints',
          '/api/endpoints/{endpoint}',
          '/api/endpoints/{endpoint}/versions',
        ]),
      );
      expect(paths).not.toContain('/api/endpoints/query/{endpoint}');
      // every route declares its answers: none falls back to swagger's 'Default Response'
      for (const [path, methods] of Object.entries(document.paths as Record<string, Record<string, { responses: Record<string, { description: string }> }>>)) {
        for (const [method, operation] of Object.entries(methods)) {
          expect(
            Object.values(operation.responses).map((response) => response.description),
            `${method} ${path}`,
          ).not.toContain('Default Response');
        }
      }
      expect(paths.filter((path) => path.startsWith('/docs'))).toEqual([]);
      expect(document.paths['/api/endpoints/{endpoint}'].put.requestBody.content['application/json'].schema.required).toEqual(['name', 'sql']);
      expect(document.paths['/ready'].get.responses['503'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });

      const usage = document.paths['/api/endpoints/query/usage.api-counts'].get;
      const usageParameters = Object.fromEntries(usage.parameters.map((p: { name: string }) => [p.name, p]));
      expect(usageParameters.interval).toMatchObject({ in: 'query', required: true, schema: { enum: ['hourly', 'daily', 'minutely'] } });
      expect(usageParameters.project).toMatchObject({ in: 'query', required: true });
      expect(usageParameters.sql).toMatchObject({ required: false });
      expect(usage.responses['200'].content['application/json'].schema.properties.result.items.properties).toHaveProperty('total_realtime_requests', {
        type: 'integer',
        minimum: 0,
      });

      const logs = document.paths['/api/endpoints/query/logs.all'];
      const logsParameters = Object.fromEntries(logs.get.parameters.map((p: { name: string; required: boolean }) => [p.name, p.required]));
      expect(logsParameters).toMatchObject({
        project: true,
        iso_timestamp_start: false,
        iso_timestamp_end: false,
        'SVC-ENDPOINT-REDACT-PII': false,
        'LF-ENDPOINT-REDACT-PII': false,
      });
      expect(logs.post.requestBody.content['application/json'].schema.required).toEqual(['project']);
      expect(logs.get.parameters.find((p: { name: string }) => p.name === 'format')).toMatchObject({
        required: false,
        schema: { enum: ['json', 'ndjson', 'csv'] },
      });
      expect(Object.keys(logs.get.responses['200'].content)).toEqual(['application/json', 'application/x-ndjson', 'text/csv']);
      expect(logs.get.description).toContain(ENDPOINTS.find((e) => e.name === 'logs.all')!.id);
      expect(Object.keys(logs.get.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '403', '404', '503', '504']));
    });

    it('serves the docs page with its assets from the service itself, rendering the same document', async () => {
      const response = await app.inject({ method: 'GET', url: '/docs' });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
      const assets = [...response.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);
      expect(assets).toEqual(
        expect.arrayContaining(['/docs/static/swagger-ui-bundle.js', '/docs/static/swagger-initializer.js', '/docs/static/swagger-ui.css']),
      );
      // nothing from elsewhere: the page works offline
      for (const asset of assets) {
        expect(asset).toMatch(/^\/docs\/static\//);
        expect((await app.inject({ method: 'GET', url: asset })).statusCode, asset).toBe(200);
      }
      const initializer = (await app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' })).body;
      expect(initializer).toContain('"tryItOutEnabled":true');
      const shown = (await app.inject({ method: 'GET', url: '/docs/json' })).json();
      expect(shown).toEqual((await app.inject({ method: 'GET', url: '/openapi.json' })).json());
    });
  });

  describe('with an operator token (OPS_TOKEN)', () => {
    const OPS_TOKEN = 'ops-token-for-the-ops-tests-0123456789';

    it('the query service serves /metrics and /health details only to the token, and liveness and readiness to anyone', async () => {
      const guarded = await buildServer({
        config: { ...config, OPS_TOKEN },
        logger: createLogger('test', 'silent'),
        elasticsearch,
        kafkaBrokers: config.KAFKA_BROKERS!,
      });
      try {
        const anonymous = await guarded.inject({ method: 'GET', url: '/metrics' });
        expect(anonymous.statusCode).toBe(401);
        expect(anonymous.json().error).toMatchObject({ code: 'unauthorized', message: expect.stringContaining('OPS_TOKEN') });
        expect(anonymous.body).not.toContain('http_requests_total');
        for (const wrong of [`Bearer ${OPS_TOKEN}x`, OPS_TOKEN, `Basic ${OPS_TOKEN}`, `Bearer ${BOOTSTRAP}`]) {
          expect((await guarded.inject({ method: 'GET', url: '/metrics', headers: { authorization: wrong } })).statusCode).toBe(401);
        }
        const operator = await guarded.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${OPS_TOKEN}` } });
        expect(operator.statusCode).toBe(200);
        expect(operator.body).toMatch(/^http_requests_total\{endpoint="\/metrics",status="401"\} [1-9]/m);

        const publicHealth = await guarded.inject({ method: 'GET', url: '/health' });
        expect(publicHealth.statusCode).toBe(200);
        expect(publicHealth.json()).toEqual({ status: 'ok' });
        const detailed = await guarded.inject({ method: 'GET', url: '/health', headers: { authorization: `bearer ${OPS_TOKEN}` } });
        expect(detailed.json()).toMatchObject({
          status: 'ok',
          pid: process.pid,
          elasticsearch: { status: 'up' },
          kafka: { status: 'up', brokers: config.KAFKA_BROKERS },
        });
        expect((await guarded.inject({ method: 'GET', url: '/ready' })).statusCode).not.toBe(401);
      } finally {
        await guarded.close();
      }
    });

    it('the ingest worker does the same on its status port', { timeout: 120_000 }, async () => {
      const workerConfig = ingestTestConfig('ops-token', { OPS_TOKEN });
      const worker = await startIngestWorker(workerConfig, silentLogger);
      try {
        const base = `http://127.0.0.1:${worker.port}`;
        const anonymous = await fetch(`${base}/metrics`);
        expect(anonymous.status).toBe(401);
        expect(((await anonymous.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
        const operator = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${OPS_TOKEN}` } });
        expect(operator.status).toBe(200);
        expect(await operator.text()).toContain('ingest_events_indexed_total');
        expect(await (await fetch(`${base}/health`)).json()).toEqual({ status: 'consuming' });
        expect(await (await fetch(`${base}/health`, { headers: { authorization: `Bearer ${OPS_TOKEN}` } })).json()).toEqual({
          status: 'consuming',
          heldPartitions: 0,
        });
      } finally {
        await worker.stop();
        await removeKafkaTestData(workerConfig);
        const client = storeClient(workerConfig);
        await removeTestData(client, workerConfig.INDEX_PREFIX);
        await client.close();
      }
    });
  });
});
