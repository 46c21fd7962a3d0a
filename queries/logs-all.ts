import { z } from 'zod';
import { SOURCES, type SourceName } from '../shared/sources.ts';
import { sourceColumns, type EndpointDefinition, type SourceCte } from './endpoint.ts';

/** Empty and absent both mean "no bound" (docs/design/DESIGN.md 1); the planner parses the text. */
const optionalTimestamp = z
  .string({ error: 'must be an ISO 8601 timestamp such as 2024-01-01T00:00:00.000Z' })
  .optional()
  .transform((value) => (value === undefined || value.trim() === '' ? undefined : value.trim()));

const parameters = z.object({
  project: z
    .string({ error: 'project is required: the project reference every log source is filtered by' })
    .trim()
    .min(1, 'project is required: the project reference every log source is filtered by'),
  iso_timestamp_start: optionalTimestamp,
  iso_timestamp_end: optionalTimestamp,
});

export type LogsParameters = z.infer<typeof parameters>;

/** The reference implementation's saved query names two CTEs differently; its clients still send those names. */
const REFERENCE_NAMES: Partial<Record<SourceName, string[]>> = {
  rest_api_logs: ['postgrest_logs'],
  connection_pooler_logs: ['pgbouncer_logs'],
};

const ctes: SourceCte[] = SOURCES.map((source) => ({
  kind: 'source',
  name: source.name,
  aliases: REFERENCE_NAMES[source.name] ?? [],
  source: source.name,
  columns: sourceColumns(source.projectField === 'project'),
  scope: {
    project: { field: source.projectField, parameter: 'project' },
    timeBounds: { startExclusive: 'iso_timestamp_start', endInclusive: 'iso_timestamp_end' },
  },
}));

/** Log events of one project (docs/design/SPEC.md 4.2): nine CTEs, the saved selection reads edge_logs only. */
export const logsAll: EndpointDefinition<LogsParameters> = {
  id: '8d3b9f57-2c64-4e1a-b0d7-5f9e3a6c2b18',
  name: 'logs.all',
  description: 'Log events of one project within an optional time window; the saved selection returns edge events, newest first, 100 rows.',
  parameters,
  parameterDocs: [
    { name: 'project', required: true, description: 'Project reference each log source is filtered by.' },
    { name: 'iso_timestamp_start', required: false, description: 'Exclusive lower bound (ISO 8601); empty or absent = no bound.' },
    { name: 'iso_timestamp_end', required: false, description: 'Inclusive upper bound (ISO 8601); empty or absent = no bound.' },
  ],
  ctes,
  selection: { kind: 'events', from: 'edge_logs', columns: ['id', 'timestamp', 'event_message', 'metadata'], limit: 100 },
  maxRows: 1000,
  cache: null,
  sandboxable: true,
  redactPii: false,
};
