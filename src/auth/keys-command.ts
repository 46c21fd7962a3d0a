import { textTable } from '../../shared/text-table.ts';
import { parseArgs } from 'node:util';
import type { ApiKeyRecord } from './key-store.ts';

export type KeysCommand =
  | { action: 'create'; account: string; endpoints: 'all' | string[]; projects: string[] | null; admin?: true }
  | { action: 'list'; json: boolean }
  | { action: 'revoke'; keyId: string };

export const KEYS_USAGE = `Usage:
  npm run keys -- create --account <account> [--endpoints <name-or-id>,...] [--projects <project>,...] [--admin]
  npm run keys -- list [--json]
  npm run keys -- revoke <key id>
Without --endpoints a key may query every endpoint; without --projects, every project.
--admin makes an operator key: it may also manage the saved endpoints (/api/endpoints).`;

export class KeysUsageError extends Error {}

function commaList(text: string): string[] {
  return text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
}

/** An endpoint as a key's scope names it. */
export interface NamedEndpoint {
  id: string;
  name: string;
}

/**
 * Endpoint names or ids as the endpoints' ids, which they keep through every version (a rename
 * included), so a key keeps its scope; unknown ones are an error listing the valid names.
 */
export function canonicalEndpointIds(requested: string[], endpoints: readonly NamedEndpoint[]): string[] {
  return requested.map((wanted) => {
    const endpoint = endpoints.find((candidate) => candidate.name === wanted || candidate.id === wanted.toLowerCase());
    if (!endpoint) throw new KeysUsageError(`unknown endpoint "${wanted}"; known endpoints: ${endpoints.map((e) => e.name).join(', ')}`);
    return endpoint.id;
  });
}

/** Parses `npm run keys -- ...` arguments; throws KeysUsageError saying what is wrong. */
export function parseKeysCommand(argv: string[], endpoints: readonly NamedEndpoint[]): KeysCommand {
  const [action, ...rest] = argv;
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      options: {
        account: { type: 'string' },
        endpoints: { type: 'string' },
        projects: { type: 'string' },
        json: { type: 'boolean' },
        admin: { type: 'boolean' },
      },
    });
  } catch (error) {
    throw new KeysUsageError(`${(error as Error).message}\n${KEYS_USAGE}`);
  }
  const { values, positionals } = parsed;
  switch (action) {
    case 'create': {
      const account = values.account?.trim();
      if (!account) throw new KeysUsageError(`create needs --account <account>\n${KEYS_USAGE}`);
      if (positionals.length > 0) throw new KeysUsageError(`unexpected argument "${positionals[0]}"\n${KEYS_USAGE}`);
      const endpointList = values.endpoints === undefined ? undefined : commaList(values.endpoints);
      const projectList = values.projects === undefined ? undefined : commaList(values.projects);
      if (endpointList?.length === 0) throw new KeysUsageError('--endpoints needs at least one endpoint name or id; leave it out for every endpoint');
      if (projectList?.length === 0) throw new KeysUsageError('--projects needs at least one project; leave it out for every project');
      return {
        action,
        account,
        endpoints: endpointList === undefined ? 'all' : canonicalEndpointIds(endpointList, endpoints),
        projects: projectList ?? null,
        ...(values.admin === true ? { admin: true as const } : {}),
      };
    }
    case 'list':
      return { action, json: values.json ?? false };
    case 'revoke': {
      const keyId = positionals[0];
      if (!keyId || positionals.length > 1) throw new KeysUsageError(`revoke needs exactly one key id (see npm run keys -- list)\n${KEYS_USAGE}`);
      return { action, keyId };
    }
    default:
      throw new KeysUsageError(`${action === undefined ? 'missing command' : `unknown command "${action}"`}\n${KEYS_USAGE}`);
  }
}

/** One line per key for `list`: never the key or its hash, which are not stored or not shown. Endpoint ids are shown by their names now. */
export function keyTable(records: ApiKeyRecord[], endpoints: readonly NamedEndpoint[] = []): string {
  const header = ['KEY ID', 'ACCOUNT', 'ENDPOINTS', 'PROJECTS', 'CREATED', 'REVOKED'];
  const nameOf = (scope: string) => endpoints.find((endpoint) => endpoint.id === scope)?.name ?? scope;
  const rows = records.map((r) => [
    r.keyId,
    r.account,
    r.endpoints === 'all' ? 'all' : r.endpoints.map(nameOf).join(','),
    r.projects === null ? 'all' : r.projects.join(','),
    r.createdAt,
    r.revokedAt ?? '-',
  ]);
  return textTable(header, rows).join('\n');
}
