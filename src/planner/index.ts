import type { EndpointDefinition } from '../../queries/endpoint.ts';
import type { Plan } from './plan.ts';
import { planSavedSelection } from './saved-selection.ts';
import type { ScopeContext, ValidatedParameters } from './scope.ts';

export type { Plan } from './plan.ts';
export type { ScopeContext, ValidatedParameters } from './scope.ts';

/** (endpoint, validated parameters, the caller's scope, now) -> the plan that answers the request. Pure. */
export function planEndpointQuery(endpoint: EndpointDefinition, params: ValidatedParameters, context: ScopeContext): Plan {
  return planSavedSelection(endpoint, params, context);
}
