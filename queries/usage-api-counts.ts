import { z } from 'zod';
import type { EndpointDefinition } from './endpoint.ts';

export const USAGE_INTERVALS = ['hourly', 'daily', 'minutely'] as const;

const parameters = z.object({
  interval: z.enum(USAGE_INTERVALS, {
    error: (issue) =>
      issue.input === undefined || issue.input === ''
        ? `interval is required; allowed values: ${USAGE_INTERVALS.join(', ')}`
        : `interval must be one of ${USAGE_INTERVALS.join(', ')}; got ${JSON.stringify(issue.input)}`,
  }),
  project: z
    .string({ error: 'project is required: a regular expression matched anywhere in the request URL' })
    .min(1, 'project is required: a regular expression matched anywhere in the request URL'),
});

export type UsageParameters = z.infer<typeof parameters>;

/**
 * Request counts per bucket for one project, split by API area (SPEC.md 4.1). The saved SQL reads
 * the edge source, unnests metadata.request, keeps records whose url matches `project`, and counts
 * per record with countif on the path.
 */
export const usageApiCounts: EndpointDefinition<UsageParameters> = {
  id: 'c4f6a2e0-5b1d-4d8e-9a3c-7e2b1f0d6a41',
  name: 'usage.api-counts',
  description: 'Counts of requests per time bucket for one project, split by API area (rest, storage, auth, realtime).',
  parameters,
  parameterDocs: [
    { name: 'interval', required: true, description: 'Look-back window and bucket size: hourly = last hour by hour, daily = last 7 days by day, minutely = last 60 minutes by minute.', allowedValues: USAGE_INTERVALS },
    { name: 'project', required: true, description: 'Regular expression (JavaScript / RE2 syntax) matched anywhere in the request URL of each log record.' },
  ],
  ctes: [
    {
      kind: 'request_counts',
      name: 'chart_counts',
      source: 'edge_logs',
      requestPath: 'metadata.request',
      windowParameter: 'interval',
      windows: {
        hourly: { lookBackMs: 60 * 60 * 1000, bucket: 'hour' },
        daily: { lookBackMs: 7 * 24 * 60 * 60 * 1000, bucket: 'day' },
        minutely: { lookBackMs: 60 * 60 * 1000, bucket: 'minute' },
      },
      urlPatternParameter: 'project',
      pathColumns: {
        total_rest_requests: '/rest',
        total_storage_requests: '/storage',
        total_auth_requests: '/auth',
        total_realtime_requests: '/realtime',
      },
    },
  ],
  selection: { kind: 'buckets', from: 'chart_counts', order: 'timestamp_asc' },
  maxRows: 1000,
  cache: { ttlSeconds: 900, warmEverySeconds: 300 },
  sandboxable: true,
  redactPii: false,
};
