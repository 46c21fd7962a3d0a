import { describe, expect, it } from 'vitest';
import { declaredParametersSchema, problemWith } from '../../queries/declared-parameters.ts';
import { endpointInputSchema, issuesText } from '../../queries/endpoint-record.ts';
import { logsAll } from '../../queries/logs-all.ts';
import { SEEDED_ENDPOINTS } from '../../queries/seeds.ts';
import { definitionOf, SOURCE_TABLES } from '../../queries/stored-endpoint.ts';
import { usageApiCounts } from '../../queries/usage-api-counts.ts';
import { validateParameters } from '../../src/endpoints/request.ts';

const minimal = { name: 'errors.per-function', sql: 'select count(*) as n from function_logs where event_message like @text', parameters: [] };

describe('endpoint record', () => {
  it('fills the defaults of the issue: 1000 rows, not cached, sandboxable, not redacted, enabled', () => {
    expect(endpointInputSchema.parse(minimal)).toEqual({
      ...minimal,
      description: '',
      maxRows: 1000,
      cacheSeconds: 0,
      warmingSeconds: null,
      sandboxable: true,
      redactPii: false,
      enabled: true,
    });
  });

  it.each([
    [{ ...minimal, name: 'Errors Per Function' }, /^name: a name is lower-case words/],
    [{ ...minimal, maxRows: 10_001 }, /^maxRows: /],
    [{ ...minimal, maxRows: 0 }, /^maxRows: /],
    [{ ...minimal, warmingSeconds: 60 }, /warming needs caching/],
    [{ ...minimal, cacheSeconds: 30, warmingSeconds: 60 }, /must not exceed cacheSeconds/],
    [
      {
        ...minimal,
        parameters: [
          { name: 'a', type: 'string' },
          { name: 'a', type: 'integer' },
        ],
      },
      /parameters\.1\.name: parameter a is declared twice/,
    ],
    [{ ...minimal, parameters: [{ name: 'sql', type: 'string' }] }, /sandbox parameters/],
    [{ ...minimal, parameters: [{ name: 'Stats', type: 'boolean' }] }, /sql, lql, stats, format, cursor, page_size are read by the query route itself/],
    [{ ...minimal, parameters: [{ name: 'page_size', type: 'integer' }] }, /page_size are read by the query route itself/],
    [{ ...minimal, parameters: [{ name: 'a', type: 'string', required: true, default: 'x' }] }, /either required or has a default/],
    [{ ...minimal, parameters: [{ name: 'a', type: 'string', pattern: '(' }] }, /not a valid regular expression/],
    [{ ...minimal, parameters: [{ name: 'a', type: 'date' }] }, /parameters\.0\.type/],
    [{ ...minimal, owner: 'me' }, /owner/],
  ])('refuses %j, naming the field', (input, message) => {
    const parsed = endpointInputSchema.safeParse(input);
    expect(parsed.success).toBe(false);
    expect(issuesText(parsed.error!)).toMatch(message);
  });
});

describe('declared parameters', () => {
  const schema = declaredParametersSchema([
    { name: 'project', type: 'string', required: true, description: 'the project' },
    { name: 'limit_rows', type: 'integer', required: false, default: 10, description: '' },
    { name: 'level', type: 'string', required: false, allowedValues: ['info', 'error'], description: '' },
    { name: 'since', type: 'timestamp', required: false, description: '' },
    { name: 'code', type: 'string', required: false, pattern: '[A-Z]{3}', description: '' },
    { name: 'verbose', type: 'boolean', required: false, description: '' },
  ]);
  const endpoint = { ...logsAll, name: 'custom', parameters: schema };

  it('normalises values to text and fills defaults', () => {
    expect(
      validateParameters(endpoint, { project: ' p1 ', level: 'error', verbose: 'TRUE', code: 'ABC', since: '2024-01-01T00:00:00Z', other: 'dropped' }),
    ).toEqual({
      project: 'p1',
      limit_rows: '10',
      level: 'error',
      since: '2024-01-01T00:00:00Z',
      code: 'ABC',
      verbose: 'true',
    });
    expect(validateParameters(endpoint, { project: 'p1', limit_rows: '007' }).limit_rows).toBe('7');
  });

  it.each([
    [{}, /project is required \(the project\)/],
    [{ project: '' }, /project is required/],
    [{ project: 'p', limit_rows: '1.5' }, /limit_rows must be an integer; got "1.5"/],
    [{ project: 'p', level: 'debug' }, /level must be one of info, error; got "debug"/],
    [{ project: 'p', since: 'yesterday' }, /since must be an ISO 8601 timestamp/],
    [{ project: 'p', code: 'ABCD' }, /code must match the pattern \[A-Z\]\{3\}/],
    [{ project: 'p', verbose: 'yes' }, /verbose must be true or false/],
  ])('refuses %j with 400 naming the parameter', (supplied, message) => {
    expect(() => validateParameters(endpoint, supplied)).toThrow(message);
  });

  it('checks a default by the rules of its parameter', () => {
    expect(problemWith({ name: 'n', type: 'integer', required: false, description: '' }, 'ten')).toBe('must be an integer');
  });
});

describe('seeded endpoints', () => {
  it('seed the two spec endpoints with their UUIDs and settings', () => {
    const [usage, logs] = SEEDED_ENDPOINTS.map((seed) => seed.record);
    expect(usage).toMatchObject({
      id: usageApiCounts.id,
      name: 'usage.api-counts',
      maxRows: 1000,
      cacheSeconds: 900,
      warmingSeconds: 300,
      sandboxable: true,
      redactPii: false,
      enabled: true,
    });
    expect(logs).toMatchObject({
      id: logsAll.id,
      name: 'logs.all',
      maxRows: 1000,
      cacheSeconds: 0,
      warmingSeconds: null,
      sandboxable: true,
      redactPii: false,
      enabled: true,
    });
    for (const { id, ...input } of SEEDED_ENDPOINTS.map((seed) => seed.record)) expect(endpointInputSchema.parse(input), id).toEqual(input);
  });

  it('answer with their compiled definitions while their query is the seeded one', () => {
    for (const seed of SEEDED_ENDPOINTS) {
      const definition = definitionOf({ ...seed.record, version: 1 });
      expect(definition.selection).toBe(seed.compiled.selection);
      expect(definition.parameters).toBe(seed.compiled.parameters);
      expect(definition.ctes).toBe(seed.compiled.ctes);
      expect(definition.cache).toEqual(seed.compiled.cache);
      expect(definition.maxRows).toBe(seed.compiled.maxRows);
    }
  });

  it('run edited SQL over the same tables, as saved SQL', () => {
    const usage = SEEDED_ENDPOINTS[0]!.record;
    const edited = definitionOf({ ...usage, sql: 'select * from chart_counts', version: 2 });
    expect(edited.selection).toEqual({ kind: 'sql', text: 'select * from chart_counts' });
    expect(edited.ctes).toBe(usageApiCounts.ctes);
    expect(edited.version).toBe(2);
  });

  it('give any other endpoint the nine project-scoped sources', () => {
    const definition = definitionOf({ ...endpointInputSchema.parse(minimal), id: '00000000-0000-4000-8000-000000000001' });
    expect(definition.ctes).toBe(SOURCE_TABLES);
    expect(definition.cache).toBeNull();
  });
});
