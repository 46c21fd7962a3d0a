import type { FieldMapping, MappableEventField } from '../shared/config.ts';
import type { SourceName } from '../shared/sources.ts';

/** For each event field, the producer field names read as it, in order of precedence. */
export type EventFieldNames = Record<MappableEventField, readonly string[]>;

/** The names producers commonly use (Vector, Fluent Bit, Logstash, Java and Go loggers). */
export const DEFAULT_EVENT_FIELD_NAMES: EventFieldNames = {
  event_message: ['event_message', 'message', 'msg', 'log'],
  timestamp: ['timestamp', '@timestamp', 'time', 'ts'],
  id: ['id'],
  project: ['project'],
  metadata: ['metadata'],
};

/** A source's names: its configured mappings (INGEST_FIELD_MAP, source-specific before `*`) ahead of the defaults. */
export function eventFieldNames(mappings: readonly FieldMapping[], source: SourceName): EventFieldNames {
  const applicable = [...mappings.filter((mapping) => mapping.source === source), ...mappings.filter((mapping) => mapping.source === '*')];
  // a field mapped to one event field is no longer a default alias of another
  const mappedFields = new Set(applicable.map((mapping) => mapping.field));
  const names = {} as Record<MappableEventField, readonly string[]>;
  for (const [target, defaults] of Object.entries(DEFAULT_EVENT_FIELD_NAMES) as [MappableEventField, readonly string[]][]) {
    const mapped = applicable.filter((mapping) => mapping.target === target).map((mapping) => mapping.field);
    names[target] = [...new Set([...mapped, ...defaults.filter((name) => !mappedFields.has(name))])];
  }
  return names;
}
