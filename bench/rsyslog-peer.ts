import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { SourceName } from '../shared/sources.ts';
import { cpuSeconds, peakRssBytes, sleep } from './worker-process.ts';

/**
 * The peer of the ingest benchmark: rsyslog from Debian's packages, reading the same topics with
 * imkafka (a consumer group of its own) and writing with omelasticsearch in bulk mode, run as a
 * plain process with a configuration file in a temporary folder (not the system service).
 *
 * - `raw`: each Kafka message stored as it is (the producer's JSON), Elasticsearch picks the ids;
 * - `same-shape`: the message parsed (mmjsonparse) and re-built as a document shaped like ours:
 *   `id`, `timestamp`, `event_message`, `project` (when present), `metadata`, into the daily
 *   partition of the event's own timestamp, with an explicit `_id`. rsyslog cannot see the Kafka
 *   position, so its id is a 64-bit hash of the message (fmhash), not ours; `shape` and folding
 *   of unknown fields are not done.
 *
 * rsyslog commits Kafka offsets on its own timer, before Elasticsearch has accepted the events:
 * it may lose events on a crash, which our worker may not.
 */
export type PeerMode = 'raw' | 'same-shape';

export const RSYSLOG_INSTALL = 'apt-get install -y rsyslog rsyslog-kafka rsyslog-elasticsearch';
const RSYSLOGD = '/usr/sbin/rsyslogd';
const MODULES = ['imkafka', 'omelasticsearch', 'mmjsonparse', 'fmhash'];

/** Why the peer cannot run here, or undefined when it can. */
export function rsyslogMissing(elasticsearchUrl: string): string | undefined {
  const version = spawnSync(RSYSLOGD, ['-v'], { encoding: 'utf8' });
  if (version.error || version.status !== 0) return `rsyslog is not installed (${RSYSLOGD} not found); install it with: ${RSYSLOG_INSTALL}`;
  // Debian keeps the modules under the multiarch folder (/usr/lib/x86_64-linux-gnu/rsyslog)
  const folders = ['/usr/lib/rsyslog', ...readdirSync('/usr/lib').map((entry) => path.join('/usr/lib', entry, 'rsyslog'))].filter((folder) =>
    existsSync(folder),
  );
  const missing = MODULES.filter((name) => !folders.some((folder) => existsSync(path.join(folder, `${name}.so`))));
  if (missing.length > 0) return `rsyslog modules missing (${missing.join(', ')}); install them with: ${RSYSLOG_INSTALL}`;
  const url = new URL(elasticsearchUrl);
  if (url.protocol !== 'http:' || url.username) return 'the peer runs only against a plaintext Elasticsearch without credentials';
  return undefined;
}

export function rsyslogVersion(): string | undefined {
  const version = spawnSync(RSYSLOGD, ['-v'], { encoding: 'utf8' });
  return /rsyslogd\s+(\S+)/.exec(version.stdout ?? '')?.[1];
}

export interface PeerSettings {
  mode: PeerMode;
  brokers: string[];
  elasticsearchUrl: string;
  topics: { source: SourceName; topic: string }[];
  indexPrefix: string;
  groupId: string;
  /** Events per bulk request and worker threads (each sends its own bulks): the queue's tuning. */
  batchSize: number;
  workerThreads: number;
}

