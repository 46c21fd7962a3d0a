/**
 * `npm run bench:event-loop`: the costliest inputs we could construct for the work a request does on
 * the query service's event loop, each within its input limits. For sandboxed SQL (64 KiB): the
 * parse time on the loop as it used to run, and the event loop's worst delay while the same text is
 * parsed in the worker thread. For redaction: 1000 rows, ordinary and hostile, and the loop's worst
 * delay while an answer body is encoded in one piece or in slices. These need no servers; then
 * bench/hostile-requests.ts sends issue 18's costliest requests to real query services (skip it with
 * `-- --no-service`).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseLql } from '../src/lql/index.ts';
import { luceneRegexpForContains } from '../src/planner/regex.ts';
import { encodeAnswer } from '../src/endpoints/answer-body.ts';
import { redactPii } from '../src/redaction.ts';
import { initSqlParser, parseSandboxQuery } from '../src/sql/index.ts';
import { SqlParserThread } from '../src/sql/parser-pool.ts';
import { percentile } from './latency.ts';
import { answerHelp } from '../shared/command-help.ts';

answerHelp(`Usage: npm run bench:event-loop [-- --no-service]
The costliest inputs for the work a request does on the query service's event loop (SQL parsing,
redaction, answer encoding), then the costliest requests sent to real query services.
  --no-service   skip the requests to query services (the rest needs no servers)`);

const RUNS = 5;
const LIMIT = 64 * 1024;
const options = { allowedTables: ['edge_logs', 'postgres_logs'], parameterNames: ['project'] };

/** `head`, then `unit` repeated as often as fits in 64 KiB with `tail`. */
function filled(head: string, unit: string, tail: string): string {
  const count = Math.floor((LIMIT - head.length - tail.length) / unit.length);
  return head + unit.repeat(count) + tail;
}

const SQL_CASES: Record<string, string> = {
  'IN list of strings': filled('select id from edge_logs where id in (', "'aaaa',", "'b')"),
  'IN list of numbers': filled('select id from edge_logs where timestamp in (', '1,', '2)'),
  'array literal': filled('select [', '1,', '1] from edge_logs'),
  'select items': filled('select ', 'id,', 'id from edge_logs'),
  'function calls': filled('select ', 'concat(id,id),', '1 from edge_logs'),
  CTEs: filled('with ', 'a as (select id from edge_logs), ', 'b as (select 1) select * from b'),
  'struct literals': filled('select [', 'struct(1 as a),', 'struct(1 as a)] from edge_logs'),
  'unnest joins': filled('select 1 from edge_logs t', ' cross join unnest(t.metadata) as m', ''),
  'string literal': `select '${'a'.repeat(LIMIT - 40)}' as x from edge_logs`,
  'AND chain': filled('select id from edge_logs where ', "id='a' and ", "id='b'"),
};

function timed(action: () => unknown): number {
  const started = performance.now();
  try {
    action();
  } catch {
    // refusals cost what they cost: that is what is measured
  }
  return performance.now() - started;
}

/** Worst event-loop delay (ms, beyond the 10 ms tick) while `work` runs. */
async function loopDelayDuring(work: () => Promise<unknown>): Promise<number> {
  const monitor = monitorEventLoopDelay({ resolution: 10 });
  monitor.enable();
  // its first firing only starts the clock: a block before it would go unseen
  await sleep(25);
  await work().catch(() => undefined);
  // the monitor's timer sees a block only when it next fires: let it fire once after the work
  await sleep(25);
  monitor.disable();
  return Math.max(0, monitor.max / 1e6 - 10);
}

await initSqlParser();
const thread = new SqlParserThread(60_000);
await thread.parse('select 1 from edge_logs', options);

console.log(`sandboxed SQL, 64 KiB of the costliest shapes, ${RUNS} runs each`);
console.log('| input | parse on the loop p50 / max | event-loop delay, parsed in the thread (max) | ratio |');
console.log('|---|---|---|---|');
for (const [name, text] of Object.entries(SQL_CASES)) {
  const onLoop = Array.from({ length: RUNS }, () => timed(() => parseSandboxQuery(text, options))).sort((a, b) => a - b);
  const delays: number[] = [];
  for (let run = 0; run < RUNS; run += 1) delays.push(await loopDelayDuring(() => thread.parse(text, options)));
  const worstDelay = Math.max(...delays);
  console.log(
    `| ${name} | ${percentile(onLoop, 50).toFixed(1)} / ${onLoop.at(-1)!.toFixed(1)} ms | ${worstDelay.toFixed(1)} ms | ${(onLoop.at(-1)! / Math.max(worstDelay, 0.1)).toFixed(0)}x |`,
  );
}
await thread.close();

