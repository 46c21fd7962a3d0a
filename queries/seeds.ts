import type { EndpointDefinition } from './endpoint.ts';
import type { EndpointInput } from './endpoint-record.ts';
import { logsAll } from './logs-all.ts';
import { USAGE_INTERVALS, usageApiCounts } from './usage-api-counts.ts';

/**
 * The two endpoints of the spec as the first rows of the endpoint store, each with the compiled
 * definition that answers it while its saved SQL and parameters are the seeded ones. The SQL reads
 * the compiled definition's CTEs: an operator who edits it gets a query over the same tables, run
 * through the sandbox pipeline.
 */
export interface SeededEndpoint {
  record: EndpointInput & { id: string };
  compiled: EndpointDefinition;
}

const usageRecord: SeededEndpoint['record'] = {
  id: usageApiCounts.id,
  name: usageApiCounts.name,
  description: usageApiCounts.description,
  sql: [
    'select timestamp, total_rest_requests, total_storage_requests, total_auth_requests, total_realtime_requests',
    'from chart_counts',
    'order by timestamp asc',
  ].join('\n'),
  parameters: [
    {
      name: 'interval',
      type: 'string',
      required: true,
      allowedValues: [...USAGE_INTERVALS],
      description: 'Look-back window and bucket size: hourly = last hour by hour, daily = last 7 days by day, minutely = last 60 minutes by minute.',
    },
    {
      name: 'project',
      type: 'string',
      required: true,
      description: 'Regular expression (JavaScript / RE2 syntax) matched anywhere in the request URL of each log record.',
    },
  ],
  maxRows: 1000,
  cacheSeconds: 900,
  warmingSeconds: 300,
  sandboxable: true,
  redactPii: false,
  enabled: true,
};

const logsRecord: SeededEndpoint['record'] = {
  id: logsAll.id,
  name: logsAll.name,
  description: logsAll.description,
  sql: ['select id, timestamp, event_message, metadata', 'from edge_logs', 'order by timestamp desc, id desc', 'limit 100'].join('\n'),
  parameters: [
    { name: 'project', type: 'string', required: true, description: 'Project reference each log source is filtered by.' },
    { name: 'iso_timestamp_start', type: 'timestamp', required: false, description: 'Exclusive lower bound (ISO 8601); empty or absent = no bound.' },
    { name: 'iso_timestamp_end', type: 'timestamp', required: false, description: 'Inclusive upper bound (ISO 8601); empty or absent = no bound.' },
  ],
  maxRows: 1000,
  cacheSeconds: 0,
  warmingSeconds: null,
  sandboxable: true,
  redactPii: false,
  enabled: true,
};

export const SEEDED_ENDPOINTS: readonly SeededEndpoint[] = [
  { record: usageRecord, compiled: usageApiCounts },
  { record: logsRecord, compiled: logsAll },
];
