import type { Client, estypes } from '@elastic/elasticsearch';
import { createIndexUnlessExists } from './create-index.ts';
import type { EventShape } from './event-shape.ts';
import { legacyIndexName } from './partitions.ts';
import { SOURCE_NAMES } from './sources.ts';

/**
 * The stored form of an event, shared by the ingest worker (which writes it) and the query service
 * (which reads it). One document per event, `_id` = `id`.
 *
 * - `timestamp`: ISO 8601 in UTC with exactly six fractional digits (`2024-01-01T00:00:00.123456Z`),
 *   mapped as date_nanos so microseconds survive; the API returns it as integer microseconds.
 * - `id`, `project`, `event_message`: as produced (id generated when absent).
 * - `metadata`: the producer's object, kept whole in `_source`. `metadata.request` is nested so that a
 *   request record's url and path are matched together and each record is counted once.
 */
export interface StoredEvent {
  id: string;
  timestamp: string;
  event_message: string;
  project?: string;
  metadata?: Record<string, unknown> | Record<string, unknown>[];
  /**
   * Metadata fields whose type clashed with the index mapping, moved here by the ingest worker so the
   * event is still stored (this field is not indexed). Readers call restoreSetAsideFields() to get
   * the event as produced.
   */
  metadata_unindexed?: SetAsideField[];
  /**
   * Where the ingest worker put top-level fields that are not event fields: their paths inside the
   * (first) metadata record, in the producer's order; the last segment is the original name.
   */
  folded_fields?: string[];
  /** Where the ingest worker put the Kafka message key inside the (first) metadata record. */
  key_field?: string;
  /** The event's record arrays, for the query planner (shared/event-shape.ts); never part of a row. */
  shape?: EventShape;
}

/** One metadata value set aside: its path inside `metadata` (array positions as numbers) and the value. */
export interface SetAsideField {
  path: (string | number)[];
  value: unknown;
}

/** The event as produced: set-aside fields put back into `metadata`, `metadata_unindexed` dropped. */
export function restoreSetAsideFields<T extends { metadata?: unknown; metadata_unindexed?: SetAsideField[] }>(stored: T): Omit<T, 'metadata_unindexed'> {
  const { metadata_unindexed: setAside, ...event } = stored;
  if (!setAside || setAside.length === 0 || event.metadata === undefined) return event;
  const metadata = structuredClone(event.metadata) as Record<string | number, unknown>;
  for (const { path, value } of setAside) {
    let container: Record<string | number, unknown> = metadata;
    for (const step of path.slice(0, -1)) container = container[step] as Record<string | number, unknown>;
    container[path[path.length - 1]!] = value;
  }
  return { ...event, metadata };
}

/** Strings long enough for real URLs stay searchable; longer ones are stored but not indexed. */
export const KEYWORD_IGNORE_ABOVE = 8191;

/** Settings of every source partition; `replicas` is ELASTICSEARCH_INDEX_REPLICAS (0 on a single node). */
export function eventIndexSettings(replicas: number): estypes.IndicesIndexSettings {
  return { ...EVENT_INDEX_SETTINGS, number_of_replicas: replicas };
}

export const EVENT_INDEX_SETTINGS: estypes.IndicesIndexSettings = {
  number_of_shards: 1,
  number_of_replicas: 0,
  refresh_interval: '1s',
  'mapping.total_fields.limit': 2000,
  // fields beyond the limit are kept in _source but not indexed, instead of rejecting the event
  'mapping.total_fields.ignore_dynamic_beyond_limit': true,
  'mapping.ignore_malformed': true,
  'mapping.nested_objects.limit': 10000,
};

const keyword = { type: 'keyword', ignore_above: KEYWORD_IGNORE_ABOVE } as const;

export const EVENT_INDEX_MAPPINGS: estypes.MappingTypeMapping = {
  dynamic: true,
  date_detection: false,
  numeric_detection: false,
  dynamic_templates: [{ strings_as_keywords: { match_mapping_type: 'string', mapping: { ...keyword } } }],
  properties: {
    id: { type: 'keyword' },
    timestamp: { type: 'date_nanos', format: 'strict_date_optional_time_nanos' },
    project: { type: 'keyword' },
    event_message: { type: 'text', fields: { keyword: { ...keyword } } },
    metadata_unindexed: { type: 'object', enabled: false },
    shape: {
      type: 'object',
      properties: {
        version: { type: 'integer' },
        arrays: { type: 'keyword' },
        multi: { type: 'keyword' },
      },
    },
    metadata: {
      type: 'object',
      properties: {
        project: { type: 'keyword' },
        project_ref: { type: 'keyword' },
        request: {
          type: 'nested',
          properties: {
            url: { ...keyword },
            path: { ...keyword },
          },
        },
      },
    },
  },
};

/**
 * Above the built-in templates of full distributions (priority 100, documented as safe to override
 * above 500), so an index re-created by a bulk write gets the event mapping, not dynamic defaults.
 */
export const EVENT_INDEX_TEMPLATE_PRIORITY = 600;

/** One template per index prefix, so deployments (and test runs) sharing a cluster stay apart. */
export function eventIndexTemplateName(indexPrefix: string): string {
  return `${indexPrefix}events`;
}

/**
 * What the template covers: every time partition of the nine sources (`<prefix><source>-*`) and
 * their legacy single indices, never a wildcard that would also catch `<prefix>api-keys`.
 */
export function eventIndexPatterns(indexPrefix: string): string[] {
  return SOURCE_NAMES.flatMap((source) => [`${indexPrefix}${source}-*`, legacyIndexName(indexPrefix, source)]);
}

export function eventIndexTemplate(indexPrefix: string, replicas: number): estypes.IndicesPutIndexTemplateRequest {
  return {
    name: eventIndexTemplateName(indexPrefix),
    index_patterns: eventIndexPatterns(indexPrefix),
    priority: EVENT_INDEX_TEMPLATE_PRIORITY,
    template: { settings: { index: eventIndexSettings(replicas) }, mappings: EVENT_INDEX_MAPPINGS },
    _meta: { description: 'log platform source partitions: the stored event mapping' },
  };
}

/**
 * Installs (or refreshes) the template. Partitions are created by the first bulk write into them
 * (Elasticsearch's auto-create), and the template is what gives each the event mapping.
 * Idempotent; safe from several processes.
 */
export async function ensureEventIndexTemplate(client: Client, indexPrefix: string, replicas: number): Promise<void> {
  await client.indices.putIndexTemplate(eventIndexTemplate(indexPrefix, replicas));
}

/**
 * Creates a source's index with the event mapping unless it exists, answered once its primary has
 * started; true when this call created it. Safe to call from several processes at once.
 */
export async function ensureEventIndex(client: Client, index: string, replicas: number): Promise<boolean> {
  return createIndexUnlessExists(client, {
    index,
    settings: { index: eventIndexSettings(replicas) },
    mappings: EVENT_INDEX_MAPPINGS,
    wait_for_active_shards: 1,
  });
}