const ordinaryRow = (i: number) => ({
  id: `e${i}`,
  timestamp: 1_704_067_200_000_000 + i,
  event_message: `GET | 200 | 203.0.113.${i % 256} | 2001:db8::${(i % 65535).toString(16)} | https://abc.supabase.co/rest/v1/t?select=*&limit=10`,
  metadata: [
    {
      request: [
        {
          url: 'https://abc.supabase.co/rest/v1/t?ip=198%2E51%2E100%2E14',
          headers: [{ x_forwarded_for: '198.51.100.7, 10.0.0.1', cf_ray: '8f1d2c3b4a5e6f70-FRA' }],
        },
      ],
      response: [{ status_code: 200 }],
    },
  ],
});
const hostileText = ['1.'.repeat(30_000), ':'.repeat(60_000), 'a:'.repeat(30_000), 'f'.repeat(60_000), '%3A'.repeat(20_000), '1:2:3:4:5:6:7:'.repeat(4000)];
const hostileRow = (i: number) => ({
  id: `h${i}`,
  event_message: hostileText[i % hostileText.length]!,
  metadata: [{ [hostileText[(i + 1) % hostileText.length]!.slice(0, 1000)]: 'key' }],
});
const rowsOf = (make: (i: number) => unknown) => Array.from({ length: 1000 }, (_, i) => make(i));

console.log('\nredaction of 1000 rows');
console.log('| rows | JSON size | redactPii p50 / max | JSON.stringify of the same rows | ratio |');
console.log('|---|---|---|---|---|');
for (const [name, rows] of [
  ['ordinary log rows', rowsOf(ordinaryRow)],
  ['hostile rows (60 KB strings of dots, colons, hex, escapes)', rowsOf(hostileRow)],
] as const) {
  const redact = Array.from({ length: RUNS }, () => timed(() => redactPii(rows))).sort((a, b) => a - b);
  const serialise = Array.from({ length: RUNS }, () => timed(() => JSON.stringify(rows))).sort((a, b) => a - b);
  const size = JSON.stringify(rows).length;
  console.log(
    `| ${name} | ${(size / 1e6).toFixed(1)} MB | ${percentile(redact, 50).toFixed(1)} / ${redact.at(-1)!.toFixed(1)} ms | ${percentile(serialise, 50).toFixed(1)} ms | ${(percentile(redact, 50) / percentile(serialise, 50)).toFixed(1)}x |`,
  );
}

console.log("\nanswer bodies of 1000 rows, redacted: the event loop's worst delay while one is encoded");
console.log(
  "| rows | encoded in one piece (redactPii, then JSON.stringify) | encoded in slices (encodeAnswer), worst delay / total | JSON.parse of the same rows (the store client's parse, one piece) |",
);
console.log('|---|---|---|---|');
for (const [name, rows] of [
  ['ordinary log rows', rowsOf(ordinaryRow)],
  ['hostile rows', rowsOf(hostileRow)],
] as const) {
  const whole = await loopDelayDuring(async () => JSON.stringify(redactPii(rows)));
  let total = 0;
  const sliced = await loopDelayDuring(async () => {
    const started = performance.now();
    await encodeAnswer(rows, { redact: true });
    total = performance.now() - started;
  });
  const text = JSON.stringify({ hits: { hits: rows.map((row) => ({ _source: row })) } });
  const parse = timed(() => JSON.parse(text));
  console.log(`| ${name} | ${whole.toFixed(0)} ms | ${sliced.toFixed(0)} / ${total.toFixed(0)} ms | ${parse.toFixed(0)} ms |`);
}

console.log('\nother input parsed on the loop, at its limits');
console.log('| input | time |');
console.log('|---|---|');
const lql = Array.from({ length: 100 }, (_, i) => `m.field${i}:~"^/rest/v1/[a-z]+(x|y)*\\d{3}"`).join(' ');
console.log(`| LQL, 100 regex clauses (${lql.length} chars) | ${timed(() => parseLql(lql)).toFixed(1)} ms |`);
console.log(`| project pattern of 1 MB (refused by length) | ${timed(() => luceneRegexpForContains('('.repeat(1_000_000), 'project')).toFixed(2)} ms |`);
console.log(
  `| project pattern of 1000 chars, 32 nested groups | ${timed(() => luceneRegexpForContains('('.repeat(32) + 'a|b'.repeat(300) + ')'.repeat(32), 'project')).toFixed(2)} ms |`,
);

if (!process.argv.includes('--no-service')) await import('./hostile-requests.ts');
