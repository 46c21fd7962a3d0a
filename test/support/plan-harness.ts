import { tableNames } from '../../queries/endpoint.ts';
import { logsAll } from '../../queries/logs-all.ts';
import { createLogger } from '../../shared/logger.ts';
import { SOURCE_NAMES } from '../../shared/sources.ts';
import { validateParameters } from '../../src/endpoints/request.ts';
import { EmbeddedEngine } from '../../src/executor/engine/embedded-engine.ts';
import { FieldCatalogs } from '../../src/executor/field-catalogs.ts';
import { executePlan } from '../../src/executor/index.ts';
import { planEndpointQuery, type Plan } from '../../src/planner/index.ts';
import { parseSandboxQuery } from '../../src/sql/index.ts';
import type { EndpointTestServer } from './endpoint-server.ts';

/**
 * logs.all's sandboxed SQL planned and executed in the test's process over a test server's store,
 * with an in-process engine that records whether it was asked: the tests that compare a plan the
 * service finishes with the same plan forced through the engine.
 */
export class PlanHarness {
  private constructor(
    private readonly server: EndpointTestServer,
    private readonly now: number,
    private readonly catalogs: FieldCatalogs,
    private readonly engine: EmbeddedEngine,
  ) {}

  static async start(server: EndpointTestServer, now: number, name: string): Promise<PlanHarness> {
    const catalogs = new FieldCatalogs(server.elasticsearch, 60_000, server.clock, 30_000);
    const engine = await EmbeddedEngine.start({ memoryLimit: '1GB', threads: 1, logger: createLogger(name, 'silent') });
    return new PlanHarness(server, now, catalogs, engine);
  }

  async plan(sql: string, params: Record<string, string>): Promise<Plan> {
    const { config } = this.server;
    const query = parseSandboxQuery(sql, { allowedTables: tableNames(logsAll.ctes), parameterNames: logsAll.parameterDocs.map((parameter) => parameter.name) });
    const context = { now: this.now, projects: null, indexPrefix: config.INDEX_PREFIX };
    const limits = { maxScanEvents: config.SANDBOX_MAX_SCAN_EVENTS, maxScans: config.SANDBOX_MAX_SCANS };
    return planEndpointQuery(logsAll, validateParameters(logsAll, params), context, {
      language: 'sql',
      query,
      limits,
      catalogs: await this.catalogs.forSources(config.INDEX_PREFIX, SOURCE_NAMES),
    });
  }

  /** The answer's JSON (or its error) and whether the engine was asked for. */
  async run(planned: Plan): Promise<{ body: string; engine: boolean }> {
    let asked = false;
    const options = {
      elasticsearch: this.server.elasticsearch,
      timeoutMs: 30_000,
      engine: async () => {
        asked = true;
        return this.engine;
      },
      engineKey: 'test',
      deadline: performance.now() + 30_000,
      maxTranslatedChars: this.server.config.SANDBOX_MAX_TRANSLATED_CHARS,
      maxValueBytes: this.server.config.SANDBOX_MAX_RESULT_BYTES,
    };
    try {
      return { body: JSON.stringify(await executePlan(planned, options)), engine: asked };
    } catch (error) {
      return { body: `${(error as Error).constructor.name}: ${(error as Error).message}`, engine: asked };
    }
  }

  close(): Promise<void> {
    return this.engine.close();
  }
}
