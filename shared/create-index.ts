import { errors, type Client, type estypes } from '@elastic/elasticsearch';

/**
 * Creates an index unless it exists; true when this call created it. Several processes may start at
 * once, so losing the race to another creator is not an error.
 */
export async function createIndexUnlessExists(client: Client, request: estypes.IndicesCreateRequest): Promise<boolean> {
  if (await client.indices.exists({ index: request.index })) return false;
  try {
    await client.indices.create(request);
    return true;
  } catch (error) {
    if (error instanceof errors.ResponseError && error.body?.error?.type === 'resource_already_exists_exception') return false;
    throw error;
  }
}
