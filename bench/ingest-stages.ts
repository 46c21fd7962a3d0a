import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Client } from '@elastic/elasticsearch';
import { Serializer } from '@elastic/transport';
import { repositoryRoot } from '../shared/config.ts';
import { demoEvents } from '../scripts/demo-events.ts';
import { answerHelp } from '../shared/command-help.ts';

answerHelp(`Usage: npx tsx bench/ingest-stages.ts [--events 100000] [--codec none|gzip|snappy|lz4|zstd] [--rounds 3] [--baseline <checkout>]
The ingest worker's CPU per stage (decoding, documents, bulk body, client), without Kafka or Elasticsearch.`);

/**
 * `npx tsx bench/ingest-stages.ts`: the ingest worker's CPU per stage, without Kafka or Elasticsearch.
 * N demo events become Kafka record batches (kafkajs's own encoder, in the codec given), then go
 * through the worker's code stage by stage: kafkajs decoding the batches (decompression included; with
 * the worker's record batch decoder, ingest/record-batches.ts, where the checkout has it),
 * decoding each message into its stored document (JSON.parse alone is shown for reference), the
 * bulk coalescer building the NDJSON body, and the Elasticsearch client sending it to a stub server
 * in another process (which answers every item 201), so only the worker's side is counted.
 * Prints CPU seconds per 100k events per stage. `--baseline <checkout>` runs the same stages on
 * another checkout's worker code, side by side; `--events N` (default 100,000), `--codec
 * none|gzip|snappy|lz4|zstd`, `--rounds R` (best of R, default 3).
 *
 * Committing offsets is one request per chunk (up to INGEST_BULK_MAX_EVENTS events) and is not measured.
 */
const { values: options } = parseArgs({
  options: {
    events: { type: 'string', default: '100000' },
    codec: { type: 'string', default: 'none' },
    rounds: { type: 'string', default: '3' },
    baseline: { type: 'string' },
    root: { type: 'string' },
    stub: { type: 'boolean', default: false },
  },
});

const STAGES = ['records', 'parse', 'document', 'body', 'request'] as const;
type Stage = (typeof STAGES)[number];
const STAGE_NAMES: Record<Stage, string> = {
  records: 'fetch: kafkajs decode + decompress',
  parse: '(reference: JSON.parse alone)',
  document: 'decode message -> stored document',
  body: 'NDJSON bulk body',
  request: 'bulk request (client side)',
};
const BATCH_RECORDS = 500;
const BULK_EVENTS = 5000;
const say = (line: string) => process.stderr.write(`ingest-stages: ${line}\n`);

if (options.stub) runStub();
else if (options.root) void measureChild(options.root).catch(fail);
else void main().catch(fail);

function fail(error: unknown): void {
  console.error(error);
  process.exit(1);
}

/** Answers every bulk request with one 201 per action line (the worker's filter_path shape). */
function runStub(): void {
  const server = createServer((request, response) => {
    let lines = 0;
    request.on('data', (data: Buffer) => {
      for (let at = data.indexOf(10); at !== -1; at = data.indexOf(10, at + 1)) lines += 1;
    });
    request.on('end', () => {
      const items = new Array(Math.floor(lines / 2)).fill('{"index":{"status":201}}').join(',');
      response.writeHead(200, { 'content-type': 'application/json', 'x-elastic-product': 'Elasticsearch' });
      response.end(`{"errors":false,"items":[${items}]}`);
    });
  });
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as { port: number }).port }));
}

