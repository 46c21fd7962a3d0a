import { textTable } from '../../shared/text-table.ts';
import { parseArgs } from 'node:util';
import type { EndpointRecord } from '../../queries/endpoint-record.ts';
import type { VersionView } from './management.ts';

/** Where an endpoint's JSON comes from: a file, or standard input (`-` or nothing). */
export type JsonSource = { kind: 'file'; path: string } | { kind: 'stdin' };

export type EndpointsCommand =
  | { action: 'list'; json: boolean }
  | { action: 'show'; endpoint: string }
  | { action: 'create'; from: JsonSource }
  | { action: 'edit'; endpoint: string; from: JsonSource }
  | { action: 'delete'; endpoint: string }
  | { action: 'versions'; endpoint: string; json: boolean }
  | { action: 'restore'; endpoint: string; version: number }
  | { action: 'usage'; url?: string; json: boolean };

export const ENDPOINTS_USAGE = `Usage:
  npm run endpoints -- list [--json]
  npm run endpoints -- show <name-or-id>
  npm run endpoints -- create [<file.json> | -]          the endpoint as JSON (fields as in POST /api/endpoints)
  npm run endpoints -- edit <name-or-id> [<file.json> | -]  the fields to change (as PATCH /api/endpoints/<id>)
  npm run endpoints -- delete <name-or-id>
  npm run endpoints -- versions <name-or-id> [--json]
  npm run endpoints -- restore <name-or-id> <version>
  npm run endpoints -- usage [--url <query service URL>] [--json]   requests, errors, durations, rows and bytes per endpoint and key,
                                                                    from the running query service's /metrics (default http://HOST:PORT)
Without a file, or with -, the JSON is read from standard input.`;

export class EndpointsUsageError extends Error {}

function sourceOf(argument: string | undefined): JsonSource {
  return argument === undefined || argument === '-' ? { kind: 'stdin' } : { kind: 'file', path: argument };
}

/** Parses `npm run endpoints -- ...` arguments; throws EndpointsUsageError saying what is wrong. */
export function parseEndpointsCommand(argv: string[]): EndpointsCommand {
  const [action, ...rest] = argv;
  let parsed;
  try {
    parsed = parseArgs({ args: rest, allowPositionals: true, options: { json: { type: 'boolean' }, url: { type: 'string' } } });
  } catch (error) {
    throw new EndpointsUsageError(`${(error as Error).message}\n${ENDPOINTS_USAGE}`);
  }
  const { values, positionals } = parsed;
  const expect = (min: number, max: number, what: string) => {
    if (positionals.length < min || positionals.length > max) throw new EndpointsUsageError(`${action} needs ${what}\n${ENDPOINTS_USAGE}`);
  };
  if (values.url !== undefined && action !== 'usage') throw new EndpointsUsageError(`--url is for usage only\n${ENDPOINTS_USAGE}`);
  switch (action) {
    case 'usage':
      expect(0, 0, 'no argument');
      return { action, json: values.json ?? false, ...(values.url === undefined ? {} : { url: values.url }) };
    case 'list':
      expect(0, 0, 'no argument');
      return { action, json: values.json ?? false };
    case 'show':
    case 'delete':
      expect(1, 1, 'one endpoint name or id');
      return { action, endpoint: positionals[0]! };
    case 'create':
      expect(0, 1, 'at most one file (or - for standard input)');
      return { action, from: sourceOf(positionals[0]) };
    case 'edit':
      expect(1, 2, 'an endpoint name or id, then at most one file (or - for standard input)');
      return { action, endpoint: positionals[0]!, from: sourceOf(positionals[1]) };
    case 'versions':
      expect(1, 1, 'one endpoint name or id');
      return { action, endpoint: positionals[0]!, json: values.json ?? false };
    case 'restore': {
      expect(2, 2, 'an endpoint name or id and a version number');
      const version = positionals[1]!;
      if (!/^[1-9]\d{0,8}$/.test(version)) throw new EndpointsUsageError(`a version is a whole number from 1; got "${version}"`);
      return { action, endpoint: positionals[0]!, version: Number(version) };
    }
    default:
      throw new EndpointsUsageError(`${action === undefined ? 'missing command' : `unknown command "${action}"`}\n${ENDPOINTS_USAGE}`);
  }
}

function table(header: string[], rows: string[][]): string {
  return textTable(header, rows).join('\n');
}

/** One line per endpoint for `list`. */
export function endpointTable(records: readonly EndpointRecord[]): string {
  return table(
    ['NAME', 'ID', 'VERSION', 'ENABLED', 'CACHE', 'PARAMETERS'],
    records.map((record) => [
      record.name,
      record.id,
      String(record.version),
      record.enabled ? 'yes' : 'no',
      record.cacheSeconds > 0 ? `${record.cacheSeconds}s` : '-',
      record.parameters.map((parameter) => `${parameter.name}${parameter.required ? '' : '?'}:${parameter.type}`).join(',') || '-',
    ]),
  );
}

/** One line per version for `versions`. */
export function versionTable(versions: readonly VersionView[]): string {
  return table(
    ['VERSION', 'SAVED', 'NAME', 'STATE'],
    versions.map((version) => [String(version.version), version.savedAt, version.name, version.deleted ? 'deleted' : version.enabled ? 'enabled' : 'disabled']),
  );
}
