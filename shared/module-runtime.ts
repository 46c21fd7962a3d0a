import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where our modules run from: the TypeScript sources (under tsx or vitest) or the compiled build in
 * dist/ (plain node, no loader). Processes we start ourselves are started the same way as we run.
 */
const thisFile = fileURLToPath(import.meta.url);
const extension = path.extname(thisFile);
const modulesRoot = path.resolve(path.dirname(thisFile), '..');

/** True when running the compiled JavaScript in dist/. */
export const compiled = extension === '.js';

/** The repository (package.json, stack/pom.xml, .stack-cache/), whether running from source or dist/. */
export const repositoryRoot = compiled ? path.dirname(modulesRoot) : modulesRoot;

/** The file to run for one of our modules named from the repository root without extension, e.g. `src/main`. */
export function modulePath(name: string): string {
  return path.join(modulesRoot, `${name}${extension}`);
}

/** Node options a child process needs to run one of our modules: the TypeScript loader, from source only. */
export const loaderArgs: readonly string[] = compiled ? [] : ['--import', 'tsx'];