async function main(): Promise<void> {
  const roots = [{ name: 'this checkout', root: repositoryRoot }, ...(options.baseline ? [{ name: 'baseline', root: path.resolve(options.baseline) }] : [])];
  const results: { name: string; cpu: Record<Stage, number> }[] = [];
  for (const { name, root } of roots) {
    say(`measuring ${name} (${root})`);
    results.push({ name, cpu: await runChild(root) });
  }
  const events = Number(options.events);
  const per100k = (seconds: number) => ((seconds * 100_000) / events).toFixed(3);
  const header = ['stage (CPU s per 100k events)', ...results.map((result) => result.name), ...(results.length > 1 ? ['ratio'] : [])];
  const rows = STAGES.map((stage) => [
    STAGE_NAMES[stage],
    ...results.map((result) => per100k(result.cpu[stage])),
    ...(results.length > 1 ? [ratio(results[0]!.cpu[stage], results[1]!.cpu[stage])] : []),
  ]);
  const total = (cpu: Record<Stage, number>) => STAGES.filter((stage) => stage !== 'parse').reduce((sum, stage) => sum + cpu[stage], 0);
  rows.push([
    'total (without the reference)',
    ...results.map((result) => per100k(total(result.cpu))),
    ...(results.length > 1 ? [ratio(total(results[0]!.cpu), total(results[1]!.cpu))] : []),
  ]);
  const widths = header.map((_, column) => Math.max(...[header, ...rows].map((row) => row[column]!.length)));
  console.log(`${events} demo events, codec ${options.codec}, best of ${options.rounds} rounds`);
  for (const row of [header, ...rows])
    console.log(row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  '));
}

function ratio(after: number, before: number): string {
  return before > 0 ? `${(after / before).toFixed(2)}x` : '-';
}

function runChild(root: string): Promise<Record<Stage, number>> {
  const child = fork(
    path.join(repositoryRoot, 'bench', 'ingest-stages.ts'),
    ['--root', root, '--events', options.events!, '--codec', options.codec!, '--rounds', options.rounds!],
    {
      execArgv: ['--import', 'tsx', '--expose-gc'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  return new Promise((resolve, reject) => {
    child.on('message', (message) => resolve(message as Record<Stage, number>));
    child.on('exit', (code) => reject(new Error(`the measuring process exited with ${code}`)));
  });
}

function cpuSeconds(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
}

/** The stages on one checkout's worker code; sends CPU seconds per stage (best round each) to the parent. */
async function measureChild(root: string): Promise<void> {
  const events = Number(options.events);
  const rounds = Number(options.rounds);
  const codecName = options.codec!;
  const load = (file: string) => import(pathToFileURL(path.join(root, file)).href);
  const [codecs, event, fields, partition, metricsModule, coalescerModule] = await Promise.all([
    load('ingest/codecs.ts'),
    load('ingest/event.ts'),
    load('ingest/event-fields.ts'),
    load('ingest/event-partition.ts'),
    load('ingest/metrics.ts'),
    load('ingest/bulk-coalescer.ts'),
  ]);
  const batchModule = await load('ingest/batch.ts');
  // the worker's own record batch decoder, where the checkout has one, takes kafkajs's place before it is required
  if (existsSync(path.join(root, 'ingest', 'record-batches.ts'))) await load('ingest/record-batches.ts');
  const requireFromRoot = createRequire(path.join(root, 'package.json'));
  const { RecordBatch } = requireFromRoot('kafkajs/src/protocol/recordBatch/v0');
  const Record = requireFromRoot('kafkajs/src/protocol/recordBatch/record/v0');
  const decodeBatch = requireFromRoot('kafkajs/src/protocol/recordBatch/v0/decoder');
  const Decoder = requireFromRoot('kafkajs/src/protocol/decoder');
  const { Types } = requireFromRoot('kafkajs/src/protocol/message/compression');
  const compression = { none: Types.None, gzip: Types.GZIP, snappy: Types.Snappy, lz4: Types.LZ4, zstd: Types.ZSTD }[codecName];
  if (compression === undefined) throw new Error(`--codec: unknown codec "${codecName}"`);
  const codecTable = requireFromRoot('kafkajs').CompressionCodecs as Record<number, () => { compress(encoder: { buffer: Buffer }): Promise<Buffer> }>;
  // our zstd codec only decompresses: the zstd command line writes the bench's zstd batches
  if (codecName === 'zstd')
    codecTable[Types.ZSTD] = () => ({
      ...codecs.kafkaCodec('zstd'),
      compress: async (encoder) => execFileSync('zstd', ['-q', '-c', '-3'], { input: encoder.buffer }),
    });

  const topic = 'edge_logs';
  const from = new Date('2026-11-20T00:00:00Z');
  const values: Buffer[] = [];
  for (const demo of demoEvents({ count: events, from, to: new Date('2026-11-21T00:00:00Z'), projects: ['default'], seed: 7 }))
    values.push(Buffer.from(JSON.stringify(demo.event)));
  const batches: Buffer[] = [];
  for (let start = 0; start < values.length; start += BATCH_RECORDS) {
    const records = values
      .slice(start, start + BATCH_RECORDS)
      .map((value, index) => Record({ offsetDelta: index, timestampDelta: 0, key: null, value, headers: {} }));
    const encoded = await RecordBatch({ compression, firstOffset: { toString: () => String(start) } as never, records, lastOffsetDelta: records.length - 1 });
    batches.push(encoded.buffer);
  }
  const inputBytes = values.reduce((sum, value) => sum + value.length, 0);
  const batchBytes = batches.reduce((sum, batch) => sum + batch.length, 0);
  say(
    `${root}: ${events} events, ${(inputBytes / events).toFixed(0)} bytes each, ${batches.length} record batches of ${(batchBytes / 1e6).toFixed(1)} MB (${codecName})`,
  );

  const fieldNames = fields.DEFAULT_EVENT_FIELD_NAMES;
  const partitioning = partition.eventPartitioning('bench-', topic, 'daily', 3650);
  const metrics = metricsModule.createIngestMetrics();
  const stub = await startStub();
  const client = new Client({ node: `http://127.0.0.1:${stub.port}` });
  const best = {} as Record<Stage, number>;
  const time = async (stage: Stage, run: () => Promise<unknown> | unknown) => {
    (globalThis as { gc?: () => void }).gc?.();
    const start = cpuSeconds();
    const result = await run();
    const spent = cpuSeconds() - start;
    best[stage] = Math.min(best[stage] ?? Infinity, spent);
    return result;
  };
  try {
    for (let round = 1; round <= rounds; round += 1) {
      say(`${path.basename(root)}: round ${round}/${rounds}`);
      const messages = (await time('records', async () => {
        const all: unknown[] = [];
        for (const batch of batches) all.push(...(await decodeBatch(new Decoder(batch))).records);
        return all;
      })) as { offset: string; timestamp: string; value: Buffer; key: Buffer | null; headers: Record<string, unknown> }[];
      await time('parse', () => {
        for (const message of messages) JSON.parse(message.value.toString('utf8'));
      });
      const chunks = (await time('document', () => decodeChunks(batchModule, event, messages, topic, partitioning, fieldNames, metrics))) as unknown[];
      const bodies: (string | Buffer)[] = [];
      const serializer = new Serializer();
      const capture = {
        bulk: (params: { operations?: unknown[]; body?: string | Buffer }) => {
          bodies.push(params.body ?? serializer.ndserialize(params.operations as Record<string, unknown>[]));
          const count = params.operations ? params.operations.length / 2 : BULK_EVENTS;
          return Promise.resolve({ errors: false, items: new Array(count).fill({ index: { status: 201 } }) });
        },
      };
      await time('body', () => writeChunks(coalescerModule, capture, metrics, partitioning, chunks));
      await time('request', async () => {
        for (const body of bodies) await client.bulk({ body, refresh: false, filter_path: 'errors,items.*.status,items.*.error' } as never);
      });
    }
  } finally {
    await client.close();
    stub.child.kill();
  }
  process.send!(best);
  process.disconnect();
}

/** The stored documents, in chunks of BULK_EVENTS, by the root's own decoding (decodeChunk when exported). */
function decodeChunks(
  batchModule: Record<string, unknown>,
  event: Record<string, unknown>,
  messages: { offset: string; timestamp: string; value: Buffer; key: Buffer | null; headers: Record<string, unknown> }[],
  topic: string,
  partitioning: unknown,
  fieldNames: unknown,
  metrics: unknown,
): unknown[] {
  const chunks: unknown[] = [];
  for (let start = 0; start < messages.length; start += BULK_EVENTS) {
    const chunk = messages.slice(start, start + BULK_EVENTS);
    if (typeof batchModule.decodeChunk === 'function') {
      const route = { source: topic, partitioning, deadLetterTopic: `${topic}.dead`, fieldNames };
      chunks.push(
        batchModule.decodeChunk(chunk, topic, 0, route, { metrics, settings: { maxMessageBytes: 1024 * 1024 }, expiredEvents: 'keep', now: () => Date.now() })
          .events,
      );
      continue;
    }
    // before decodeChunk was exported: what it did for each message
    const decodeMessage = event.decodeMessage as (record: unknown, max: number, names: unknown) => { ok: boolean; event?: unknown }[];
    const pending: { event: unknown; bytes: number }[] = [];
    for (const message of chunk) {
      const decoded = decodeMessage({ topic, partition: 0, ...message }, 1024 * 1024, fieldNames);
      for (const result of decoded) if (result.ok) pending.push({ event: result.event, bytes: message.value.length / decoded.length + 64 });
    }
    chunks.push(pending);
  }
  return chunks;
}

/** Each chunk through the root's bulk coalescer, one at a time, as one partition's writes would go. */
async function writeChunks(
  coalescerModule: Record<string, unknown>,
  client: unknown,
  metrics: unknown,
  partitioning: { indexOf(event: unknown): string },
  chunks: unknown[],
): Promise<void> {
  const Coalescer = coalescerModule.BulkCoalescer as new (...args: unknown[]) => { write(...args: unknown[]): Promise<unknown> };
  const coalescer = new Coalescer(client, metrics, { maxBytes: 64 * 1024 * 1024, maxEvents: BULK_EVENTS, lingerMs: 0, maxInFlight: 1 });
  // before entries: write(indexOf, events, approximate bytes)
  for (const chunk of chunks as { entry?: unknown; event: unknown; bytes: number }[][]) {
    if (chunk[0]?.entry !== undefined) {
      await coalescer.write(chunk.map((item) => item.entry));
    } else {
      await coalescer.write(
        partitioning.indexOf,
        chunk.map((item) => item.event),
        chunk.reduce((sum, item) => sum + item.bytes, 0),
      );
    }
  }
}

function startStub(): Promise<{ port: number; child: ChildProcess }> {
  const child = fork(path.join(repositoryRoot, 'bench', 'ingest-stages.ts'), ['--stub'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve) => child.once('message', (message) => resolve({ port: (message as { port: number }).port, child })));
}
