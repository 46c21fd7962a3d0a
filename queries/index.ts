import type { EndpointDefinition } from './endpoint.ts';
import { logsAll } from './logs-all.ts';
import { usageApiCounts } from './usage-api-counts.ts';

export type { EndpointDefinition } from './endpoint.ts';

/** Every saved endpoint the service serves. */
export const ENDPOINTS: readonly EndpointDefinition[] = [
  usageApiCounts as unknown as EndpointDefinition,
  logsAll as unknown as EndpointDefinition,
];

/** The endpoint a path segment names, by UUID (any letter case) or by name. */
export function findEndpoint(idOrName: string): EndpointDefinition | undefined {
  const wanted = idOrName.toLowerCase();
  return ENDPOINTS.find((endpoint) => endpoint.id === wanted || endpoint.name === idOrName);
}
