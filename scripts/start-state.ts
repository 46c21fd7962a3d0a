import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../shared/config.ts';
import { processAlive } from '../stack/server-process.ts';

/**
 * What a running `npm start` tells the tools (`npm run keys`, `produce`, `demo-data`, `endpoints`, `indices`):
 * the servers it uses and the names it runs with, in `<STACK_CACHE_DIR>/npm-start.json` for as long as it runs.
 */
export interface StartState {
  pid: number;
  /** The variables the worker and the query service were started with that name servers and locations. */
  env: Record<string, string>;
}

/** The variables a command needs to reach what `npm start` runs. */
export const SHARED_VARIABLES = ['KAFKA_BROKERS', 'ELASTICSEARCH_URL', 'INDEX_PREFIX', 'TOPIC_PREFIX', 'SOURCE_TOPICS'] as const;

export function startStateFile(stackCacheDir: string): string {
  return path.join(stackCacheDir, 'npm-start.json');
}

export function writeStartState(file: string, env: NodeJS.ProcessEnv): void {
  const shared = Object.fromEntries(SHARED_VARIABLES.flatMap((name) => (env[name] ? [[name, env[name]]] : [])));
  const state: StartState = { pid: process.pid, env: shared };
  // written whole, then renamed: a reader never sees half a file
  writeFileSync(`${file}.${process.pid}`, `${JSON.stringify(state, null, 2)}\n`);
  renameSync(`${file}.${process.pid}`, file);
}

/** Removes the state file if it is this process's. */
export function removeStartState(file: string): void {
  if (readStartState(file)?.pid === process.pid) rmSync(file, { force: true });
}

function readStartState(file: string): StartState | undefined {
  try {
    const state = JSON.parse(readFileSync(file, 'utf8')) as StartState;
    return Number.isInteger(state.pid) && state.env && typeof state.env === 'object' ? state : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The environment a command runs with: its own when it names the servers (KAFKA_BROKERS or
 * ELASTICSEARCH_URL set), else completed with what a running `npm start` recorded (variables the
 * caller set still win). `source` says where the servers came from, for a line to the user.
 */
export function environmentWithStartState(env: NodeJS.ProcessEnv): { env: NodeJS.ProcessEnv; source?: string } {
  if (env.KAFKA_BROKERS?.trim() || env.ELASTICSEARCH_URL?.trim()) return { env };
  const file = startStateFile(loadConfig(env).STACK_CACHE_DIR);
  const state = readStartState(file);
  // a state file left by an npm start that was killed names servers that are gone
  if (!state || !processAlive(state.pid)) return { env };
  const completed: NodeJS.ProcessEnv = { ...env };
  for (const [name, value] of Object.entries(state.env)) if (!completed[name]?.trim()) completed[name] = value;
  return { env: completed, source: `the stack npm start (pid ${state.pid}) is running, from ${file}` };
}
