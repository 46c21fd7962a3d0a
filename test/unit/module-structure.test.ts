import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The import graph of the code that ships (src/, queries/, shared/, ingest/), read with a regex over
 * import and export-from statements, type-only ones included: they state a dependency too.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const FOLDERS = ['src', 'queries', 'shared', 'ingest'] as const;
type Folder = (typeof FOLDERS)[number];

/** Which folders each folder may import from: the saved endpoints and shared/ never depend on the service or the worker. */
const MAY_IMPORT: Record<Folder, readonly Folder[]> = {
  src: ['src', 'queries', 'shared'],
  ingest: ['ingest', 'shared'],
  queries: ['queries', 'shared'],
  shared: ['shared'],
};

const SPECIFIER = /(?:^|[\s;])(?:import|export)\s(?:[^'";]*?\sfrom\s)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

function sourceFiles(folder: string): string[] {
  return readdirSync(path.join(ROOT, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)));
}

/** The repository-relative files a module imports (relative specifiers only; packages are not part of the graph). */
function importsOf(file: string, text: string): string[] {
  const imports: string[] = [];
  for (const match of text.matchAll(SPECIFIER)) {
    const specifier = match[1] ?? match[2]!;
    if (specifier.startsWith('.')) imports.push(path.normalize(path.join(path.dirname(file), specifier)));
  }
  return imports;
}

/** Every cycle's modules, found by depth-first search (each cycle reported once, from where the search met it). */
function cyclesOf(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string) => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') cycles.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return cycles;
}

const folderOf = (file: string) => file.split(path.sep)[0] as Folder;

function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const folder of FOLDERS) {
    for (const file of sourceFiles(folder)) graph.set(file, importsOf(file, readFileSync(path.join(ROOT, file), 'utf8')));
  }
  return graph;
}

describe('module structure', () => {
  const graph = importGraph();

  it('reads every import form a module uses', () => {
    const text = [
      "import { a } from './a.ts';",
      "import type { B } from '../b.ts';",
      'import {\n  c,\n  type D,\n} from "./c.ts";',
      "export { e } from './e.ts';",
      "export type { F } from './f.ts';",
      "import './side-effect.ts';",
      "const g = await import('./g.ts');",
      "import { z } from 'zod';",
    ].join('\n');
    expect(importsOf(path.join('src', 'x', 'm.ts'), text)).toEqual(
      ['src/x/a.ts', 'src/b.ts', 'src/x/c.ts', 'src/x/e.ts', 'src/x/f.ts', 'src/x/side-effect.ts', 'src/x/g.ts'].map(path.normalize),
    );
  });

  it('finds a cycle, and none in a chain', () => {
    expect(
      cyclesOf(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', ['a']],
        ]),
      ),
    ).toEqual([['a', 'b', 'c', 'a']]);
    expect(
      cyclesOf(
        new Map([
          ['a', ['b', 'c']],
          ['b', ['c']],
          ['c', []],
        ]),
      ),
    ).toEqual([]);
  });

  // an import the regex misreads, or one leaving these folders, would drop out of the graph unseen
  it('resolves every relative import to a file of these folders', () => {
    const missing = [...graph].flatMap(([file, imports]) => imports.filter((target) => !graph.has(target)).map((target) => `${file} -> ${target}`));
    expect(missing).toEqual([]);
  });

  it('has no import cycle', () => {
    expect(cyclesOf(graph).map((cycle) => cycle.map((file) => file.split(path.sep).join('/')).join(' -> '))).toEqual([]);
  });

  it('points dependencies one way: src/ -> queries/ -> shared/, ingest/ -> shared/', () => {
    const wrong = [...graph].flatMap(([file, imports]) =>
      imports.filter((target) => !MAY_IMPORT[folderOf(file)].includes(folderOf(target))).map((target) => `${file} -> ${target}`),
    );
    expect(wrong).toEqual([]);
  });
});
