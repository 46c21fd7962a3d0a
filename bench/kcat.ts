import { spawn, spawnSync } from 'node:child_process';

/** Why kcat cannot run here, or undefined when it can. kcat (librdkafka) is the only producer here that writes zstd. */
export function kcatMissing(): string | undefined {
  const probe = spawnSync('kcat', ['-V'], { encoding: 'utf8' });
  return probe.error || probe.status !== 0 ? 'kcat is not installed; install it with: apt-get install -y kcat' : undefined;
}

/** Produces each line of `file` as one message of `topic`, compressed with `codec` (none, gzip, snappy, lz4, zstd). */
export function kcatProduce(brokers: string[], topic: string, codec: string, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('kcat', ['-P', '-b', brokers.join(','), '-t', topic, '-z', codec, '-X', 'linger.ms=20', '-l', file], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('error', (error) => reject(new Error(`kcat could not run (${error.message}); install it (apt-get install kcat)`)));
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`kcat -z ${codec} to ${topic} exited ${code}`))));
  });
}
