import { describe, expect, it } from 'vitest';
import { EVENT_INDEX_MAPPINGS, EVENT_INDEX_SETTINGS, eventIndexTemplate } from '../../shared/event-index.ts';
import { SOURCE_NAMES } from '../../shared/sources.ts';

describe('event index template', () => {
  it('covers the partitions and the legacy index of each of the nine sources, with the event settings and mapping', () => {
    const template = eventIndexTemplate('acme-', 0);
    expect(template.index_patterns).toEqual(SOURCE_NAMES.flatMap((source) => [`acme-${source}-*`, `acme-${source}`]));
    const matches = (index: string) =>
      (template.index_patterns as string[]).some((pattern) => (pattern.endsWith('*') ? index.startsWith(pattern.slice(0, -1)) : index === pattern));
    expect(matches('acme-edge_logs-2024.03.20')).toBe(true);
    expect(matches('acme-edge_logs')).toBe(true);
    expect(matches('acme-api-keys')).toBe(false);
    expect(matches('acme-edge_logs_other')).toBe(false);
    expect(template.template).toEqual({ settings: { index: EVENT_INDEX_SETTINGS }, mappings: EVENT_INDEX_MAPPINGS });
    expect(template.priority).toBeGreaterThan(500);
  });

  it('asks for the configured replicas (ELASTICSEARCH_INDEX_REPLICAS): none on a single node, one per shard on a cluster', () => {
    expect(eventIndexTemplate('acme-', 0).template?.settings?.index?.number_of_replicas).toBe(0);
    const cluster = eventIndexTemplate('acme-', 1).template?.settings?.index;
    expect(cluster?.number_of_replicas).toBe(1);
    expect({ ...cluster, number_of_replicas: 0 }).toEqual(EVENT_INDEX_SETTINGS);
  });

  it('is named after the prefix so deployments sharing a cluster keep their own', () => {
    expect(eventIndexTemplate('a-', 0).name).not.toBe(eventIndexTemplate('b-', 0).name);
  });
});
