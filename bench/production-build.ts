import { spawn } from 'node:child_process';
import path from 'node:path';

const builds = new Map<string, Promise<string>>();

/**
 * A checkout's compiled build (its dist/ folder), made by its own `npm run build` the first time it
 * is asked for in this run: what `npm start` and the images run, for the worker and the query service alike.
 */
export function productionBuild(root: string): Promise<string> {
  let build = builds.get(root);
  if (build === undefined) {
    build = new Promise<string>((resolve, reject) => {
      const child = spawn('npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
      child.once('error', reject);
      child.once('exit', (code) => (code === 0 ? resolve(path.join(root, 'dist')) : reject(new Error(`npm run build in ${root} exited with ${code}`))));
    });
    builds.set(root, build);
  }
  return build;
}
