import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** The parts of a V8 CPU profile (node --cpu-prof) read here. */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** CPU microseconds by name: where a profile's samples fell, itself (self) or anywhere below (inclusive). */
export interface ProfileSummary {
  /** Sampled CPU microseconds in the window, idle left out. */
  busyMicros: number;
  /** By package (node_modules), node core, or our file. */
  packages: Map<string, number>;
  /** By function, self time. */
  functions: Map<string, number>;
  /** By function of our own code (src/, shared/), inclusive of what it calls. */
  ours: Map<string, number>;
}

/** Where a frame's code lives: a package name, node core, V8's own entries ((garbage collector), (program)), or our file. */
function packageOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(V8 builtins)';
  if (url.startsWith('node:')) return 'node core';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const [scope, name] = url.slice(modules + '/node_modules/'.length).split('/');
    return scope!.startsWith('@') ? `${scope}/${name}` : scope!;
  }
  const ours = /\/(?:dist\/)?((?:src|shared|bench)\/.*)$/.exec(url);
  return ours ? ours[1]! : url;
}

function frameName(frame: CpuProfile['nodes'][number]['callFrame']): string {
  const where = packageOf(frame.url, frame.functionName);
  return frame.url === '' ? where : `${frame.functionName || '(anonymous)'} ${where}:${frame.lineNumber + 1}`;
}

/**
 * Sums a profile's samples taken between `fromMicros` and `toMicros` (the monotonic clock V8 stamps
 * samples with, process.hrtime's): so the start-up and shutdown of the process are left out.
 */
export function summarizeProfile(profile: CpuProfile, fromMicros: number, toMicros: number): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const summary: ProfileSummary = { busyMicros: 0, packages: new Map(), functions: new Map(), ours: new Map() };
  const add = (map: Map<string, number>, key: string, micros: number) => map.set(key, (map.get(key) ?? 0) + micros);
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i += 1) {
    at += profile.timeDeltas[i]!;
    // a sample stands for the time until the next one
    const micros = profile.timeDeltas[i + 1] ?? 0;
    if (at < fromMicros || at > toMicros) continue;
    const node = byId.get(profile.samples[i]!)!;
    if (node.callFrame.functionName === '(idle)') continue;
    summary.busyMicros += micros;
    add(summary.packages, packageOf(node.callFrame.url, node.callFrame.functionName), micros);
    add(summary.functions, frameName(node.callFrame), micros);
    // inclusive: each of our functions on the stack once, however often it recurs
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const frame = byId.get(id)!.callFrame;
      if (!/\/(src|shared)\//.test(frame.url) || frame.url.includes('/node_modules/')) continue;
      const name = frameName(frame);
      if (!seen.has(name)) add(summary.ours, name, micros);
      seen.add(name);
    }
  }
  return summary;
}

/** The largest .cpuprofile node wrote into `folder`: the server's, beside any short-lived helper's (tsx starts one). */
export function readProfile(folder: string): CpuProfile {
  const files = readdirSync(folder)
    .filter((file) => file.endsWith('.cpuprofile'))
    .map((file) => path.join(folder, file))
    .sort((a, b) => statSync(b).size - statSync(a).size);
  if (files.length === 0) throw new Error(`${folder}: no .cpuprofile`);
  return JSON.parse(readFileSync(files[0]!, 'utf8')) as CpuProfile;
}

/** Markdown rows of the largest entries of `map`, in microseconds per request and share of the busy time. */
export function topRows(map: Map<string, number>, summary: ProfileSummary, requests: number, top: number): string[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, micros]) => `| ${name.replaceAll('|', '\\|')} | ${(micros / requests).toFixed(1)} | ${((100 * micros) / summary.busyMicros).toFixed(1)}% |`);
}
