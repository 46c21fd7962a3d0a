import { tableNames } from '../../queries/endpoint.ts';
import { logsAll } from '../../queries/logs-all.ts';
import type { FieldCatalog } from '../../src/planner/field-catalog.ts';
import { planEndpointQuery, type Plan } from '../../src/planner/index.ts';
import { parseSandboxQuery } from '../../src/sql/index.ts';
import type { Query } from '../../src/sql/syntax.ts';

/** What logs.all lets a sandboxed query name: its CTEs and its parameters. */
export const logsAllParseOptions = { allowedTables: tableNames(logsAll.ctes), parameterNames: logsAll.parameterDocs.map((parameter) => parameter.name) };

/** logs.all's plan of a sandboxed SQL query for project `default` at 01:00 on 2024-01-01, every source read with `catalog` (the parser must be initialised). */
export function planLogsAllSql(sql: string, catalog: FieldCatalog): Plan {
  return planLogsAllQuery(parseSandboxQuery(sql, logsAllParseOptions), catalog);
}

/** logs.all's plan of a parsed sandboxed query with `params` (default: project `default`) at `now` (default: 01:00 on 2024-01-01), every source read with `catalog`. */
export function planLogsAllQuery(query: Query, catalog: FieldCatalog, options: { now?: number; params?: Record<string, string> } = {}): Plan {
  const catalogs = new Map(logsAll.ctes.map((cte) => ['source' in cte ? cte.source : cte.name, catalog]));
  const params = logsAll.parameters.parse(options.params ?? { project: 'default' }) as Record<string, unknown>;
  return planEndpointQuery(
    logsAll,
    params,
    { now: options.now ?? Date.UTC(2024, 0, 1, 1), projects: null, indexPrefix: 'lp-' },
    { language: 'sql', query, limits: { maxScanEvents: 50_000, maxScans: 32 }, catalogs },
  );
}
