import type { Plan, Scan } from '../planner/plan.ts';
import { search, type StoreOptions } from './elasticsearch.ts';
import { logRows } from './rows/logs.ts';
import { usageRows } from './rows/usage.ts';

export type ExecutorOptions = StoreOptions;

/** Runs a plan: its scans on Elasticsearch, then (for sandboxed queries) the residual query; returns the answer's rows. */
export async function executePlan(plan: Plan, options: ExecutorOptions): Promise<unknown[]> {
  const answer = plan.answer;
  if (answer.kind === 'residual') throw new Error('residual queries need the embedded engine, which this executor does not have yet');
  const scan = plan.scans.find((candidate) => candidate.table === answer.table);
  if (!scan) throw new Error(`plan answers from ${answer.table}, which none of its scans produces`);
  const rows = answer.format === 'log_rows' ? await logRowsOf(scan, options) : await usageRowsOf(scan, options);
  return rows.slice(0, plan.rowCap);
}

async function logRowsOf(scan: Scan, options: ExecutorOptions): Promise<unknown[]> {
  if (scan.kind !== 'events' || scan.take.kind !== 'limit') throw new Error(`log rows come from a limited event scan, not ${scan.kind}`);
  const response = await search(scan.search, options);
  return logRows(response.hits.hits);
}

async function usageRowsOf(scan: Scan, options: ExecutorOptions): Promise<unknown[]> {
  if (scan.kind !== 'request_counts') throw new Error(`usage rows come from a request-count scan, not ${scan.kind}`);
  const response = await search(scan.search, options);
  return usageRows(response.aggregations as Record<string, unknown> | undefined, scan.countColumns);
}
