import { afterAll, describe, expect, inject, it } from 'vitest';
import { createIndexUnlessExists } from '../../shared/create-index.ts';
import { createElasticsearchClient } from '../../shared/elasticsearch.ts';
import { uniqueName } from '../support/stack.ts';

describe('createIndexUnlessExists', () => {
  const client = createElasticsearchClient({ url: inject('elasticsearchUrl') });
  const index = uniqueName('create-index');

  afterAll(async () => {
    await client.indices.delete({ index }, { ignore: [404] });
    await client.close();
  });

  it('creates the index once when several callers race, with the mapping asked for', async () => {
    const request = { index, mappings: { properties: { name: { type: 'keyword' as const } } } };
    const created = await Promise.all(Array.from({ length: 4 }, () => createIndexUnlessExists(client, request)));
    expect(created.filter(Boolean)).toHaveLength(1);
    expect(await createIndexUnlessExists(client, request)).toBe(false);
    const mapping = (await client.indices.getMapping({ index }))[index]!.mappings.properties;
    expect(mapping?.name?.type).toBe('keyword');
  });

  it('passes on errors other than "already exists"', async () => {
    await expect(createIndexUnlessExists(client, { index: 'Upper-Case-Is-Invalid' })).rejects.toThrow(/invalid_index_name/);
  });
});
