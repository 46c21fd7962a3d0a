/**
 * What `npm run produce` publishes: a file (or stdin) holding one JSON document (an event, or an
 * array of events) or newline-delimited JSON, one event per line. Each event becomes one message,
 * sent as the producer wrote it, so the worker's validation is what decides.
 */
export function eventsFromText(text: string): string[] {
  const trimmed = text.trim();
  if (trimmed === '') return [];
  try {
    const whole: unknown = JSON.parse(trimmed);
    return Array.isArray(whole) ? whole.map((event) => JSON.stringify(event)) : [JSON.stringify(whole)];
  } catch {
    // not one document: newline-delimited JSON
  }
  return trimmed
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
}

/** Codecs `npm run produce` can write (zstd is read by the worker, but there is no zstd compressor here). */
export const PRODUCE_COMPRESSIONS = ['none', 'gzip', 'snappy', 'lz4'] as const;
export type ProduceCompression = (typeof PRODUCE_COMPRESSIONS)[number];

export interface ProduceArguments {
  source: string;
  file?: string;
  compression: ProduceCompression;
}

export const PRODUCE_USAGE = 'Usage: npm run produce -- --source <source> [--compression none|gzip|snappy|lz4] [file.ndjson]';

export function parseProduceArguments(argv: string[]): ProduceArguments {
  let source: string | undefined;
  let file: string | undefined;
  let compression: string = 'none';
  for (let position = 0; position < argv.length; position += 1) {
    const argument = argv[position]!;
    if (argument === '--source') source = argv[++position];
    else if (argument.startsWith('--source=')) source = argument.slice('--source='.length);
    else if (argument === '--compression') compression = argv[++position] ?? '';
    else if (argument.startsWith('--compression=')) compression = argument.slice('--compression='.length);
    else if (argument.startsWith('--')) throw new Error(`unknown option ${argument}\n${PRODUCE_USAGE}`);
    else if (file === undefined) file = argument;
    else throw new Error(`only one file may be given, got ${file} and ${argument}`);
  }
  if (!source) throw new Error(`--source is required\n${PRODUCE_USAGE}`);
  if (!(PRODUCE_COMPRESSIONS as readonly string[]).includes(compression))
    throw new Error(`--compression must be one of ${PRODUCE_COMPRESSIONS.join(', ')}, got "${compression}"`);
  return { source, file, compression: compression as ProduceCompression };
}
