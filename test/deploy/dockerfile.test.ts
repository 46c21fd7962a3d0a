import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repositoryRoot } from '../../shared/module-runtime.ts';
import { QUERY_SERVICE_ENV, QUERY_SERVICE_NODE_ARGS } from '../../shared/query-service-start.ts';
import { INGEST_WORKER_ENV, INGEST_WORKER_NODE_ARGS } from '../../ingest/worker-start.ts';

interface Stage {
  name: string;
  from: string;
  instructions: string[];
}

/** The Dockerfile's stages with their instructions (comments and blank lines dropped). */
function stages(text: string): Stage[] {
  const result: Stage[] = [];
  for (const line of text.split('\n').map((raw) => raw.trim())) {
    if (line === '' || line.startsWith('#')) continue;
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?$/i.exec(line);
    if (from) result.push({ from: from[1]!, name: from[2] ?? '', instructions: [] });
    else result.at(-1)!.instructions.push(line);
  }
  return result;
}

describe('Dockerfile', () => {
  const all = stages(readFileSync(path.join(repositoryRoot, 'Dockerfile'), 'utf8'));
  const byName = new Map(all.map((stage) => [stage.name, stage]));
  const processes = { query: 'dist/src/main.js', ingest: 'dist/ingest/main.js' } as const;
  const nodeArgs: Record<string, readonly string[]> = { query: QUERY_SERVICE_NODE_ARGS, ingest: INGEST_WORKER_NODE_ARGS };

  it('builds with every dependency and compiles with npm run build', () => {
    const build = byName.get('build')!;
    expect(build.instructions).toContain('RUN npm ci --no-audit --no-fund');
    expect(build.instructions).toContain('RUN npm run build');
  });

  it('gives the runtime package.json, production dependencies and dist/ only, as a non-root user', () => {
    const runtime = byName.get('runtime')!;
    const copies = runtime.instructions.filter((instruction) => instruction.startsWith('COPY'));
    expect(copies).toEqual([
      'COPY package.json ./',
      'COPY --from=production-dependencies /build/node_modules ./node_modules',
      'COPY --from=build /build/dist ./dist',
    ]);
    expect(byName.get('production-dependencies')!.instructions.some((instruction) => /npm ci --omit=dev/.test(instruction))).toBe(true);
    const user = runtime.instructions.filter((instruction) => instruction.startsWith('USER ')).at(-1);
    expect(user).toBe('USER node');
  });

  it.each(Object.entries(processes))('has a %s image running %s with plain node and its own health check', (name, entry) => {
    const stage = byName.get(name)!;
    expect(stage.from).toBe('runtime');
    const command = stage.instructions.find((instruction) => instruction.startsWith('CMD '))!;
    expect(JSON.parse(command.slice(4))).toEqual(['node', '--enable-source-maps', ...nodeArgs[name]!, entry]);
    const healthcheck = stage.instructions.find((instruction) => instruction.startsWith('HEALTHCHECK '))!;
    expect(JSON.parse(healthcheck.slice(healthcheck.indexOf('CMD ') + 4))).toEqual(['node', 'dist/scripts/healthcheck.js', name]);
    expect(stage.instructions.join('\n')).not.toMatch(/tsx|USER root/);
  });

  it('starts the query service with the environment npm start gives it', () => {
    const env = byName
      .get('query')!
      .instructions.filter((instruction) => instruction.startsWith('ENV '))
      .join(' ');
    for (const [name, value] of Object.entries(QUERY_SERVICE_ENV)) expect(env).toMatch(new RegExp(`\\b${name}=${value}\\b`));
  });

  it('starts the ingest worker with the environment npm start gives it', () => {
    const env = byName
      .get('ingest')!
      .instructions.filter((instruction) => instruction.startsWith('ENV '))
      .join(' ');
    for (const [name, value] of Object.entries(INGEST_WORKER_ENV)) expect(env).toMatch(new RegExp(`\\b${name}=${value}\\b`));
  });

  it('ends with the query service, the default target', () => {
    expect(all.at(-1)!.name).toBe('query');
  });
});
