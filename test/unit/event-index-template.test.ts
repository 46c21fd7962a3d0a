import { describe, expect, it } from 'vitest';
import { EVENT_INDEX_MAPPINGS, EVENT_INDEX_SETTINGS, eventIndexTemplate } from '../../shared/event-index.ts';
import { SOURCE_NAMES } from '../../shared/sources.ts';

describe('event index template', () => {
  it('names exactly the nine source indices of the prefix, with the event settings and mapping', () => {
    const template = eventIndexTemplate('acme-');
    expect(template.index_patterns).toEqual(SOURCE_NAMES.map((source) => `acme-${source}`));
    expect(template.index_patterns).not.toContain('acme-api-keys');
    expect((template.index_patterns as string[]).some((pattern) => pattern.includes('*'))).toBe(false);
    expect(template.template).toEqual({ settings: { index: EVENT_INDEX_SETTINGS }, mappings: EVENT_INDEX_MAPPINGS });
    expect(template.priority).toBeGreaterThan(500);
  });

  it('is named after the prefix so deployments sharing a cluster keep their own', () => {
    expect(eventIndexTemplate('a-').name).not.toBe(eventIndexTemplate('b-').name);
  });
});
