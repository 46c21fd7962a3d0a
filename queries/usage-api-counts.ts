import { z } from 'zod';
import { sourceColumns, type EndpointDefinition, type WindowScope } from './endpoint.ts';

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

const window: WindowScope = {
  parameter: 'interval',
  windows: {
    hourly: { lookBackMs: 60 * 60 * 1000, bucket: 'hour' },
    daily: { lookBackMs: 7 * 24 * 60 * 60 * 1000, bucket: 'day' },
    minutely: { lookBackMs: 60 * 60 * 1000, bucket: 'minute' },
  },
};

const count = { kind: 'int64' } as const;

/**
 * Request counts per bucket for one project, split by API area (docs/design/SPEC.md 4.1), mirroring the saved
 * SQL: `dates` holds the window start, `edge_logs` the edge events in the window with a request
 * record whose url matches `project`, and `chart_counts` counts those records per bucket with
 * countif on the path.
 */
export const usageApiCounts: EndpointDefinition<UsageParameters> = {
  id: 'c4f6a2e0-5b1d-4d8e-9a3c-7e2b1f0d6a41',
  name: 'usage.api-counts',
  description: 'Counts of requests per time bucket for one project, split by API area (rest, storage, auth, realtime).',
  parameters,
  parameterDocs: [
    {
      name: 'interval',
      required: true,
      description: 'Look-back window and bucket size: hourly = last hour by hour, daily = last 7 days by day, minutely = last 60 minutes by minute.',
      allowedValues: USAGE_INTERVALS,
    },
    { name: 'project', required: true, description: 'Regular expression (JavaScript / RE2 syntax) matched anywhere in the request URL of each log record.' },
  ],
  ctes: [
    { kind: 'window_start', name: 'dates', columns: [{ name: 'start', type: { kind: 'timestamp' } }], window },
    {
      kind: 'windowed_source',
      name: 'edge_logs',
      source: 'edge_logs',
      columns: sourceColumns(true),
      scope: { window, requestPath: 'metadata.request', urlPatternParameter: 'project' },
    },
    {
      kind: 'request_counts',
      name: 'chart_counts',
      from: 'edge_logs',
      columns: [
        { name: 'timestamp', type: { kind: 'timestamp' } },
        { name: 'total_rest_requests', type: count },
        { name: 'total_storage_requests', type: count },
        { name: 'total_auth_requests', type: count },
        { name: 'total_realtime_requests', type: count },
      ],
      pathColumns: {
        total_rest_requests: '/rest',
        total_storage_requests: '/storage',
        total_auth_requests: '/auth',
        total_realtime_requests: '/realtime',
      },
    },
  ],
  selection: { kind: 'buckets', from: 'chart_counts' },
  maxRows: 1000,
  cache: { ttlSeconds: 900, warmEverySeconds: 300 },
  sandboxable: true,
  redactPii: false,
};
