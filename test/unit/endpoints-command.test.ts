import { describe, expect, it } from 'vitest';
import { EndpointsUsageError, endpointTable, parseEndpointsCommand, versionTable } from '../../src/endpoints/endpoints-command.ts';

describe('npm run endpoints', () => {
  it('parses each command, reading JSON from a file or standard input', () => {
    expect(parseEndpointsCommand(['list'])).toEqual({ action: 'list', json: false });
    expect(parseEndpointsCommand(['list', '--json'])).toEqual({ action: 'list', json: true });
    expect(parseEndpointsCommand(['show', 'logs.all'])).toEqual({ action: 'show', endpoint: 'logs.all' });
    expect(parseEndpointsCommand(['create'])).toEqual({ action: 'create', from: { kind: 'stdin' } });
    expect(parseEndpointsCommand(['create', 'e.json'])).toEqual({ action: 'create', from: { kind: 'file', path: 'e.json' } });
    expect(parseEndpointsCommand(['edit', 'fn.errors', '-'])).toEqual({ action: 'edit', endpoint: 'fn.errors', from: { kind: 'stdin' } });
    expect(parseEndpointsCommand(['versions', 'fn.errors'])).toEqual({ action: 'versions', endpoint: 'fn.errors', json: false });
    expect(parseEndpointsCommand(['restore', 'fn.errors', '2'])).toEqual({ action: 'restore', endpoint: 'fn.errors', version: 2 });
    expect(parseEndpointsCommand(['delete', 'fn.errors'])).toEqual({ action: 'delete', endpoint: 'fn.errors' });
  });

  it.each([
    [[], /missing command/],
    [['rename', 'x'], /unknown command "rename"/],
    [['show'], /show needs one endpoint name or id/],
    [['restore', 'x', 'first'], /a version is a whole number from 1; got "first"/],
    [['restore', 'x', '0'], /whole number/],
    [['edit'], /edit needs an endpoint name or id/],
    [['list', '--yaml'], /yaml/],
  ])('refuses %j with a usage error', (argv, message) => {
    expect(() => parseEndpointsCommand(argv)).toThrow(EndpointsUsageError);
    expect(() => parseEndpointsCommand(argv)).toThrow(message);
  });

  it('prints endpoints and versions as tables', () => {
    const record = {
      id: '00000000-0000-4000-8000-000000000001',
      version: 3,
      savedAt: '2024-01-01T00:00:00.000Z',
      name: 'fn.errors',
      description: '',
      sql: 'select 1',
      parameters: [
        { name: 'project', type: 'string' as const, required: true, description: '' },
        { name: 'text', type: 'string' as const, required: false, default: '%', description: '' },
      ],
      maxRows: 1000,
      cacheSeconds: 60,
      warmingSeconds: null,
      sandboxable: true,
      redactPii: false,
      enabled: true,
    };
    expect(endpointTable([record]).split('\n')).toEqual([
      'NAME       ID                                    VERSION  ENABLED  CACHE  PARAMETERS',
      'fn.errors  00000000-0000-4000-8000-000000000001  3        yes      60s    project:string,text?:string',
    ]);
    expect(versionTable([{ ...record, deleted: true }]).split('\n')[1]).toBe('3        2024-01-01T00:00:00.000Z  fn.errors  deleted');
  });
});
