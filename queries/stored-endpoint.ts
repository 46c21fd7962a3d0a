import { isDeepStrictEqual } from 'node:util';
import { declaredParametersSchema } from './declared-parameters.ts';
import type { Cte, EndpointDefinition, ParameterDoc } from './endpoint.ts';
import type { ParameterValue } from '../shared/sql-type.ts';
import type { EndpointInput, ParameterDeclaration, ParameterType } from './endpoint-record.ts';
import { logsAll } from './logs-all.ts';
import { SEEDED_ENDPOINTS } from './seeds.ts';

/**
 * The tables an operator's endpoint reads: the nine log sources of docs/design/SPEC.md 2.4, each scoped to the
 * `project` parameter first and to `iso_timestamp_start` / `iso_timestamp_end` when those are
 * declared and sent, exactly as logs.all scopes them. No read of the store escapes that scope.
 */
export const SOURCE_TABLES: readonly Cte[] = logsAll.ctes;

/** The tables a record's SQL reads: a seeded endpoint keeps its compiled CTEs, any other reads the sources. */
export function tablesOf(id: string): readonly Cte[] {
  return SEEDED_ENDPOINTS.find((seed) => seed.record.id === id)?.compiled.ctes ?? SOURCE_TABLES;
}

/** Whether a record still holds a seeded endpoint's own query: then its compiled plan answers it. */
function isSeededQuery(record: EndpointInput & { id: string }): EndpointDefinition | undefined {
  const seed = SEEDED_ENDPOINTS.find((candidate) => candidate.record.id === record.id);
  if (!seed) return undefined;
  return seed.record.sql === record.sql && isDeepStrictEqual(seed.record.parameters, record.parameters) ? seed.compiled : undefined;
}

/**
 * A stored version as the definition the query path answers with. A seeded endpoint whose query is
 * unchanged keeps its compiled selection and parameter messages (and so answers exactly as before),
 * whatever its settings; any other runs its saved SQL through the sandbox pipeline.
 */
export function definitionOf(record: EndpointInput & { id: string; version?: number }): EndpointDefinition {
  const compiled = isSeededQuery(record);
  const parameterDocs: ParameterDoc[] = record.parameters.map((parameter) => ({
    name: parameter.name,
    required: parameter.required,
    description: parameter.description,
    type: parameter.type,
    ...(parameter.default === undefined ? {} : { default: parameter.default }),
    ...(parameter.allowedValues ? { allowedValues: parameter.allowedValues } : {}),
    ...(parameter.pattern ? { pattern: parameter.pattern } : {}),
  }));
  return {
    id: record.id,
    name: record.name,
    description: record.description,
    parameters: compiled?.parameters ?? declaredParametersSchema(record.parameters),
    parameterDocs,
    // a seeded query keeps its text parameters, so it answers exactly as the spec defines it
    ...(compiled ? {} : { parameterTypes: sqlTypesOf(record.parameters) }),
    ctes: tablesOf(record.id),
    selection: compiled?.selection ?? { kind: 'sql', text: record.sql },
    maxRows: record.maxRows,
    cache: record.cacheSeconds > 0 ? { ttlSeconds: record.cacheSeconds, warmEverySeconds: record.warmingSeconds } : null,
    sandboxable: record.sandboxable,
    redactPii: record.redactPii,
    ...(record.version === undefined ? {} : { version: record.version }),
  };
}

const SQL_TYPES: Readonly<Record<ParameterType, Exclude<ParameterValue, string>['type'] | undefined>> = {
  string: undefined,
  integer: 'int64',
  number: 'float64',
  boolean: 'bool',
  timestamp: 'timestamp',
};

/** The BigQuery type each declared parameter other than text reaches the SQL with. */
function sqlTypesOf(parameters: readonly ParameterDeclaration[]): NonNullable<EndpointDefinition['parameterTypes']> {
  return Object.fromEntries(
    parameters.flatMap((parameter) => {
      const type = SQL_TYPES[parameter.type];
      return type ? [[parameter.name, type]] : [];
    }),
  );
}
