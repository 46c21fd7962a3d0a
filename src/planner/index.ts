import type { EndpointDefinition } from '../../queries/endpoint.ts';
import type { LqlQuery } from '../lql/syntax.ts';
import type { Query } from '../sql/syntax.ts';
import type { FieldCatalog } from './field-catalog.ts';
import type { Plan } from './plan.ts';
import { planLqlQuery } from './lql.ts';
import { planSandboxQuery, type SandboxLimits } from './sandbox/index.ts';
import { DEFAULT_REGEX_LIMITS, boundRegexCost } from './regex-budget.ts';
import { planSavedSelection } from './saved-selection.ts';
import type { ScopeContext, ValidatedParameters } from './scope.ts';

export type { Plan } from './plan.ts';
export type { ScopeContext, ValidatedParameters } from './scope.ts';

/** A sandboxed query (already parsed and validated: SQL or LQL) and what planning it needs. */
export type SandboxInput = { limits: SandboxLimits; catalogs: ReadonlyMap<string, FieldCatalog> } & (
  | { language: 'sql'; query: Query }
  | { language: 'lql'; query: LqlQuery }
);

/**
 * (endpoint, validated parameters, the caller's scope, now[, sandboxed query]) -> the plan that
 * answers the request, within the request's regular-expression budget. Pure.
 */
export function planEndpointQuery(endpoint: EndpointDefinition, params: ValidatedParameters, context: ScopeContext, sandbox?: SandboxInput): Plan {
  return boundRegexCost(unboundedPlan(endpoint, params, context, sandbox), context.regexLimits ?? DEFAULT_REGEX_LIMITS);
}

function unboundedPlan(endpoint: EndpointDefinition, params: ValidatedParameters, context: ScopeContext, sandbox?: SandboxInput): Plan {
  if (!sandbox) return planSavedSelection(endpoint, params, context);
  if (sandbox.language === 'lql') return planLqlQuery(endpoint, params, { ...context, catalogs: sandbox.catalogs }, sandbox.query);
  return planSandboxQuery(endpoint, params, { ...context, limits: sandbox.limits, catalogs: sandbox.catalogs }, sandbox.query);
}