/** The rsyslog configuration of one peer run; pure, so it can be read and tested apart. */
export function rsyslogConfig(settings: PeerSettings, workDirectory: string): string {
  const url = new URL(settings.elasticsearchUrl);
  const brokers = settings.brokers.map((broker) => `"${broker}"`).join(', ');
  const shape = settings.mode === 'same-shape';
  const lines = [
    `global(workDirectory="${workDirectory}" maxMessageSize="1m")`,
    'module(load="imkafka")',
    'module(load="omelasticsearch")',
    ...(shape ? ['module(load="mmjsonparse")', 'module(load="fmhash")'] : []),
    // the main queue runs the rulesets; the action queue feeds omelasticsearch's bulk requests
    `main_queue(queue.type="LinkedList" queue.size="200000" queue.dequeueBatchSize="${settings.batchSize}" queue.workerThreads="2")`,
    'template(name="raw_doc" type="string" string="%msg%")',
    'template(name="shape_doc" type="string" string="%$.doc%")',
    'template(name="doc_id" type="string" string="%$.doc!id%")',
    `template(name="raw_index" type="string" string="${settings.indexPrefix}%$.source%")`,
    `template(name="shape_index" type="string" string="${settings.indexPrefix}%$.source%-%$.day%")`,
    'ruleset(name="to_elasticsearch") {',
  ];
  const action = (template: string, index: string, extra: string) =>
    `  action(type="omelasticsearch" server="${url.hostname}" serverport="${url.port || '9200'}" esVersion.major="8" template="${template}" searchIndex="${index}" dynSearchIndex="on" ` +
    `bulkmode="on" maxbytes="10m" ${extra}queue.type="LinkedList" queue.size="200000" queue.dequeueBatchSize="${settings.batchSize}" queue.workerThreads="${settings.workerThreads}" ` +
    `action.resumeRetryCount="-1" errorFile="${path.join(workDirectory, 'errors.json')}")`;
  if (shape) {
    lines.push(
      '  action(type="mmjsonparse" cookie="")',
      '  if $parsesuccess == "OK" then {',
      '    set $.doc!id = hash64($msg);',
      '    set $.doc!timestamp = $!timestamp;',
      '    set $.doc!event_message = $!event_message;',
      '    if $!project != "" then set $.doc!project = $!project;',
      '    set $.doc!metadata = $!metadata;',
      '    set $.day = replace(substring($!timestamp, 0, 10), "-", ".");',
      `  ${action('shape_doc', 'shape_index', 'bulkid="doc_id" dynbulkid="on" writeoperation="index" ')}`,
      '  }',
    );
  } else {
    lines.push(action('raw_doc', 'raw_index', ''));
  }
  lines.push('}');
  for (const { source, topic } of settings.topics) {
    lines.push(
      `ruleset(name="from_${source}") {`,
      `  set $.source = "${source}";`,
      '  call to_elasticsearch',
      '}',
      `input(type="imkafka" topic="${topic}" broker=[${brokers}] consumergroup="${settings.groupId}" ruleset="from_${source}" ` +
        'confParam=["auto.offset.reset=smallest", "fetch.message.max.bytes=1048576", "enable.partition.eof=false"])',
    );
  }
  return `${lines.join('\n')}\n`;
}

export interface PeerRun {
  /** Process id, for CPU and memory readings while it runs. */
  pid: number;
  cpuSeconds(): number;
  peakRssBytes(): number;
  /** Lines rsyslog wrote about failed requests, if any (its error file). */
  errors(): string;
  stop(): Promise<void>;
}

/** Starts rsyslogd in the foreground with the configuration above, in a temporary folder removed by stop(). */
export async function startRsyslogPeer(settings: PeerSettings): Promise<PeerRun> {
  const folder = mkdtempSync(path.join(os.tmpdir(), `bench-rsyslog-${settings.mode}-`));
  const configFile = path.join(folder, 'rsyslog.conf');
  writeFileSync(configFile, rsyslogConfig(settings, folder));
  const check = spawnSync(RSYSLOGD, ['-N1', '-f', configFile], { encoding: 'utf8' });
  if (check.status !== 0) {
    rmSync(folder, { recursive: true, force: true });
    throw new Error(`rsyslog refused the peer configuration: ${check.stderr || check.stdout}`);
  }
  let output = '';
  const child = spawn(RSYSLOGD, ['-n', '-f', configFile, '-i', path.join(folder, 'rsyslogd.pid')], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await sleep(200);
  if (child.exitCode !== null) throw new Error(`rsyslogd exited with ${child.exitCode}: ${output}`);
  const pid = child.pid!;
  return {
    pid,
    cpuSeconds: () => cpuSeconds(pid),
    peakRssBytes: () => peakRssBytes(pid),
    errors: () => {
      try {
        return readFileSync(path.join(folder, 'errors.json'), 'utf8') + output;
      } catch {
        return output;
      }
    },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(killer);
      }
      rmSync(folder, { recursive: true, force: true });
    },
  };
}
