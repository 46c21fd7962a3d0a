import { execFile } from 'node:child_process';

/** One record of a topic as a read_committed consumer receives it. */
export interface CommittedRecord {
  key: string;
  value: string;
  headers: Record<string, string>;
  timestampMs: number;
}

/** What `kcat -J` prints for one record. */
interface KcatRecord {
  ts: number;
  key: string | null;
  payload: string | null;
  headers?: string[];
}

/**
 * Every committed record of `topic` from its beginning, read by kcat (librdkafka) with
 * isolation.level=read_committed. Not kafkajs: its consumer (2.2.4) marks at most one aborted
 * transaction as begun per record it reads, so a fetch that starts inside two aborted transactions
 * of different producers hands out the second one's records, which a transactional writer's checks
 * would then count as letters written twice.
 */
export function readCommitted(brokers: readonly string[], topic: string): Promise<CommittedRecord[]> {
  const args = ['-C', '-b', brokers.join(','), '-t', topic, '-o', 'beginning', '-e', '-q', '-J', '-X', 'isolation.level=read_committed'];
  return new Promise((resolve, reject) => {
    execFile('kcat', args, { maxBuffer: 512 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) {
        reject(new Error(`kcat could not read ${topic}: ${error.message} ${stderr}`));
        return;
      }
      const records = stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => {
          const record = JSON.parse(line) as KcatRecord;
          const pairs = record.headers ?? [];
          const headers: Record<string, string> = {};
          for (let i = 0; i + 1 < pairs.length; i += 2) headers[pairs[i]!] = pairs[i + 1]!;
          return { key: record.key ?? '', value: record.payload ?? '', headers, timestampMs: record.ts };
        });
      resolve(records);
    });
  });
}
