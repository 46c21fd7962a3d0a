import { problemWith, sampleValue } from '../../queries/declared-parameters.ts';
import { scopeParameters, tableNames, type EndpointDefinition } from '../../queries/endpoint.ts';
import type { EndpointInput } from '../../queries/endpoint-record.ts';
import { definitionOf } from '../../queries/stored-endpoint.ts';
import { BadParameter, InvalidEndpoint } from '../errors.ts';
import { translateBeforeScans, typesKnownBeforeScans } from '../executor/index.ts';
import { planEndpointQuery } from '../planner/index.ts';
import { walk } from '../sql/walk.ts';
import type { AnswerDependencies } from './answer.ts';

/** What checking a saved query takes: the answering path's planning inputs, without its engine. */
export type SavedQueryCheckDependencies = Pick<AnswerDependencies, 'indexPrefix' | 'partitionPeriods' | 'regexLimits' | 'clock'> & {
  sandbox: Pick<AnswerDependencies['sandbox'], 'limits' | 'fieldCatalogs' | 'parseSql' | 'maxTranslatedChars' | 'maxValueBytes'>;
};

/**
 * Refuses an endpoint that could not answer before anything is stored: defaults that fail their own
 * checks, parameters the tables need but the endpoint does not declare, saved SQL that does not
 * parse, reads a table it may not, names an undeclared parameter, does not plan with sample
 * parameters or does not translate as the executor would run it, and declared parameters nothing
 * reads. The SQL goes through the sandbox pipeline's own entry points (parse, validate, plan, the
 * executor's trial translation), as a caller's `sql` does.
 */
export async function checkSavedQuery(record: EndpointInput & { id: string }, dependencies: SavedQueryCheckDependencies): Promise<void> {
  for (const parameter of record.parameters) {
    if (parameter.default === undefined) continue;
    const problem = problemWith(parameter, String(parameter.default));
    if (problem !== undefined) throw new InvalidEndpoint(`parameter ${parameter.name}: its default ${JSON.stringify(parameter.default)} ${problem}`);
  }
  const definition = definitionOf(record);
  const declared = record.parameters.map((parameter) => parameter.name);
  const scope = scopeParameters(definition.ctes);
  const missing = [...scope.required].filter((name) => !declared.includes(name));
  if (missing.length > 0) {
    throw new InvalidEndpoint(
      `parameter ${missing.join(', ')} must be declared: this endpoint's tables (${tableNames(definition.ctes).join(', ')}) are scoped by it`,
    );
  }
  const parseOptions = { allowedTables: tableNames(definition.ctes), parameterNames: declared };
  const query = await refusedAsSaved(() => dependencies.sandbox.parseSql(record.sql, parseOptions));
  const used = new Set([...scope.required, ...scope.optional]);
  walk(query, {
    expr: (expr) => {
      if (expr.kind === 'parameter') used.add(expr.name);
    },
  });
  const unused = declared.filter((name) => !used.has(name));
  if (unused.length > 0) {
    throw new InvalidEndpoint(`parameter ${unused.join(', ')} is declared but the sql never reads it (write @${unused[0]} where it belongs, or remove it)`);
  }
  const samples = Object.fromEntries(record.parameters.map((parameter) => [parameter.name, sampleValue(parameter)]));
  const sqlDefinition: EndpointDefinition = { ...definition, selection: { kind: 'sql', text: record.sql } };
  const sources = definition.ctes.flatMap((cte) => ('source' in cte ? [cte.source] : []));
  const catalogs = await dependencies.sandbox.fieldCatalogs.forSources(dependencies.indexPrefix, sources);
  const context = {
    now: dependencies.clock.now(),
    projects: null,
    indexPrefix: dependencies.indexPrefix,
    partitionPeriods: dependencies.partitionPeriods,
    regexLimits: dependencies.regexLimits,
  };
  const sandbox = { language: 'sql' as const, query, limits: dependencies.sandbox.limits, catalogs };
  const plan = await refusedAsSaved(async () => planEndpointQuery(sqlDefinition, samples, context, sandbox));
  // the executor's own translation before its scans: errors only the printer finds (types, LIMIT @n) refuse the
  // save; over columns typed by the rows (metadata) only its limits do, as a type there is known only then
  await refusedAsSaved(async () => translateBeforeScans(plan, dependencies.sandbox, { everyError: typesKnownBeforeScans(plan) }));
}

/** A sandbox refusal of the saved SQL, said to be about the saved SQL (the message keeps its line and column). */
async function refusedAsSaved<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof BadParameter && !(error instanceof InvalidEndpoint)) throw new InvalidEndpoint(`sql: ${error.message}`, error.code);
    throw error;
  }
}
