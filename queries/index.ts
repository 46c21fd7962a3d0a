import { logsAll } from './logs-all.ts';
import { usageApiCounts } from './usage-api-counts.ts';

export type { EndpointDefinition } from './endpoint.ts';

/** Every saved endpoint the service serves, each keeping its own parameter type. */
export const ENDPOINTS = [usageApiCounts, logsAll] as const;

export type Endpoint = (typeof ENDPOINTS)[number];

/** The endpoint a path segment names, by UUID (any letter case) or by name. */
export function findEndpoint(idOrName: string): Endpoint | undefined {
  const wanted = idOrName.toLowerCase();
  return ENDPOINTS.find((endpoint) => endpoint.id === wanted || endpoint.name === idOrName);
}
