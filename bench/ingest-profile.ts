import type { readProfile } from './cpu-profile.ts';

type CpuProfile = ReturnType<typeof readProfile>;
type Frame = CpuProfile['nodes'][number]['callFrame'];

/** The groups the worker's CPU is told in, in the order they are printed. */
export const INGEST_PROFILE_GROUPS = [
  'kafkajs: record decoding',
  'kafkajs: fetch, group, network',
  'decompression (codecs, deferred stand-ins)',
  'ours: decode and normalise (JSON.parse)',
  'ours: bulk entries and bodies (JSON.stringify)',
  'ours: batches, pipeline, writer',
  'Elasticsearch client',
  'node network and streams',
  'metrics, logs',
  'garbage collector',
  'other (V8, node, start-up)',
] as const;

export type IngestProfileGroup = (typeof INGEST_PROFILE_GROUPS)[number];

const OUR_DECODING = /\/(ingest\/(event|event-fields|event-id|event-partition|canonical-event)|shared\/(event-shape|event-timestamp|stored-timestamp))\.[jt]s$/;
const OUR_BULK = /\/ingest\/(bulk|bulk-coalescer)\.[jt]s$/;
const OUR_FLOW = /\/ingest\/(batch|writer|write-pipeline|offset-commits|dead-letter|dead-letter-transactions|decompression-budget)\.[jt]s$/;

/** The group of a frame; undefined for builtins and Buffer methods, which take their caller's group. */
function groupOfUrl(url: string): IngestProfileGroup | undefined {
  if (url === '' || url === 'node:buffer' || url === 'node:internal/buffer') return undefined;
  // ingest/record-batches.ts decodes record batches in kafkajs's place
  if (url.includes('/node_modules/kafkajs/src/protocol/') || /\/ingest\/record-batches\.[jt]s$/.test(url)) return 'kafkajs: record decoding';
  if (url.includes('/node_modules/kafkajs/')) return 'kafkajs: fetch, group, network';
  if (
    /\/node_modules\/(zstddec|lz4-napi|snappy)\//.test(url) ||
    url === 'node:zlib' ||
    /\/ingest\/(codecs|zstd|deferred-batch|undecodable-batch)\.[jt]s$/.test(url)
  )
    return 'decompression (codecs, deferred stand-ins)';
  if (/\/node_modules\/@elastic\//.test(url)) return 'Elasticsearch client';
  if (/\/node_modules\/(undici|prom-client|pino|pino-std-serializers|sonic-boom)\//.test(url))
    return url.includes('/undici/') ? 'node network and streams' : 'metrics, logs';
  if (/^node:(net|http|_http_\w+|stream|internal\/streams\/\w+|internal\/stream_base_commons|events)$/.test(url)) return 'node network and streams';
  if (OUR_DECODING.test(url)) return 'ours: decode and normalise (JSON.parse)';
  if (OUR_BULK.test(url)) return 'ours: bulk entries and bodies (JSON.stringify)';
  if (OUR_FLOW.test(url) || /\/ingest\/metrics\.[jt]s$/.test(url)) return 'ours: batches, pipeline, writer';
  return 'other (V8, node, start-up)';
}

function groupOfFrame(frame: Frame): IngestProfileGroup | undefined {
  if (frame.functionName === '(garbage collector)') return 'garbage collector';
  if (frame.functionName === '(program)' || frame.functionName === '(root)') return 'other (V8, node, start-up)';
  return groupOfUrl(frame.url);
}

/**
 * Self time of a worker's profile (node --cpu-prof) by group, in microseconds, between `fromMicros`
 * and `toMicros` on the monotonic clock V8 stamps samples with (process.hrtime's, the same in every
 * process). A builtin (a Buffer write, a Map lookup) counts in its nearest caller's group; V8
 * samples JSON.parse and JSON.stringify as their caller's own time (decodeMessage, bulkEntry). Idle
 * time is left out.
 */
export function ingestProfileGroups(profile: CpuProfile, fromMicros: number, toMicros: number): Map<IngestProfileGroup, number> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const groupOfNode = new Map<number, IngestProfileGroup>();
  const groupOf = (id: number): IngestProfileGroup => {
    const known = groupOfNode.get(id);
    if (known !== undefined) return known;
    const leaf = groupOfFrame(byId.get(id)!.callFrame);
    const above = parent.get(id);
    const group = leaf ?? (above === undefined ? 'other (V8, node, start-up)' : groupOf(above));
    groupOfNode.set(id, group);
    return group;
  };
  const groups = new Map<IngestProfileGroup, number>(INGEST_PROFILE_GROUPS.map((group) => [group, 0]));
  let at = profile.startTime;
  for (let index = 0; index < profile.samples.length; index += 1) {
    at += profile.timeDeltas[index]!;
    // a sample stands for the time until the next one
    const micros = profile.timeDeltas[index + 1] ?? 0;
    if (at < fromMicros || at > toMicros) continue;
    const id = profile.samples[index]!;
    if (byId.get(id)!.callFrame.functionName === '(idle)') continue;
    const group = groupOf(id);
    groups.set(group, groups.get(group)! + micros);
  }
  return groups;
}

/** Markdown rows: each group's CPU seconds per 100k events and share of the busy time. */
export function ingestProfileRows(groups: Map<IngestProfileGroup, number>, events: number): string[] {
  const busy = [...groups.values()].reduce((sum, micros) => sum + micros, 0);
  const per100k = (micros: number) => ((micros / 1e6 / events) * 100_000).toFixed(2);
  return [
    '| group (self time) | CPU s per 100k | share |',
    '|---|---|---|',
    ...[...groups].map(([group, micros]) => `| ${group} | ${per100k(micros)} | ${busy > 0 ? ((100 * micros) / busy).toFixed(0) : 0}% |`),
    `| busy under the profiler | ${per100k(busy)} | 100% |`,
  ];
}
