import path from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Runs command modules in this one process (their shared imports loaded once, not once per command)
 * with `<flag>` as their only argument: `node --import tsx command-help-driver.ts <flag> <file>...`.
 * process.exit is stopped at its first call, whose code is recorded, and the module's evaluation ends
 * there; prints one JSON line per file: its exit code and what it wrote to stdout. A command that
 * does not exit while it is loaded ends the run (its work must not go on).
 */
class Exited extends Error {}

const [flag, ...files] = process.argv.slice(2);
// a command whose main() is async reports the stopped exit through its own error handler, which exits again
process.on('unhandledRejection', () => undefined);
const writeOut = process.stdout.write.bind(process.stdout);
const writeErr = process.stderr.write.bind(process.stderr);
const realExit = process.exit.bind(process);

for (const [index, file] of files.entries()) {
  let exitCode: number | undefined;
  let stdout = '';
  process.argv = [process.argv[0]!, file!, flag!];
  process.exit = ((code?: number) => {
    exitCode ??= code ?? 0;
    throw new Exited();
  }) as typeof process.exit;
  process.stdout.write = ((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  }) as typeof process.stdout.write;
  process.stderr.write = (() => true) as typeof process.stderr.write;
  try {
    // the query string makes each run a fresh module instance
    await import(`${pathToFileURL(path.resolve(file!)).href}?run=${index}`);
  } catch (error) {
    if (!(error instanceof Exited)) exitCode ??= -1;
  }
  process.stdout.write = writeOut;
  process.stderr.write = writeErr;
  writeOut(`${JSON.stringify({ file, exitCode: exitCode ?? null, stdout })}\n`);
  // a command that did not stop at once has started its work: end the process before that work goes further
  if (exitCode === undefined) realExit(1);
}
realExit(0);
