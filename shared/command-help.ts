/**
 * `--help` and `-h` for the commands people run (`npm run <command> -- --help`): the command's usage
 * on stdout and exit 0, before it reads its configuration or reaches for a server.
 */
export function helpRequested(argv: readonly string[]): boolean {
  // after `--` the arguments are the command's data (a file named -h), not options
  const options = argv.includes('--') ? argv.slice(0, argv.indexOf('--')) : argv;
  return options.some((argument) => argument === '--help' || argument === '-h');
}

/** The help text: the usage (its first line `Usage: npm run ...`), then where the variables every command reads are described. */
export function helpText(usage: string): string {
  return `${usage.trim()}\n\nConfiguration is by environment variables: docs/configuration.md lists them with their defaults.\n`;
}

/** Prints the help and exits 0 when the arguments ask for it; otherwise returns. */
export function answerHelp(usage: string, argv: readonly string[] = process.argv.slice(2)): void {
  if (!helpRequested(argv)) return;
  process.stdout.write(helpText(usage));
  process.exit(0);
}
