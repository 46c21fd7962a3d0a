import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { SourceName } from '../shared/sources.ts';

/** Why kcat cannot run here, or undefined when it can. kcat (librdkafka) is the only producer here that writes zstd. */
export function kcatMissing(): string | undefined {
  const probe = spawnSync('kcat', ['-V'], { encoding: 'utf8' });
  return probe.error || probe.status !== 0 ? 'kcat is not installed; install it with: apt-get install -y kcat' : undefined;
}

/** Writes each source's messages as the lines of a file of its own and has kcat produce them into its topic, compressed with `codec`. */
export async function kcatProduceSources(
  brokers: string[],
  routes: { source: SourceName; topic: string }[],
  bySource: Map<SourceName, Buffer[]>,
  codec: string,
): Promise<void> {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'bench-kcat-'));
  try {
    await Promise.all(
      routes.map(async ({ source, topic }) => {
        const values = bySource.get(source) ?? [];
        if (values.length === 0) return;
        const file = path.join(folder, `${source}.ndjson`);
        // JSON.stringify writes no newline inside a value: one line is one message
        writeFileSync(file, Buffer.concat(values.flatMap((value) => [value, NEWLINE])));
        await kcatProduce(brokers, topic, codec, file);
      }),
    );
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

const NEWLINE = Buffer.from('\n');

/** Produces each line of `file` as one message of `topic`, compressed with `codec` (none, gzip, snappy, lz4, zstd). */
function kcatProduce(brokers: string[], topic: string, codec: string, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('kcat', ['-P', '-b', brokers.join(','), '-t', topic, '-z', codec, '-X', 'linger.ms=20', '-l', file], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('error', (error) => reject(new Error(`kcat could not run (${error.message}); install it (apt-get install kcat)`)));
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`kcat -z ${codec} to ${topic} exited ${code}`))));
  });
}
